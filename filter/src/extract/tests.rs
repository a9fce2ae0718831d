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

#[test]
fn body_kind_from_content_type() {
    let multipart = |b: &str| BodyKind::Multipart { boundary: b.to_owned() };
    let cases: &[(Option<&[u8]>, BodyKind)] = &[
        (None, BodyKind::Other),
        (Some(b"application/json"), BodyKind::Json),
        (Some(b"Application/JSON; charset=utf-8"), BodyKind::Json),
        (Some(b"application/vnd.api+json"), BodyKind::Json),
        (Some(b"application/x-www-form-urlencoded"), BodyKind::UrlEncoded),
        (Some(b"application/x-www-form-urlencoded;charset=UTF-8"), BodyKind::UrlEncoded),
        (Some(b"multipart/form-data; boundary=abc"), multipart("abc")),
        (Some(b"multipart/form-data; charset=utf-8; BOUNDARY=\"a b;c\""), multipart("a b;c")),
        (Some(b"multipart/form-data"), BodyKind::Other),
        (Some(b"multipart/form-data; boundary="), BodyKind::Other),
        (Some(b"multipart/mixed; boundary=abc"), BodyKind::Other),
        (Some(b"text/plain"), BodyKind::Other),
        (Some(b"json"), BodyKind::Other),
        (Some(b""), BodyKind::Other),
        (Some(b"\xff\xfe"), BodyKind::Other),
    ];
    for (ct, expected) in cases {
        assert_eq!(&BodyKind::from_content_type(*ct), expected, "{ct:?}");
    }
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
        (r#"{"email":"a@b.example","user":{"email":"u@b.example"}}"#, email("a@b.example")),
        // Duplicate keys: the last wins, as in JavaScript and Python.
        (r#"{"email":"first@b.example","email":"last@b.example"}"#, email("last@b.example")),
        (r#"{"email":42}"#, NOT_TEXT),
        (r#"{"email":["a@b.example"]}"#, NOT_TEXT),
        (r#"{"email":{"value":"a@b.example"}}"#, NOT_TEXT),
        (r#"{"name":"x"}"#, Extracted::NotFound),
        (r#"["a@b.example"]"#, Extracted::NotFound),
        (r#"{"email":"a@b.example""#, Extracted::NotFound),
        ("", Extracted::NotFound),
        ("\u{feff}{}", Extracted::NotFound),
    ];
    for (body, expected) in cases {
        assert_eq!(&from_body(&BodyKind::Json, body.as_bytes(), &s), expected, "{body}");
    }
    assert_eq!(from_body(&BodyKind::Json, b"\xff", &s), Extracted::NotFound);
    // RFC 6901 escapes and the whole-document pointer.
    let s = sources(&["/a~1b/c~0d"], &[]);
    assert_eq!(from_body(&BodyKind::Json, br#"{"a/b":{"c~d":"x@y.example"}}"#, &s), email("x@y.example"));
    let s = sources(&[""], &[]);
    assert_eq!(from_body(&BodyKind::Json, br#""x@y.example""#, &s), email("x@y.example"));
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
        (b"email=a@b.example&mail=m@b.example", email("a@b.example")),
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
fn multipart_forms() {
    let s = sources(&[], &["email"]);
    let kind = BodyKind::Multipart { boundary: "B".to_owned() };
    let part =
        |name: &str, value: &str| format!("--B\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n");
    let cases: Vec<(String, Extracted)> = vec![
        (format!("{}{}--B--", part("name", "x"), part("email", "a@b.example")), email("a@b.example")),
        (format!("{}{}--B--", part("email", "a@b.example"), part("email", "c@d.example")), CONFLICTING),
        (format!("{}--B--", part("other", "a@b.example")), Extracted::NotFound),
        (format!("{}--B--", part("email", "")), Extracted::NotFound),
        ("garbage".to_owned(), Extracted::NotFound),
    ];
    for (body, expected) in &cases {
        assert_eq!(&from_body(&kind, body.as_bytes(), &s), expected, "{body}");
    }
    let binary =
        [&b"--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n"[..], b"\xff\xfe", b"\r\n--B--"].concat();
    assert_eq!(from_body(&kind, &binary, &s), NOT_TEXT);
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
