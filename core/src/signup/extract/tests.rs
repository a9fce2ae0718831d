use super::*;

fn sources(json: &[&str], form: &[&str]) -> EmailSources {
    EmailSources {
        headers: vec![],
        query_params: vec![],
        json_pointers: json.iter().map(|s| s.to_string()).collect(),
        form_fields: form.iter().map(|s| s.to_string()).collect(),
    }
}

fn email(s: &str) -> Extracted {
    Extracted::Email(s.to_owned())
}

const NOT_TEXT: Extracted = Extracted::Invalid(Unusable::NotText);
const CONFLICTING: Extracted = Extracted::Invalid(Unusable::Conflicting);

const UNREADABLE: Extracted = Extracted::Unreadable(Unreadable::Malformed);

#[test]
fn body_kind_from_content_type() {
    let multipart = |b: &str| BodyKind::Multipart { boundary: b.to_owned() };
    let unread = BodyKind::Unread(Unreadable::UnreadType);
    let malformed = BodyKind::Unread(Unreadable::Malformed);
    let cases: &[(Option<&[u8]>, BodyKind)] = &[
        (None, unread.clone()),
        (Some(b"application/json"), BodyKind::Json),
        (Some(b"Application/JSON; charset=utf-8"), BodyKind::Json),
        (Some(b"application/vnd.api+json"), BodyKind::Json),
        (Some(b"application/x-www-form-urlencoded"), BodyKind::UrlEncoded),
        (Some(b"application/x-www-form-urlencoded;charset=UTF-8"), BodyKind::UrlEncoded),
        (Some(b"multipart/form-data; boundary=abc"), multipart("abc")),
        (Some(b"multipart/form-data; charset=utf-8; BOUNDARY=\"a b;c\""), multipart("a b;c")),
        (Some(b"multipart/form-data"), malformed.clone()),
        (Some(b"multipart/form-data; boundary="), malformed),
        (Some(b"multipart/mixed; boundary=abc"), unread.clone()),
        (Some(b"text/plain"), unread.clone()),
        (Some(b"json"), unread.clone()),
        (Some(b""), unread.clone()),
        (Some(b"\xff\xfe"), unread),
    ];
    for (ct, expected) in cases {
        assert_eq!(&BodyKind::from_content_type(*ct), expected, "{ct:?}");
    }
}

