use super::*;

/// What the configured sources give (the tests of every address are below and in `carried`).
fn from_body(kind: &BodyKind, body: &[u8], sources: &EmailSources) -> Extracted {
    read_body(kind, body, sources, 1 << 20).configured
}

fn from_query(path: &str, names: &[String]) -> Extracted {
    let sources = EmailSources { query_params: names.to_vec(), ..EmailSources::default() };
    read_query(path, &sources).configured
}

fn sources(json: &[&str], form: &[&str]) -> EmailSources {
    EmailSources {
        headers: vec![],
        query_params: vec![],
        json_pointers: json.iter().map(|s| s.to_string()).collect(),
        form_fields: form.iter().map(|s| s.to_string()).collect(),
        secret_fields: ["password", "passwd", "pwd"].map(str::to_owned).to_vec(),
        proto_fields: vec![],
    }
}

fn names(carried: &Carried) -> Vec<String> {
    carried.domains.as_slice().iter().map(|n| n.domain.to_string()).collect()
}

fn email(s: &str) -> Extracted {
    Extracted::Email(s.to_owned())
}

const NOT_TEXT: Extracted = Extracted::Invalid(Unusable::NotText);
const CONFLICTING: Extracted = Extracted::Invalid(Unusable::Conflicting);

const UNREADABLE: Extracted = Extracted::Unreadable(Unreadable::Malformed);

