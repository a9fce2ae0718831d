use super::*;

type Expected<'a> = Result<&'a [(Option<&'a str>, &'a str)], Unreadable>;

fn check(body: &str, expected: Expected<'_>) {
    let got = parts(body.as_bytes(), "XyZ").map(|parts| {
        parts.iter().map(|p| (p.name.clone(), String::from_utf8(p.value.to_vec()).unwrap())).collect::<Vec<_>>()
    });
    let expected =
        expected.map(|parts| parts.iter().map(|(n, v)| (n.map(str::to_owned), (*v).to_owned())).collect::<Vec<_>>());
    assert_eq!(got, expected, "body {body:?}");
}

#[test]
fn well_formed_bodies() {
    let cases: &[(&str, Expected<'_>)] = &[
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@b.example\r\n--XyZ--\r\n",
            Ok(&[(Some("email"), "a@b.example")]),
        ),
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nann\r\n\
             --XyZ\r\ncontent-disposition: FORM-DATA; NAME=email\r\nContent-Type: text/plain\r\n\r\na@b.example\r\n--XyZ--",
            Ok(&[(Some("user"), "ann"), (Some("email"), "a@b.example")]),
        ),
        // Preamble, transport padding after an open delimiter, a line break after the close.
        (
            "preamble\r\n--XyZ  \r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n--XyZ--\r\n",
            Ok(&[(Some("email"), "x@y.example")]),
        ),
        // Bare LF line ends.
        (
            "--XyZ\nContent-Disposition: form-data; name=\"email\"\n\nx@y.example\n--XyZ--\n",
            Ok(&[(Some("email"), "x@y.example")]),
        ),
        // Quoted names with ';' and escapes; a file part; an empty value.
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"a;b\\\"c\"; filename=\"f;.txt\"\r\n\r\nfile\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n--XyZ--",
            Ok(&[(Some("a;b\"c"), "file"), (Some("empty"), "")]),
        ),
        // A preamble without the boundary is skipped.
        (
            "This is a preamble.\r\n--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--",
            Ok(&[(Some("email"), "v")]),
        ),
        // Binary content: bare CRs, bare LFs, NULs, CRLFs.
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\
             \r\u{0}\rx\r\r\n\n\r\n\r\r\u{0}\r\n--XyZ--\r\n",
            Ok(&[(Some("f"), "\r\u{0}\rx\r\r\n\n\r\n\r\r\u{0}")]),
        ),
        // No Content-Disposition.
        ("--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--", Ok(&[(None, "v")])),
        // Empty part whose blank line runs straight into the delimiter; no parts at all.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n--XyZ--", Ok(&[(Some("e"), "")])),
        ("--XyZ--", Ok(&[])),
        // A delimiter with a different boundary is content.
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n--Other\r\n--XyZ--",
            Ok(&[(Some("a"), "--Other")]),
        ),
        // Folded header, RFC 8187 ext-value (also beside an equal plain name).
        (
            "--XyZ\r\nContent-Disposition: form-data;\r\n name=\"email\"\r\n\r\nv\r\n--XyZ--",
            Ok(&[(Some("email"), "v")]),
        ),
        (
            "--XyZ\r\nContent-Disposition: form-data; name*=UTF-8''%65mail\r\n\r\nv\r\n--XyZ--",
            Ok(&[(Some("email"), "v")]),
        ),
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"email\"; name*=utf-8'en'email\r\n\r\nv\r\n--XyZ--",
            Ok(&[(Some("email"), "v")]),
        ),
        (
            "--XyZ\r\nContent-Disposition: form-data; name*=iso-8859-1''caf%E9\r\n\r\nv\r\n--XyZ--",
            Ok(&[(Some("café"), "v")]),
        ),
    ];
    for (body, expected) in cases {
        check(body, *expected);
    }
}

