//! Issue 43: the bodies a mesh carries, read in full, through the one entry point the gateways
//! use (`BodyKind::for_request` + `read_body`).

use base64::Engine;

use super::protobuf::tests::string_field;
use super::*;

const MAX: usize = 65536;

fn kind(headers: &[(&str, &str)]) -> BodyKind {
    BodyKind::for_request(&|name| {
        headers.iter().filter(|(n, _)| *n == name).map(|(_, v)| v.as_bytes().to_vec()).collect()
    })
}

fn sources() -> EmailSources {
    EmailSources { proto_fields: vec!["1".to_owned()], ..EmailSources::default() }
}

fn read(headers: &[(&str, &str)], body: &[u8]) -> ToJudge {
    read_body(&kind(headers), body, &sources(), MAX).to_judge(DEFAULT_MAX_DOMAINS)
}

fn names(judged: &ToJudge) -> Vec<String> {
    judged.names.iter().map(|n| n.domain.to_string()).collect()
}

fn frame(flags: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend((message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, 6));
    out.extend([0; 8]);
    out
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A signup message: the address at field 1, a profile (field 3) with an invitee.
fn signup(email: &str, invitee: &str) -> Vec<u8> {
    [string_field(1, email.as_bytes()), string_field(3, &string_field(2, invitee.as_bytes()))].concat()
}

#[test]
fn grpc_and_its_relatives() {
    let message = signup("ann@gmail.com", "bob@mailinator.com");
    type Headers<'a> = Vec<(&'a str, &'a str)>;
    let cases: Vec<(Headers, Vec<u8>)> = vec![
        (vec![("content-type", "application/grpc")], frame(0, &message)),
        (vec![("content-type", "application/grpc+proto")], frame(0, &message)),
        (vec![("content-type", "application/grpc"), ("grpc-encoding", "gzip")], frame(1, &gzip(&message))),
        (vec![("content-type", "application/grpc-web+proto")], frame(0, &message)),
        (vec![("content-type", "application/grpc-web-text")], b64(&frame(0, &message)).into_bytes()),
        (vec![("content-type", "application/proto")], message.clone()),
        (vec![("content-type", "application/proto"), ("content-encoding", "gzip")], gzip(&message)),
        (vec![("content-type", "application/connect+proto")], frame(0, &message)),
        (
            vec![("content-type", "application/connect+proto"), ("connect-content-encoding", "gzip")],
            frame(1, &gzip(&message)),
        ),
    ];
    for (headers, body) in cases {
        let judged = read(&headers, &body);
        assert_eq!(judged.problem, None, "{headers:?}");
        assert_eq!(judged.primary.as_ref().map(|p| p.to_string()), Some("ann@gmail.com".to_owned()), "{headers:?}");
        assert_eq!(names(&judged), ["gmail.com", "mailinator.com"], "{headers:?}");
    }
}

#[test]
fn framing_that_lies_is_refused() {
    let message = signup("ann@gmail.com", "bob@mailinator.com");
    let grpc = [("content-type", "application/grpc")];
    let unreadable = |headers: &[(&str, &str)], body: &[u8]| match read(headers, body).problem {
        Some(Problem::Unreadable(why)) => why,
        other => panic!("{headers:?}: {other:?}"),
    };
    assert_eq!(unreadable(&grpc, &[frame(0, &message), frame(0, &message)].concat()), Unreadable::Malformed);
    assert_eq!(unreadable(&grpc, &frame(0, &message)[..10]), Unreadable::Malformed);
    assert_eq!(unreadable(&grpc, &frame(1, &message)), Unreadable::Malformed, "compressed, no coding");
    let snappy = [("content-type", "application/grpc"), ("grpc-encoding", "snappy")];
    assert_eq!(unreadable(&snappy, &frame(0, &message)), Unreadable::Encoded);
    let bomb = gzip(&vec![0; 50 * 1024 * 1024]);
    let zipped = [("content-type", "application/json"), ("content-encoding", "gzip")];
    assert_eq!(unreadable(&zipped, &bomb), Unreadable::TooComplex);
    let grpc_gzip = [("content-type", "application/grpc"), ("grpc-encoding", "gzip")];
    assert_eq!(unreadable(&grpc_gzip, &frame(1, &bomb)), Unreadable::TooComplex);
    assert_eq!(unreadable(&grpc, &frame(0, b"\x0a\x09short")), Unreadable::Malformed);
}

#[test]
fn connect_json_and_its_bytes() {
    let owner = b64(br#"{"owner":"bob@mailinator.com"}"#);
    let body = format!(r#"{{"email":"ann@gmail.com","blob":"{owner}"}}"#);
    let judged = read(&[("content-type", "application/json")], body.as_bytes());
    assert_eq!(names(&judged), ["gmail.com", "mailinator.com"]);
    let streamed = frame(0, body.as_bytes());
    let judged = read(&[("content-type", "application/connect+json")], &streamed);
    assert_eq!(names(&judged), ["gmail.com", "mailinator.com"]);
    let zipped = read(&[("content-type", "application/json"), ("content-encoding", "gzip")], &gzip(body.as_bytes()));
    assert_eq!(names(&zipped), ["gmail.com", "mailinator.com"]);
}

#[test]
fn graphql_escapes_and_stringified_json() {
    let inline = r#"{"query":"mutation { signUp(email: \"bob\\u0040mailinator.com\") { id } }"}"#;
    assert_eq!(names(&read(&[("content-type", "application/json")], inline.as_bytes())), ["mailinator.com"]);
    let braced = r#"{"query":"mutation { signUp(email: \"bob\\u{40}mailinator.com\") { id } }"}"#;
    assert_eq!(names(&read(&[("content-type", "application/json")], braced.as_bytes())), ["mailinator.com"]);
    let document = r#"mutation { signUp(email: "bob\u0040mailinator.com", bio: """x@yopmail.com""") { id } }"#;
    assert_eq!(
        names(&read(&[("content-type", "application/graphql")], document.as_bytes())),
        ["yopmail.com", "mailinator.com"]
    );
    let form = "query=mutation%20%7B%20signUp%20%7D&variables=%7B%22email%22%3A%22bob%5Cu0040mailinator.com%22%7D";
    let ct = [("content-type", "application/x-www-form-urlencoded")];
    assert_eq!(names(&read(&ct, form.as_bytes())), ["mailinator.com"]);
    let operations = r#"{"query":"mutation($e: String!) { signUp(email: $e) { id } }","variables":{"e":"bob\\u0040mailinator.com"}}"#;
    let body = format!("--B\r\ncontent-disposition: form-data; name=\"operations\"\r\n\r\n{operations}\r\n--B--\r\n");
    let ct = [("content-type", "multipart/form-data; boundary=B")];
    assert_eq!(names(&read(&ct, body.as_bytes())), ["mailinator.com"]);
}

/// A symbol in a label is part of the label wherever the address is: every general category
/// but separators and controls (which no reader takes in a domain) keeps the name behind it.
#[test]
fn a_label_takes_every_general_category() {
    let kept = [
        ('A', "Lu"),
        ('a', "Ll"),
        ('ǅ', "Lt"),
        ('ʰ', "Lm"),
        ('あ', "Lo"),
        ('\u{301}', "Mn"),
        ('\u{903}', "Mc"),
        ('\u{20DD}', "Me"),
        ('٣', "Nd"),
        ('Ⅻ', "Nl"),
        ('½', "No"),
        ('‿', "Pc"),
        ('‐', "Pd"),
        ('「', "Ps"),
        ('」', "Pe"),
        ('«', "Pi"),
        ('»', "Pf"),
        ('¡', "Po"),
        ('∑', "Sm"),
        ('€', "Sc"),
        ('˜', "Sk"),
        ('❤', "So"),
        ('♥', "So"),
        ('\u{200B}', "Cf"),
        ('\u{E000}', "Co"),
        ('\u{378}', "Cn"),
        ('!', "Po ASCII"),
        ('~', "Sm ASCII"),
    ];
    for (c, category) in kept {
        for place in ["/user/email", "/second"] {
            let value = format!("bob@i{c}.mailinator.com");
            let body = match place {
                "/second" => serde_json::json!({"email": "ann@gmail.com", "second": value}),
                _ => serde_json::json!({"user": {"email": value}}),
            };
            let judged = read(&[("content-type", "application/json")], body.to_string().as_bytes());
            assert!(
                names(&judged).iter().any(|n| n.ends_with("mailinator.com")),
                "{category} {c:?} {place}: {:?}",
                names(&judged)
            );
        }
        let query = format!("email=bob%40i{}.mailinator.com", urlencode(c));
        let form = read(&[("content-type", "application/x-www-form-urlencoded")], query.as_bytes());
        assert!(names(&form).iter().any(|n| n.ends_with("mailinator.com")), "{category} {c:?} form");
    }
    for (c, category) in [(' ', "Zs"), ('\u{2028}', "Zl"), ('\u{2029}', "Zp"), ('\u{7}', "Cc")] {
        let mut d = Domains::default();
        d.consider(&format!("bob@i{c}.mailinator.com"));
        assert!(!d.as_slice().iter().any(|n| n.domain.as_str() == "mailinator.com"), "{category}: the tail stops");
    }
}

fn urlencode(c: char) -> String {
    c.to_string().bytes().map(|b| format!("%{b:02X}")).collect()
}