/// Issue 13 item 2: a body of a type no configured source reads, an encoded body, two content
/// types: not read, so a non-empty one is unreadable rather than "no email".
#[test]
fn body_kind_for_request() {
    let all = sources(&["/email"], &["email"]);
    let v = |s: &str| vec![s.as_bytes().to_vec()];
    let two = vec![b"application/json".to_vec(), b"application/x-www-form-urlencoded".to_vec()];
    let same_twice = vec![b"application/json".to_vec(), b"application/json".to_vec()];
    type Values = Vec<Vec<u8>>;
    let cases: Vec<(Values, Values, BodyKind)> = vec![
        (v("application/json"), vec![], BodyKind::Json),
        (v("application/json"), v("identity"), BodyKind::Json),
        (v("application/json"), v("gzip"), BodyKind::Unread(Unreadable::Encoded)),
        (v("application/json"), v(" GZIP "), BodyKind::Unread(Unreadable::Encoded)),
        (vec![], vec![], BodyKind::Unread(Unreadable::UnreadType)),
        (v("text/plain"), vec![], BodyKind::Unread(Unreadable::UnreadType)),
        (two, vec![], BodyKind::Unread(Unreadable::Ambiguous)),
        (same_twice, vec![], BodyKind::Json),
    ];
    for (ct, ce, expected) in &cases {
        assert_eq!(&BodyKind::for_request(ct, ce, &all), expected, "{ct:?} {ce:?}");
    }
    let json_only = sources(&["/email"], &[]);
    let kind = BodyKind::for_request(&v("application/x-www-form-urlencoded"), &[], &json_only);
    assert_eq!(kind, BodyKind::Unread(Unreadable::UnreadType));
    assert_eq!(from_body(&kind, b"email=x@mailinator.com", &json_only), Extracted::Unreadable(Unreadable::UnreadType));
    assert_eq!(from_body(&kind, b"", &json_only), Extracted::NotFound, "an empty body holds no email");
}

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
        assert_eq!(&from_body(&BodyKind::Json, body.as_bytes(), &s), expected, "{body}");
    }
    // RFC 6901 escapes, the whole-document pointer, array indexes.
    let s = sources(&["/a~1b/c~0d"], &[]);
    assert_eq!(from_body(&BodyKind::Json, br#"{"a/b":{"c~d":"x@y.example"}}"#, &s), email("x@y.example"));
    let s = sources(&[""], &[]);
    assert_eq!(from_body(&BodyKind::Json, br#""x@y.example""#, &s), email("x@y.example"));
    let s = sources(&["/list/01", "/list/-"], &[]);
    assert_eq!(from_body(&BodyKind::Json, br#"{"list":["a@b.example","c@d.example"]}"#, &s), Extracted::NotFound);
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
        assert_eq!(from_body(&BodyKind::Json, body.as_bytes(), &s), UNREADABLE, "{body}");
    }
    assert_eq!(from_body(&BodyKind::Json, b"\xff", &s), UNREADABLE);
    assert_eq!(from_body(&BodyKind::Json, b"\xff\xfe{\x00}\x00", &s), UNREADABLE, "UTF-16");
    // Inside serde_json's limits: read.
    let nested = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let body = format!(r#"{{"email":"x@mailinator.com","deep":{nested},"n":1e300}}"#);
    assert_eq!(from_body(&BodyKind::Json, body.as_bytes(), &s), email("x@mailinator.com"));
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
        assert_eq!(&from_body(&BodyKind::Json, body.as_bytes(), &s), expected, "{body}");
    }
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
    let kind = BodyKind::Multipart { boundary: "B".to_owned() };
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
    let kind = BodyKind::Multipart { boundary: "B".to_owned() };
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
        // After a preamble line that starts with the boundary: read.
        (format!("--Bx preamble\r\n{}--B--", part("email", x)), email(x)),
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

/// A JSON document under the form type is not a form without an email.
#[test]
fn json_sent_as_a_form_is_unreadable() {
    let s = sources(&["/email"], &["email"]);
    for body in [&br#"{"email":"x@mailinator.com"}"#[..], b" [1]", br#""x""#] {
        assert_eq!(from_body(&BodyKind::UrlEncoded, body, &s), UNREADABLE, "{:?}", String::from_utf8_lossy(body));
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
        (b"Email=a@b.example", Extracted::NotFound),
        (b"", Extracted::NotFound),
        (b"&&==&", Extracted::NotFound),
        // Invalid UTF-8 decodes lossily; the address parser rejects the replacement character.
        (b"email=a@b%FF.example", email("a@b\u{fffd}.example")),
    ];
    for (body, expected) in cases {
        assert_eq!(&from_body(&BodyKind::UrlEncoded, body, &s), expected, "{:?}", String::from_utf8_lossy(body));
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

#[test]
fn params() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("", &[]),
        ("; boundary=abc", &[("boundary", "abc")]),
        (" form-data; name=\"a;b\"; filename=x.txt", &[("name", "a;b"), ("filename", "x.txt")]),
        ("; NAME = \"q\\\"uote\" ", &[("name", "q\"uote")]),
        ("; name=\"unterminated", &[("name", "unterminated")]),
        ("; =x; ;; a=; b", &[("a", "")]),
        ("; a=\"x\\", &[("a", "x")]),
        ("; é=ü", &[("é", "ü")]),
    ];
    for (input, expected) in cases {
        let got = parse_params(input);
        let got: Vec<(&str, &str)> = got.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(&got, expected, "{input:?}");
    }
}