/// Issue 30: Django finds the delimiter anywhere in a line and reads past the close
/// delimiter; formidable reads parameters with regular expressions.
#[test]
fn framing_some_parser_reads_otherwise_is_ambiguous() {
    let disposition = "Content-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n";
    let cases = [
        // The boundary in mid-line (in content, in a preamble line), or after a non-break byte.
        "--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nx--XyZ\r\nline2\r\n--XyZ--".to_owned(),
        "--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nx --XyZ\r\n--XyZ--".to_owned(),
        format!("--XyZ junk\r\n--XyZ\r\n{disposition}--XyZ--"),
        format!("--XyZx\rjunk --XyZ-x\n--XyZ\r\n{disposition}--XyZ--"),
        format!("--XyZ junk\r\n{disposition}--XyZ--"),
        // Anything after the close delimiter but its line break.
        format!("--XyZ\r\n{disposition}--XyZ--\r\nepilogue"),
        format!("--XyZ\r\n{disposition}--XyZ-- \r\n"),
        format!("--XyZ\r\n{disposition}--XyZ--\r"),
        format!("--XyZ\r\n{disposition}--XyZ--\r\n\r\n"),
        format!("--XyZ\r\n{disposition}--XyZ--\r\n--XyZ\r\n{disposition}--XyZ--"),
        // Parameters formidable takes for a name or a boundary; a disposition of another type.
        "--XyZ\r\nContent-Disposition: form-data; x-name=\"email\"; name=\"t\"\r\n\r\nv\r\n--XyZ--".to_owned(),
        "--XyZ\r\nContent-Disposition: form-data; name=\"t\"; x-filename=\"a\"\r\n\r\nv\r\n--XyZ--".to_owned(),
        "--XyZ\r\nContent-Disposition: form-data; name=\"t\"; size=3\r\n\r\nv\r\n--XyZ--".to_owned(),
        "--XyZ\r\nContent-Disposition: attachment; name=\"email\"\r\n\r\nv\r\n--XyZ--".to_owned(),
        format!(
            "--XyZ\r\n{}Content-Type: text/plain; x-boundary=Q\r\n\r\nv\r\n--XyZ--",
            "Content-Disposition: form-data; name=\"t\"\r\n"
        ),
        format!(
            "--XyZ\r\n{}Content-Type: text/plain; name=email\r\n\r\nv\r\n--XyZ--",
            "Content-Disposition: form-data; name=\"t\"\r\n"
        ),
        format!(
            "--XyZ\r\n{}Content-Type: multipart/mixed; boundary=Q\r\n\r\nv\r\n--XyZ--",
            "Content-Disposition: form-data; name=\"t\"\r\n"
        ),
    ];
    for body in &cases {
        check(body, Err(Unreadable::Ambiguous));
    }
    // What real clients send after the close delimiter: nothing, or one line break.
    for end in ["", "\r\n"] {
        check(&format!("--XyZ\r\n{disposition}--XyZ--{end}"), Ok(&[(Some("email"), "v")]));
    }
    check(&format!("--XyZ\n{}--XyZ--\n", disposition.replace("\r\n", "\n")), Ok(&[(Some("email"), "v")]));
}

