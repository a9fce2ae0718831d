//! Which reader a request's headers pick, and what a body under a type no reader takes gives.

use super::*;

/// The kind a request with these `content-type` and `content-encoding` values gets.
fn kind_of(ct: &[Vec<u8>], ce: &[Vec<u8>]) -> BodyKind {
    BodyKind::for_request(&|name| match name {
        "content-type" => ct.to_vec(),
        "content-encoding" => ce.to_vec(),
        _ => Vec::new(),
    })
}

#[test]
fn body_kind_from_content_type() {
    let multipart = |b: &str| Format::Multipart { boundary: b.to_owned() };
    let unread = Format::Unread(Unreadable::UnreadType);
    let malformed = Format::Unread(Unreadable::Malformed);
    let cases: &[(Option<&[u8]>, Format)] = &[
        (None, unread.clone()),
        (Some(b"application/json"), Format::Json),
        (Some(b"Application/JSON; charset=utf-8"), Format::Json),
        (Some(b"application/vnd.api+json"), Format::Json),
        (Some(b"application/x-www-form-urlencoded"), Format::UrlEncoded),
        (Some(b"application/x-www-form-urlencoded;charset=UTF-8"), Format::UrlEncoded),
        (Some(b"multipart/form-data; boundary=abc"), multipart("abc")),
        (Some(b"multipart/form-data; charset=utf-8; BOUNDARY=\"a b;c\""), multipart("a b;c")),
        (Some(b"multipart/form-data"), malformed.clone()),
        (Some(b"multipart/form-data; charset=utf-8"), malformed),
        (Some(b"application/json; charset=\"UTF-8\""), Format::Json),
        (Some(b"application/json; charset=us-ascii"), Format::Json),
        (Some(b"application/json;charset=utf8;"), Format::Json),
        (Some(b"application/x-www-form-urlencoded; charset=\"utf-8\""), Format::UrlEncoded),
        (Some(b"multipart/mixed; boundary=abc"), unread.clone()),
        (Some(b"text/plain"), unread.clone()),
        (Some(b"json"), unread.clone()),
        (Some(b""), unread.clone()),
        (Some(b"\xff\xfe"), unread),
    ];
    for (ct, expected) in cases {
        assert_eq!(&Format::from_content_type(*ct), expected, "{ct:?}");
    }
}

/// Issue 23: content types popular parsers read differently, or in another charset.
#[test]
fn content_types_apps_read_differently_are_not_read() {
    use Unreadable::*;
    let cases: &[(&str, Unreadable)] = &[
        // Two boundaries: busboy takes the first, Werkzeug the last.
        ("multipart/form-data; boundary=AAA; boundary=BBB", Ambiguous),
        ("multipart/form-data; boundary=AAA; Boundary=\"AAA\"", Ambiguous),
        ("multipart/form-data; boundary*=utf-8''AAA", Ambiguous),
        ("multipart/form-data; boundary=BBB; boundary*=utf-8''AAA", Ambiguous),
        ("multipart/form-data; boundary*0=AA; boundary*1=A", Ambiguous),
        // Werkzeug reads the token `AAA`, others the whole rest.
        ("multipart/form-data; boundary=AAA (comment)", Ambiguous),
        ("multipart/form-data; boundary=AAA BBB", Ambiguous),
        ("multipart/form-data (comment); boundary=AAA", Ambiguous),
        ("multipart/form-data; boundary=\"AAA", Ambiguous),
        ("multipart/form-data; boundary=", Ambiguous),
        // charset: anything but UTF-8 / US-ASCII, on every type the filter reads.
        ("application/json; charset=utf-7", Encoded),
        ("application/json; charset=UTF-16", Encoded),
        ("application/json; charset=\"utf-16le\"", Encoded),
        ("application/vnd.api+json; charset=utf-32", Encoded),
        ("application/json; charset=iso-8859-1", Encoded),
        ("application/json; charset=x-unknown", Encoded),
        ("application/json; charset=", Ambiguous),
        ("application/x-www-form-urlencoded; charset=utf-7", Encoded),
        ("application/x-www-form-urlencoded; charset=ISO-8859-1", Encoded),
        ("multipart/form-data; boundary=AAA; charset=shift_jis", Encoded),
        ("application/json; charset=utf-8; charset=utf-7", Ambiguous),
        // Issue 30: parameters formidable reads with regular expressions, and any other.
        ("application/x-www-form-urlencoded; x=multipart; boundary=B", Ambiguous),
        ("application/json; boundary=B", Ambiguous),
        ("multipart/form-data; x-boundary=A; boundary=B", Ambiguous),
        ("multipart/form-data; boundary=B; x=urlencoded", Ambiguous),
        ("application/json; x=1", Ambiguous),
        ("application/json; charset*=utf-8''utf-7", Ambiguous),
    ];
    for (ct, why) in cases {
        assert_eq!(Format::from_content_type(Some(ct.as_bytes())), Format::Unread(*why), "{ct:?}");
    }
    // A body under such a type is unreadable, not "no email".
    let s = sources(&["/email"], &["email"]);
    let kind = kind_of(&[b"application/json; charset=utf-7".to_vec()], &[]);
    let body = br#"{"email":"x+AEA-mailinator.com+ACIALAAiAHoAIgA6ACI-@gmail.com"}"#;
    assert_eq!(from_body(&kind, body, &s), Extracted::Unreadable(Unreadable::Encoded));
}

/// Issue 13 item 2: a body of a type no configured source reads, an encoded body, two content
/// types: not read, so a non-empty one is unreadable rather than "no email".
#[test]
fn body_kind_for_request() {
    let v = |s: &str| vec![s.as_bytes().to_vec()];
    let two = vec![b"application/json".to_vec(), b"application/x-www-form-urlencoded".to_vec()];
    let same_twice = vec![b"application/json".to_vec(), b"application/json".to_vec()];
    type Values = Vec<Vec<u8>>;
    let cases: Vec<(Values, Values, BodyKind)> = vec![
        (v("application/json"), vec![], BodyKind::of(Format::Json)),
        (v("application/json"), v("identity"), BodyKind::of(Format::Json)),
        (v("application/json"), v("gzip"), BodyKind { format: Format::Json, codings: vec![Coding::Gzip] }),
        (v("application/json"), v(" GZIP "), BodyKind { format: Format::Json, codings: vec![Coding::Gzip] }),
        (v("application/json"), v("zstd"), BodyKind::of(Format::Unread(Unreadable::Encoded))),
        (vec![], vec![], BodyKind::of(Format::Unread(Unreadable::UnreadType))),
        (v("text/plain"), vec![], BodyKind::of(Format::Unread(Unreadable::UnreadType))),
        (two, vec![], BodyKind::of(Format::Unread(Unreadable::Ambiguous))),
        (same_twice, vec![], BodyKind::of(Format::Json)),
    ];
    for (ct, ce, expected) in &cases {
        assert_eq!(&kind_of(ct, ce), expected, "{ct:?} {ce:?}");
    }
    // Every body is read, whichever sources are configured: its addresses are judged.
    let json_only = sources(&["/email"], &[]);
    let kind = kind_of(&v("application/x-www-form-urlencoded"), &[]);
    let read = read_body(&kind, b"email=x@mailinator.com", &json_only, 1 << 20);
    assert_eq!(read.configured, Extracted::NotFound);
    assert_eq!(names(&read), ["mailinator.com"]);
    assert_eq!(from_body(&kind, b"", &json_only), Extracted::NotFound, "an empty body holds no email");
}