#[test]
fn json_pointers() {
    let s = sources(&["/email", "/user/email", "/list/0"], &[]);
    let cases: &[(&str, Extracted)] = &[
        (r#"{"email":"a@b.example"}"#, email("a@b.example")),
        (r#"{"user":{"email":"u@b.example"}}"#, email("u@b.example")),
        (r#"{"email":null,"user":{"email":"u@b.example"}}"#, email("u@b.example")),
        (r#"{"email":"  ","user":{"email":"u@b.example"}}"#, email("u@b.example")),
        (r#"{"list":["l@b.example"]}"#, email("l@b.example")),
        // Every configured pointer is read: two different emails are invalid.
        (r#"{"email":"a@b.example","user":{"email":"u@b.example"}}"#, CONFLICTING),
        (r#"{"email":"a@b.example","user":{"email":" a@b.example"}}"#, email("a@b.example")),
        (r#"{"email":42}"#, NOT_TEXT),
        (r#"{"email":["a@b.example"]}"#, NOT_TEXT),
        (r#"{"email":{"value":"a@b.example"}}"#, NOT_TEXT),
        (r#"{"email":true}"#, NOT_TEXT),
        (r#"{"name":"x"}"#, Extracted::NotFound),
        (r#"["a@b.example"]"#, Extracted::NotFound),
        (r#"{"list":{"0":"l@b.example"}}"#, email("l@b.example")),
        ("\u{feff}{}", Extracted::NotFound),
        (" \n{}\t", Extracted::NotFound),
    ];
    for (body, expected) in cases {
        assert_eq!(&from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), expected, "{body}");
    }
    // RFC 6901 escapes, the whole-document pointer, array indexes.
    let s = sources(&["/a~1b/c~0d"], &[]);
    assert_eq!(from_body(&BodyKind::of(Format::Json), br#"{"a/b":{"c~d":"x@y.example"}}"#, &s), email("x@y.example"));
    let s = sources(&[""], &[]);
    assert_eq!(from_body(&BodyKind::of(Format::Json), br#""x@y.example""#, &s), email("x@y.example"));
    let s = sources(&["/list/01", "/list/-"], &[]);
    assert_eq!(
        from_body(&BodyKind::of(Format::Json), br#"{"list":["a@b.example","c@d.example"]}"#, &s),
        Extracted::NotFound
    );
}

/// Issue 13 item 2: JSON that serde_json refuses (some apps read it) is unreadable, not "no email".
#[test]
fn unreadable_json_is_not_a_missing_email() {
    let s = sources(&["/email"], &[]);
    let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
    let deep_object = format!("{}\"x@mailinator.com\"{}", r#"{"a":"#.repeat(130), "}".repeat(130));
    let cases: Vec<String> = vec![
        r#"{"email":"x@mailinator.com","n":NaN}"#.into(),
        r#"{"email":"x@mailinator.com","n":-Infinity}"#.into(),
        r#"{"email":"x@mailinator.com","n":Infinity}"#.into(),
        r#"{"email":"x@mailinator.com","n":1e400}"#.into(),
        r#"{"email":"x@mailinator.com","n":"\ud800"}"#.into(),
        r#"{"email":"x@mailinator.com\udc00"}"#.into(),
        format!(r#"{{"email":"x@mailinator.com","deep":{deep}}}"#),
        deep_object,
        r#"{"email":"x@mailinator.com"} trailing"#.into(),
        r#"{"email":"x@mailinator.com""#.into(),
        r#"{'email':'x@mailinator.com'}"#.into(),
        r#"{"email":"x@mailinator.com",}"#.into(),
        "\u{0}".into(),
        " ".into(),
    ];
    for body in &cases {
        assert_eq!(from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), UNREADABLE, "{body}");
    }
    assert_eq!(from_body(&BodyKind::of(Format::Json), b"\xff", &s), UNREADABLE);
    assert_eq!(from_body(&BodyKind::of(Format::Json), b"\xff\xfe{\x00}\x00", &s), UNREADABLE, "UTF-16");
    // Inside serde_json's limits: read.
    let nested = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let body = format!(r#"{{"email":"x@mailinator.com","deep":{nested},"n":1e300}}"#);
    assert_eq!(from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), email("x@mailinator.com"));
}

/// Issue 13 item 3: a key repeated with different values on a pointer's path is invalid.
#[test]
fn duplicate_json_keys_on_a_pointer_path() {
    let s = sources(&["/email", "/user/email"], &[]);
    let cases: &[(&str, Extracted)] = &[
        (r#"{"email":"x@mailinator.com","email":"y@gmail.com"}"#, CONFLICTING),
        (r#"{"email":"y@gmail.com","email":"x@mailinator.com"}"#, CONFLICTING),
        (r#"{"user":{"email":"x@mailinator.com"},"user":{"email":"y@gmail.com"}}"#, CONFLICTING),
        (r#"{"user":{"email":"x@mailinator.com","email":"y@gmail.com"}}"#, CONFLICTING),
        (r#"{"email":"y@gmail.com","email":42}"#, NOT_TEXT),
        // The same value repeated is fine; so are duplicates off the pointer's path.
        (r#"{"email":"y@gmail.com","email":"y@gmail.com"}"#, email("y@gmail.com")),
        (r#"{"user":{"email":"y@gmail.com","n":1},"user":{"email":"y@gmail.com","n":2}}"#, email("y@gmail.com")),
        (r#"{"email":"y@gmail.com","name":"a","name":"b"}"#, email("y@gmail.com")),
        // null and blank count as absent.
        (r#"{"email":"y@gmail.com","email":null}"#, email("y@gmail.com")),
        (r#"{"email":"","email":"y@gmail.com"}"#, email("y@gmail.com")),
        (r#"{"user":{"name":"a"},"user":{"email":"y@gmail.com"}}"#, email("y@gmail.com")),
    ];
    for (body, expected) in cases {
        assert_eq!(&from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), expected, "{body}");
    }
}

/// Issue 23: Go's `encoding/json` and ASP.NET Core bind keys case-insensitively (Go with
/// Unicode simple folding), the last match winning: every such key is the pointer's.
#[test]
fn json_keys_that_differ_only_in_case_are_the_same_field() {
    let s = sources(&["/email", "/user/email"], &[]);
    let cases: &[(&str, Extracted)] = &[
        (r#"{"Email":"x@mailinator.com"}"#, email("x@mailinator.com")),
        (r#"{"EMAIL":"x@mailinator.com"}"#, email("x@mailinator.com")),
        (r#"{"\u0045mail":"x@mailinator.com"}"#, email("x@mailinator.com")),
        (r#"{"emaıl":"x@mailinator.com"}"#, email("x@mailinator.com")), // ı: upper-cased, I (a superset)
        (r#"{"\u0045M\u0041IL":"x@mailinator.com"}"#, email("x@mailinator.com")),
        (r#"{"USER":{"EMAIL":"x@mailinator.com"}}"#, email("x@mailinator.com")),
        (r#"{"email":"jane@gmail.com","EMAIL":"temp@mailinator.com"}"#, CONFLICTING),
        (r#"{"EMAIL":"temp@mailinator.com","email":"jane@gmail.com"}"#, CONFLICTING),
        (r#"{"email":"jane@gmail.com","\u0045MAIL":"temp@mailinator.com"}"#, CONFLICTING),
        (r#"{"user":{"email":"jane@gmail.com"},"User":{"Email":"temp@mailinator.com"}}"#, CONFLICTING),
        (r#"{"email":"jane@gmail.com","Email":"jane@gmail.com"}"#, email("jane@gmail.com")),
        (r#"{"email":"jane@gmail.com","EMAIL":null}"#, email("jane@gmail.com")),
        (r#"{"email":"jane@gmail.com","EMAIL":7}"#, NOT_TEXT),
        (r#"{"e-mail":"x@mailinator.com","emails":"y@mailinator.com"}"#, Extracted::NotFound),
    ];
    for (body, expected) in cases {
        assert_eq!(&from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), expected, "{body}");
    }
    // The Kelvin sign and the long s fold to ASCII letters (Go): `/ask` matches them.
    let s = sources(&["/ask"], &[]);
    let body = "{\"as\u{212A}\":\"x@mailinator.com\",\"a\u{17F}k\":\"y@gmail.com\"}";
    assert_eq!(from_body(&BodyKind::of(Format::Json), body.as_bytes(), &s), CONFLICTING);
}

/// Sources are combined: the first error wins, two emails must agree.
#[test]
fn sources_combine() {
    let cases: &[(Extracted, Extracted, Extracted)] = &[
        (Extracted::NotFound, Extracted::NotFound, Extracted::NotFound),
        (Extracted::NotFound, email("a@b.example"), email("a@b.example")),
        (email("a@b.example"), Extracted::NotFound, email("a@b.example")),
        (email("a@b.example"), email(" a@b.example "), email("a@b.example")),
        (email("a@b.example"), email("c@d.example"), CONFLICTING),
        (email("a@b.example"), UNREADABLE, UNREADABLE),
        (NOT_TEXT, UNREADABLE, NOT_TEXT),
        (UNREADABLE, email("a@b.example"), UNREADABLE),
        (Extracted::NotFound, CONFLICTING, CONFLICTING),
    ];
    for (a, b, expected) in cases {
        assert_eq!(&a.clone().and(b.clone()), expected, "{a:?} and {b:?}");
    }
}

#[test]
fn multipart_forms() {
    let s = sources(&[], &["email"]);
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let cases: Vec<(String, Extracted)> = vec![
        (format!("{}{}--B--", part("name", "x"), part("email", "a@b.example")), email("a@b.example")),
        (format!("{}{}--B--", part("email", "a@b.example"), part("email", "c@d.example")), CONFLICTING),
        (format!("{}--B--", part("other", "a@b.example")), Extracted::NotFound),
        (format!("{}--B--", part("email", "")), Extracted::NotFound),
        ("garbage".to_owned(), UNREADABLE),
    ];
    for (body, expected) in &cases {
        assert_eq!(&from_body(&kind, body.as_bytes(), &s), expected, "{body}");
    }
    let binary =
        [&b"--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n"[..], b"\xff\xfe", b"\r\n--B--"].concat();
    assert_eq!(from_body(&kind, &binary, &s), Extracted::Unreadable(Unreadable::Encoded));
}

fn part(name: &str, value: &str) -> String {
    format!("--B\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
}

/// Issue 13 item 2: every multipart trick that hid the email from the filter.
#[test]
fn multipart_bodies_that_hid_the_email() {
    let s = sources(&[], &["email"]);
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let x = "x@mailinator.com";
    let many = format!("{}{}--B--", part("f", "v").repeat(MAX_PARTS), part("email", x));
    let headers = "X-H: v\r\n".repeat(MAX_HEADERS + 1);
    let big_headers =
        format!("--B\r\nContent-Disposition: form-data; name=a\r\n{headers}\r\nv\r\n{}--B--", part("email", x));
    let base64 = "--B\r\nContent-Disposition: form-data; name=email\r\nContent-Transfer-Encoding: base64\r\n\r\n\
                  eEBtYWlsaW5hdG9yLmNvbQ==\r\n--B--";
    let cases: Vec<(String, Extracted)> = vec![
        // The email as the 257th part; after a part with more than 32 header lines.
        (many, Extracted::Unreadable(Unreadable::TooComplex)),
        (big_headers, Extracted::Unreadable(Unreadable::TooComplex)),
        // As name*=utf-8''email (RFC 8187): read.
        (format!("--B\r\nContent-Disposition: form-data; name*=utf-8''email\r\n\r\n{x}\r\n--B--"), email(x)),
        // After a preamble line that starts with the boundary: Django finds it there.
        (format!("--Bx preamble\r\n{}--B--", part("email", x)), Extracted::Unreadable(Unreadable::Ambiguous)),
        // A folded Content-Disposition: read.
        (format!("--B\r\nContent-Disposition: form-data;\r\n\tname=\"email\"\r\n\r\n{x}\r\n--B--"), email(x)),
        // No closing delimiter.
        (part("email", x), UNREADABLE),
        // A transfer encoding the filter does not decode.
        (base64.to_owned(), Extracted::Unreadable(Unreadable::Encoded)),
        // Two names for one part.
        (
            format!("--B\r\nContent-Disposition: form-data; name=\"x\"; name*=utf-8''email\r\n\r\n{x}\r\n--B--"),
            Extracted::Unreadable(Unreadable::Ambiguous),
        ),
    ];
    for (body, expected) in &cases {
        assert_eq!(&from_body(&kind, body.as_bytes(), &s), expected, "{body}");
    }
}

/// Issue 23 item 1: multipart bodies that Werkzeug or Python's `email` read with an `email`
/// field the reader used to miss (or see otherwise): now unreadable, whatever else they hold.
#[test]
fn multipart_bodies_that_hid_the_email_issue_23() {
    let s = sources(&[], &["email"]);
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let x = "x@mailinator.com";
    let safe = part("name", "jane@gmail.com");
    let ambiguous = Extracted::Unreadable(Unreadable::Ambiguous);
    let cases: Vec<(String, Extracted)> = vec![
        // Bare CR line ends throughout; after a visible safe part; a delimiter before a bare CR.
        (format!("--B\rContent-Disposition: form-data; name=\"email\"\r\r{x}\r--B--\r"), ambiguous.clone()),
        (format!("{safe}--B\rContent-Disposition: form-data; name=\"email\"\r\r{x}\r--B--\r\n"), ambiguous.clone()),
        (
            format!("--B\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r--B\r\n{}--B--", part("email", x)),
            ambiguous.clone(),
        ),
        // The shapes the old reader missed (it split lines at LF only): a bare-CR part inside
        // a visible part's content, a visible safe email after it (Werkzeug's first `email` is x).
        (
            format!(
                "--B\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r--B\rContent-Disposition: form-data; name=\"email\"\r\r{x}\r\n--B--"
            ),
            ambiguous.clone(),
        ),
        (
            format!(
                "--B\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r--B\rContent-Disposition: form-data; name=\"email\"\r\r{x}\r\n{}--B--",
                part("email", "jane@gmail.com")
            ),
            ambiguous.clone(),
        ),
        // A bare CR in a header block (Werkzeug ends the line there).
        (
            format!("--B\r\nX-A: 1\rContent-Disposition: form-data; name=\"email\"\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        // Names an app decodes: RFC 2047 encoded words (Python's email, ASP.NET Core), comments.
        (
            format!("--B\r\nContent-Disposition: form-data; name=\"=?utf-8?q?email?=\"\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        (
            format!("--B\r\nContent-Disposition: form-data; name=\"=?UTF-8?B?ZW1haWw=?=\"\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        (format!("--B\r\nContent-Disposition: form-data; name=email(x)\r\n\r\n{x}\r\n--B--"), ambiguous.clone()),
        (format!("--B\r\nContent-Disposition: form-data; (c) name=email\r\n\r\n{x}\r\n--B--"), ambiguous.clone()),
        (format!("{safe}--B\r\nContent-Disposition: form-data; name=email x\r\n\r\n{x}\r\n--B--"), ambiguous.clone()),
        // Repeated parameters.
        (
            format!("--B\r\nContent-Disposition: form-data; name=\"n\"; name=\"email\"\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        (
            format!("--B\r\nContent-Disposition: form-data; name*=utf-8''n; name*=utf-8''email\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        // A part without headers (Werkzeug and Rails read the next lines as its headers).
        (format!("--B\r\n\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{x}\r\n--B--"), ambiguous.clone()),
        // `\n\r\n` does not end Werkzeug's header block.
        (
            format!("--B\r\nX-A: 1\n\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{x}\r\n--B--"),
            ambiguous.clone(),
        ),
        // The delimiter in mid-line in the preamble (Werkzeug starts there).
        (
            format!("junk--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{x}\r\n{safe}--B--"),
            ambiguous.clone(),
        ),
        // Padding Werkzeug takes (a vertical tab) and Python does not.
        (
            format!("{}--B\x0b\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{x}\r\n--B--", part("n", "v")),
            ambiguous.clone(),
        ),
        // A close delimiter first, then a form (Rails reads on).
        (format!("--B--\r\n{}--B--", part("email", x)), ambiguous.clone()),
        // `--B--junk`: Werkzeug's end, Python's content.
        (format!("{}--B--junk\r\n{}--B--", part("email", x), part("n", "v")), ambiguous.clone()),
        // A `_charset_` field in another charset (Jetty decodes the other fields with it).
        (
            format!("{}{}--B--", part("_charset_", "UTF-7"), part("email", "x+AEA-mailinator.com")),
            Extracted::Unreadable(Unreadable::Encoded),
        ),
        (format!("{}{}--B--", part("_charset_", "utf-8"), part("email", x)), email(x)),
        // Case: ASP.NET Core's form collection is case-insensitive.
        (format!("{}--B--", part("EMAIL", x)), email(x)),
        (format!("{}{}--B--", part("email", "jane@gmail.com"), part("Email", x)), CONFLICTING),
    ];
    for (body, expected) in &cases {
        assert_eq!(&from_body(&kind, body.as_bytes(), &s), expected, "{body:?}");
    }
}

/// What real clients send is read: a browser's upload with a binary file holding bare CRs and
/// LFs, a curl-style body with a file part before the field, bare LF line ends throughout.
#[test]
fn multipart_bodies_real_clients_send_are_read() {
    let s = sources(&[], &["email"]);
    let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
    let kind = BodyKind::of(Format::Multipart { boundary: boundary.to_owned() });
    let file: Vec<u8> = (0..=255u8).chain(*b"\r\r--\r\n-\n--x\r").cycle().take(4096).collect();
    let body = [
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n").as_bytes(),
        &file,
        format!("\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nann@gmail.com\r\n--{boundary}--\r\n").as_bytes(),
    ]
    .concat();
    assert_eq!(from_body(&kind, &body, &s), email("ann@gmail.com"));
    let lf = format!("--{boundary}\nContent-Disposition: form-data; name=\"email\"\n\nann@gmail.com\n--{boundary}--\n");
    assert_eq!(from_body(&kind, lf.as_bytes(), &s), email("ann@gmail.com"));
    let unicode = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"prénom\"\r\n\r\nRenée\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"email\"\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nann@gmail.com\r\n--{boundary}--"
    );
    assert_eq!(from_body(&kind, unicode.as_bytes(), &s), email("ann@gmail.com"));
}

/// A JSON document under the form type is not a form without an email.
#[test]
fn json_sent_as_a_form_is_unreadable() {
    let s = sources(&["/email"], &["email"]);
    for body in [&br#"{"email":"x@mailinator.com"}"#[..], b" [1]", br#""x""#] {
        assert_eq!(
            from_body(&BodyKind::of(Format::UrlEncoded), body, &s),
            UNREADABLE,
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn urlencoded_forms() {
    let s = sources(&[], &["email", "mail"]);
    let cases: &[(&[u8], Extracted)] = &[
        (b"email=a%40b.example&name=x", email("a@b.example")),
        (b"name=x&email=a@b.example", email("a@b.example")),
        (b"email=john+doe%40b.example", email("john doe@b.example")),
        (b"mail=m@b.example", email("m@b.example")),
        (b"email=&mail=m@b.example", email("m@b.example")),
        (b"email=a@b.example&mail=m@b.example", CONFLICTING),
        (b"email=a@b.example&mail=a@b.example", email("a@b.example")),
        (b"email=a@b.example&email=a@b.example", email("a@b.example")),
        (b"email=a@b.example&email=c@d.example", CONFLICTING),
        (b"email=&email=c@d.example", email("c@d.example")),
        (b"Email=a@b.example", email("a@b.example")),
        (b"", Extracted::NotFound),
        (b"&&==&", Extracted::NotFound),
        // Invalid UTF-8 decodes lossily; the address parser rejects the replacement character.
        (b"email=a@b%FF.example", email("a@b\u{fffd}.example")),
        // Issue 23: names as ASP.NET Core binds them (case-insensitively), a BOM as Express
        // drops it, a pair after `& ` as Rails splits it, `_charset_` as Jetty honours it.
        (b"EMAIL=a@b.example&email=c@d.example", CONFLICTING),
        (b"E%4DAIL=a@b.example", email("a@b.example")),
        (b"\xEF\xBB\xBFemail=a@b.example", email("a@b.example")),
        (b"name=x& email=a@b.example", email("a@b.example")),
        (b"email=c@d.example&  email=a@b.example", CONFLICTING),
        (b"_charset_=UTF-8&email=a@b.example", email("a@b.example")),
        (b"_charset_=&email=a@b.example", email("a@b.example")),
        (b"_charset_=utf-7&email=a+AEA-b.example", Extracted::Unreadable(Unreadable::Encoded)),
        (b"_CHARSET_=iso-8859-1&name=x", Extracted::Unreadable(Unreadable::Encoded)),
    ];
    for (body, expected) in cases {
        assert_eq!(
            &from_body(&BodyKind::of(Format::UrlEncoded), body, &s),
            expected,
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn query_parameters() {
    let names = vec!["email".to_owned(), "e".to_owned()];
    let cases: &[(&str, Extracted)] = &[
        ("/signup?email=a%40b.example", email("a@b.example")),
        ("/signup?x=1&e=a+b@c.example", email("a b@c.example")),
        ("/signup?email=a@b.example#frag", email("a@b.example")),
        ("/signup?email=a@b.example&email=c@d.example", CONFLICTING),
        ("/signup", Extracted::NotFound),
        ("/signup?", Extracted::NotFound),
        ("/signup?emailx=a@b.example", Extracted::NotFound),
        ("/signup?Email=a@b.example", email("a@b.example")),
        ("/signup?EMAIL=a@b.example&email=c@d.example", CONFLICTING),
    ];
    for (path, expected) in cases {
        assert_eq!(&from_query(path, &names), expected, "{path}");
    }
}

#[test]
fn header_values() {
    let cases: &[(&[&[u8]], Extracted)] = &[
        (&[], Extracted::NotFound),
        (&[b"a@b.example"], email("a@b.example")),
        (&[b"", b"a@b.example"], email("a@b.example")),
        (&[b"a@b.example", b"a@b.example"], email("a@b.example")),
        (&[b"a@b.example", b"c@d.example"], CONFLICTING),
        (&[b"a@b\xff.example"], NOT_TEXT),
    ];
    for (values, expected) in cases {
        let owned = values.iter().map(|v| v.to_vec()).collect();
        assert_eq!(&from_header_values(owned), expected, "{values:?}");
    }
}

/// Header values are read strictly: what popular parsers read differently is ambiguous.
#[test]
fn strict_header_values() {
    type Params<'a> = &'a [(&'a str, &'a str)];
    let ok: &[(&str, &str, Params<'_>)] = &[
        ("form-data", "form-data", &[]),
        (" Form-Data ; ", "form-data", &[]),
        ("multipart/form-data; boundary=abc", "multipart/form-data", &[("boundary", "abc")]),
        ("multipart/form-data;boundary=\"a b;c\"", "multipart/form-data", &[("boundary", "a b;c")]),
        (" form-data; name=\"a;b\"; filename=x.txt", "form-data", &[("name", "a;b"), ("filename", "x.txt")]),
        ("form-data; NAME=\"q\\\"uote\" ", "form-data", &[("name", "q\"uote")]),
        ("form-data; name=\"\"", "form-data", &[("name", "")]),
        ("form-data;; name=a;", "form-data", &[("name", "a")]),
        ("form-data; name=\"é\\x\"", "form-data", &[("name", "éx")]),
        ("form-data; name*=utf-8''%65mail; name=email", "form-data", &[("name*", "utf-8''%65mail"), ("name", "email")]),
        ("text/plain; charset=utf-8", "text/plain", &[("charset", "utf-8")]),
    ];
    for (input, essence, params) in ok {
        let (got_essence, got) = header_value(input).unwrap_or_else(|e| panic!("{input:?}: {e:?}"));
        let got: Vec<(&str, &str)> = got.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!((got_essence.as_str(), got.as_slice()), (*essence, *params), "{input:?}");
    }
    let ambiguous = [
        "",
        "; boundary=abc",
        "multipart/form-data; boundary=AAA; boundary=BBB",
        "multipart/form-data; boundary=AAA; BOUNDARY=\"BBB\"",
        "text/plain; charset=utf-8; charset=utf-7",
        "form-data; name=email(x)",
        "form-data; name=email (x)",
        "form-data; (comment) name=email",
        "form-data (comment); name=email",
        "form-data; name=\"email\"(x)",
        "form-data; name=email x",
        "form-data; name =email",
        "form-data; name= email",
        "form-data; name=",
        "form-data; =email",
        "form-data; name=\"unterminated",
        "form-data; name=\"a\\",
        "form-data; name=\"a\u{1}b\"",
        "form-data; name=émail",
        "form-data; name=a/b",
        "form-data; name=email, other",
        "form-data name=email",
        "multipart/form-data/x; boundary=a",
    ];
    for input in ambiguous {
        assert_eq!(header_value(input), Err(Unreadable::Ambiguous), "{input:?}");
    }
}

/// Issue 30: every address the request carries is found, whatever holds it.
#[test]
fn every_address_is_found_whatever_its_name() {
    let s = sources(&["/email"], &["email"]);
    let domains =
        |kind: &BodyKind, body: &str| -> Vec<String> { names(&read_body(kind, body.as_bytes(), &s, 1 << 20)) };
    let x = ["mailinator.com"];
    let form = BodyKind::of(Format::UrlEncoded);
    // qs (Express `extended: true`), PHP and Rack bracket names; any field name.
    for body in [
        "%5Bemail%5D=x%40mailinator.com",
        "email[]=x@mailinator.com",
        "email[0]=x@mailinator.com",
        "user[email]=x@mailinator.com",
        "invitee_email=x@mailinator.com",
        "name=Ann&a=1;email=x@mailinator.com",
        "a=1&  b=x@mailinator.com",
    ] {
        assert_eq!(domains(&form, body), x, "{body}");
    }
    // A form that starts like JSON is not read at all.
    let json_like = read_body(&form, b"[email]=x@mailinator.com", &s, 1 << 20);
    assert_eq!(json_like.configured, Extracted::Unreadable(Unreadable::Malformed));
    // JSON: any depth, any key, keys too.
    for body in [
        r#"{"user":{"contact":[{"value":"x@mailinator.com"}]}}"#,
        r#"["x@mailinator.com"]"#,
        r#"{"x@mailinator.com":true}"#,
        r#""x@mailinator.com""#,
    ] {
        assert_eq!(domains(&BodyKind::of(Format::Json), body), x, "{body}");
    }
    // Multipart: any part, a file's text too.
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let body = format!("{}{}--B--\r\n", part("name", "Ann"), part("[email]", "x@mailinator.com"));
    assert_eq!(domains(&kind, &body), x);
    // Two addresses: both, the configured one first in the body's order.
    let both = r#"{"invitee":"x@mailinator.com","email":"ann@gmail.com"}"#;
    assert_eq!(domains(&BodyKind::of(Format::Json), both), ["mailinator.com", "gmail.com"]);
    // Text that holds an address: its domain is judged too.
    assert_eq!(domains(&form, "bio=mail+me+at+x@mailinator.com"), x);
    // The query, with Rack's `;`.
    let query_sources = EmailSources { query_params: vec!["email".to_owned()], ..s.clone() };
    let query = read_query("/signup?email=ann@gmail.com&x=1;[email]=x%40mailinator.com", &query_sources);
    assert_eq!(query.configured, email("ann@gmail.com"));
    assert_eq!(names(&query), ["gmail.com", "mailinator.com"]);
}

/// Secrets are never scanned (their text must not leave the proxy), nor are uploaded files;
/// a part with an empty `filename` is a field to Go and is scanned.
#[test]
fn secrets_and_files_are_not_scanned() {
    let s = sources(&["/email"], &["email"]);
    let form = BodyKind::of(Format::UrlEncoded);
    for body in
        ["password=P%40ssw0rd.shop", "user[password]=P@ssw0rd.shop", "newPassword=P@ssw0rd.shop", "pwd=a@b.shop"]
    {
        assert!(names(&read_body(&form, body.as_bytes(), &s, 1 << 20)).is_empty(), "{body}");
    }
    let json = r#"{"password":"P@ssw0rd.shop","user":{"Passwd":"x@mailinator.com"},"email":"ann@gmail.com"}"#;
    assert_eq!(names(&read_body(&BodyKind::of(Format::Json), json.as_bytes(), &s, 1 << 20)), ["gmail.com"]);
    let query = read_query("/s?pwd=x%40mailinator.com&c=ann@gmail.com", &s);
    assert_eq!(names(&query), ["gmail.com"]);
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let file = |filename: &str| {
        format!(
            "--B\r\nContent-Disposition: form-data; name=\"list\"; filename=\"{filename}\"\r\n\r\nx@mailinator.com\r\n--B--\r\n"
        )
    };
    assert!(names(&read_body(&kind, file("list.csv").as_bytes(), &s, 1 << 20)).is_empty());
    assert_eq!(names(&read_body(&kind, file("").as_bytes(), &s, 1 << 20)), ["mailinator.com"]);
    let secret = format!("{}--B--\r\n", part("password", "P@ssw0rd.shop"));
    assert!(names(&read_body(&kind, secret.as_bytes(), &s, 1 << 20)).is_empty());
}

/// Issue 30: a part in an encoding the filter does not read makes the body unreadable, whatever
/// its name (Django decodes base64 parts).
#[test]
fn an_encoded_part_under_any_name_is_unreadable() {
    let s = sources(&[], &["email"]);
    let kind = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
    let body = "--B\r\nContent-Disposition: form-data; name=other\r\nContent-Transfer-Encoding: base64\r\n\r\n\
                eEBtYWlsaW5hdG9yLmNvbQ==\r\n--B--";
    assert_eq!(from_body(&kind, body.as_bytes(), &s), Extracted::Unreadable(Unreadable::Encoded));
}

/// Issue 30: UTF-16 JSON sent as a form is JSON to Django's `json.loads(request.body)` and
/// Starlette's `request.json()`: a form body must be UTF-8 text.
#[test]
fn a_form_body_that_is_not_utf8_text_is_unreadable() {
    let s = sources(&[], &["email"]);
    let utf16: Vec<u8> = "\u{feff}{\"email\":\"x@mailinator.com\"}".encode_utf16().flat_map(u16::to_le_bytes).collect();
    for body in [utf16.as_slice(), b"email=a\0b", b"email=\xff"] {
        assert_eq!(
            from_body(&BodyKind::of(Format::UrlEncoded), body, &s),
            Extracted::Unreadable(Unreadable::Encoded),
            "{body:?}"
        );
    }
    assert_eq!(
        from_body(&BodyKind::of(Format::UrlEncoded), "name=José&email=a@b.example".as_bytes(), &s),
        email("a@b.example")
    );
}

mod kinds;