#[test]
fn bodies_that_cannot_be_read_in_full_are_errors() {
    use Unreadable::*;
    let cases: &[(&str, Unreadable)] = &[
        ("", Malformed),
        ("no delimiter at all", Malformed),
        ("--XyZ", Malformed),
        ("--XyZ\r\n", Malformed),
        // Headers never end.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n", Malformed),
        // No close delimiter.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n", Malformed),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n--XyZ", Malformed),
        // A header line without a colon; a continuation line first.
        ("--XyZ\r\nnot a header\r\n\r\nv\r\n--XyZ--", Malformed),
        ("--XyZ\r\n name=\"email\"\r\n\r\nv\r\n--XyZ--", Malformed),
        // Two different names for one part.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"other\"; name*=utf-8''email\r\n\r\nv\r\n--XyZ--", Ambiguous),
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"other\"\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--",
            Ambiguous,
        ),
        ("--XyZ\r\nContent-Disposition: form-data; name*0=em; name*1=ail\r\n\r\nv\r\n--XyZ--", Ambiguous),
        // ext-values the filter does not read.
        ("--XyZ\r\nContent-Disposition: form-data; name*=utf-16''%FF%FE\r\n\r\nv\r\n--XyZ--", Encoded),
        ("--XyZ\r\nContent-Disposition: form-data; name*=utf-8''%FF\r\n\r\nv\r\n--XyZ--", Encoded),
        ("--XyZ\r\nContent-Disposition: form-data; name*=email\r\n\r\nv\r\n--XyZ--", Malformed),
        ("--XyZ\r\nContent-Disposition: form-data; name*=utf-8''%6\r\n\r\nv\r\n--XyZ--", Malformed),
        // Issue 23: lines a delimiter starts that are not delimiters (busboy ends the part
        // there, Werkzeug ends the form on `--`, Python reads on), in a part or the preamble.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\n--XyZx\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nv\r\n--XyZ--junk\r\n", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nv\r\n--XyZ x\r\n--XyZ--", Ambiguous),
        ("--XyZ\x0b\r\n--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        // Padding other than spaces and tabs (Werkzeug's `[^\S\n\r]` takes VT and FF).
        ("--XyZ\x0b\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nv\r\n--XyZ--\x0c\r\n", Ambiguous),
        // The delimiter in mid-line in the preamble (Werkzeug starts there).
        ("junk--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("junk--XyZ--\r\n--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("junk--XyZ  \n--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("x\r--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        // A delimiter in the epilogue (Rails reads on after a leading close delimiter).
        ("--XyZ--\r\n--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--\r\nx\n--XyZ--", Ambiguous),
        // Bare CR line ends: before a delimiter, after one, in a header block.
        ("--XyZ\rContent-Disposition: form-data; name=\"email\"\r\rv\r--XyZ--\r", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r--XyZ--\r\n", Ambiguous),
        ("--XyZ \r\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data;\r name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nX-A: b\rContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        // Line ends that change style: at a delimiter, in a header block, at its blank line.
        ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\n--XyZ--", Ambiguous),
        ("--XyZ\nContent-Disposition: form-data; name=\"a\"\n\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nX-A: b\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nX-A: b\n\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ\n\
             Content-Disposition: form-data; name=\"b\"\n\nw\r\n--XyZ--",
            Ambiguous,
        ),
        // A part without headers; a header line that starts with the delimiter.
        ("--XyZ\r\n\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\n--XyZ: x\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        // Content-Disposition given twice (even alike), or read differently.
        (
            "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--",
            Ambiguous,
        ),
        ("--XyZ\r\nContent-Disposition: form-data; name=email(x)\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; (c) name=email\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"; name=\"b\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"; name=\"a\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"=?utf-8?q?email?=\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=\"=?utf-8?B?ZW1haWw=?=\"\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name*=utf-8''%3D%3Fx%3Fq%3Fe%3F%3D\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name*0*=utf-8''em; name*1=ail\r\n\r\nv\r\n--XyZ--", Ambiguous),
        ("--XyZ\r\nContent-Disposition: form-data; name=a; filename*0=x\r\n\r\nv\r\n--XyZ--", Ambiguous),
    ];
    for (body, expected) in cases {
        check(body, Err(*expected));
    }
}

#[test]
fn encoded_parts_are_marked() {
    let body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: base64\r\n\r\nYQ==\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=b\r\nContent-Type: text/plain; charset=UTF-16\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=c\r\nContent-Transfer-Encoding: 8bit\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=d\r\nContent-Type: text/plain; charset=utf-8; charset=utf-7\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=e\r\nContent-Type: text/plain; charset*=utf-8''utf-7\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=f\r\nContent-Type: text/plain (x); charset=utf-7\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=g\r\nContent-Type: text/plain\r\nContent-Type: text/plain; charset=utf-7\r\n\r\nx\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=h\r\nContent-Type: text/plain; charset=\"US-ASCII\"\r\n\r\nx\r\n--XyZ--";
    let got: Vec<bool> = parts(body.as_bytes(), "XyZ").unwrap().iter().map(|p| p.encoded).collect();
    assert_eq!(got, [true, true, false, true, true, true, true, false]);
}

#[test]
fn limits_make_the_body_unreadable() {
    let part = "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
    let at_limit = format!("{}--XyZ--", part.repeat(MAX_PARTS));
    assert_eq!(parts(at_limit.as_bytes(), "XyZ").map(|p| p.len()), Ok(MAX_PARTS));
    let over = format!("{}--XyZ--", part.repeat(MAX_PARTS + 1));
    assert_eq!(parts(over.as_bytes(), "XyZ"), Err(Unreadable::TooComplex));
    let headers = "X-A: b\r\n".repeat(MAX_HEADERS);
    let body = format!("--XyZ\r\n{headers}\r\nv\r\n--XyZ--");
    assert!(parts(body.as_bytes(), "XyZ").is_ok());
    let headers = "X-A: b\r\n".repeat(MAX_HEADERS + 1);
    let body = format!("--XyZ\r\n{headers}\r\nv\r\n--XyZ--");
    assert_eq!(parts(body.as_bytes(), "XyZ"), Err(Unreadable::TooComplex));
}

#[test]
fn invalid_boundaries_are_errors() {
    let body = b"--\r\n\r\n";
    assert!(parts(body, "").is_err());
    assert!(parts(body, &"a".repeat(MAX_BOUNDARY + 1)).is_err());
    assert!(parts(b"--a\nb\r\n", "a\nb").is_err());
}

#[test]
fn never_panics_on_any_prefix_or_byte_soup() {
    let body =
        "--XyZ\r\nContent-Disposition: form-data; name=\"email\"; filename=\"x\"\r\n\r\na@b.example\r\n--XyZ--\r\n";
    for n in 0..=body.len() {
        let _ = parts(&body.as_bytes()[..n], "XyZ");
    }
    let soup: Vec<u8> = (0..4096u32).map(|i| b"-\r\nXyZ\"=;: *'%"[(i * 7 % 13) as usize % 13]).collect();
    let _ = parts(&soup, "XyZ");
    let _ = parts(&[0xff, 0xfe, b'\n', b'-', b'-'], "XyZ");
    for end in ["\r", "\n", "\r\n", "--", "--\r", " \r", "\x0b"] {
        let _ = parts(format!("--XyZ{end}").as_bytes(), "XyZ");
        let _ = parts(format!("x\r--XyZ{end}").as_bytes(), "XyZ");
    }
}

/// Delimiters are looked for only at line starts, the preamble once: time stays linear in
/// the body, whatever it holds (many line starts that begin like the delimiter, bare CRs).
#[test]
fn work_is_linear() {
    let boundary = "b".repeat(MAX_BOUNDARY);
    let near = format!("--{}", &boundary[1..]);
    let start = std::time::Instant::now();
    let skipped = format!("--{boundary}{}x", " ".repeat(255));
    for filler in [format!("{near}\r"), format!("{near}\n"), "\r".to_owned(), format!("x{near}"), skipped] {
        let content = filler.repeat(4 * 1024 * 1024 / filler.len());
        let body =
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n{content}\r\n--{boundary}--");
        let _ = parts(body.as_bytes(), &boundary);
        let preamble = format!("{content}\r\n--{boundary}--");
        let _ = parts(preamble.as_bytes(), &boundary);
    }
    // A bound for quadratic work (hours on these bodies), not a speed claim: linear work takes
    // about a second unoptimized on a loaded machine.
    assert!(start.elapsed() < std::time::Duration::from_secs(60), "{:?}", start.elapsed());
}
