//! Which protocol a signup request speaks, so that a refusal answers in the words its client
//! library reads ([`crate::signup::LocalReply::render`]). Read from the request's headers
//! alone, the same way in the filter and ext_authz.

/// The protocol of a request, as far as its refusal is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Anything else: a JSON, form or multipart POST. Today's replies, unchanged.
    #[default]
    Rest,
    /// `application/grpc`, `application/grpc+proto`, ...
    Grpc,
    /// `application/grpc-web[+codec]` or `application/grpc-web-text[+codec]` (`text`: base64);
    /// `content_type` is the request's media type, answered as the response's.
    GrpcWeb { content_type: String, text: bool },
    /// Connect unary: `application/proto`, or any request with `connect-protocol-version`.
    ConnectUnary,
    /// Connect streaming: `application/connect+json`, `+proto`, ...; `content_type` as for gRPC-Web.
    ConnectStreaming { content_type: String },
    /// A GraphQL route; `response_type`: the client accepts `application/graphql-response+json`.
    GraphQl { response_type: bool },
}

impl Protocol {
    /// The protocol of a request with these headers (`values_of`: every value of a header,
    /// by lower-case name). `graphql_route`: the request is on one of the routes the gateway
    /// knows as GraphQL (`graphql.paths`).
    pub fn of(values_of: &dyn Fn(&str) -> Vec<Vec<u8>>, graphql_route: bool) -> Self {
        let content_type = values_of("content-type").into_iter().next().and_then(|v| media_type(&v));
        let media = content_type.as_deref().unwrap_or_default();
        let framed = |base: &str| matches!(subtype(media, base), Some(Codec::Bare | Codec::Named));
        if framed("application/grpc") {
            return Protocol::Grpc;
        }
        for (base, text) in [("application/grpc-web-text", true), ("application/grpc-web", false)] {
            if framed(base) {
                return Protocol::GrpcWeb { content_type: media.to_owned(), text };
            }
        }
        if let Some(Codec::Named) = subtype(media, "application/connect") {
            return Protocol::ConnectStreaming { content_type: media.to_owned() };
        }
        if media == "application/proto" || !values_of("connect-protocol-version").is_empty() {
            return Protocol::ConnectUnary;
        }
        if graphql_route {
            let accepts = |v: &Vec<u8>| contains_ignore_case(v, b"application/graphql-response+json");
            return Protocol::GraphQl { response_type: values_of("accept").iter().any(accepts) };
        }
        Protocol::Rest
    }
}

/// How a media type continues after a base such as `application/grpc`.
enum Codec {
    /// Exactly the base.
    Bare,
    /// `+` and a codec name (letters, digits, `.`, `_`, `-`).
    Named,
    /// Anything else (`application/grpc-web` after `application/grpc`, an empty codec, ...).
    Other,
}

fn subtype(media: &str, base: &str) -> Option<Codec> {
    let rest = media.strip_prefix(base)?;
    Some(match rest.strip_prefix('+') {
        None if rest.is_empty() => Codec::Bare,
        Some(codec) if !codec.is_empty() && codec.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) => {
            Codec::Named
        }
        _ => Codec::Other,
    })
}

/// A `content-type` value's media type: lower case, without parameters or surrounding spaces.
fn media_type(value: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(value).ok()?;
    let media = text.split(';').next()?.trim();
    Some(media.to_ascii_lowercase())
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(headers: &[(&str, &str)], graphql_route: bool, expected: Protocol) {
        let values_of = |name: &str| -> Vec<Vec<u8>> {
            headers.iter().filter(|(n, _)| *n == name).map(|(_, v)| v.as_bytes().to_vec()).collect()
        };
        assert_eq!(Protocol::of(&values_of, graphql_route), expected, "{headers:?} graphql={graphql_route}");
    }

    fn web(content_type: &str, text: bool) -> Protocol {
        Protocol::GrpcWeb { content_type: content_type.to_owned(), text }
    }

    #[test]
    fn grpc_and_its_relatives_by_content_type() {
        check(&[("content-type", "application/grpc")], false, Protocol::Grpc);
        check(&[("content-type", "application/grpc+proto")], true, Protocol::Grpc);
        check(&[("content-type", "Application/GRPC+json; charset=utf-8")], false, Protocol::Grpc);
        check(&[("content-type", "application/grpc-web")], false, web("application/grpc-web", false));
        check(&[("content-type", "application/grpc-web+proto")], false, web("application/grpc-web+proto", false));
        check(&[("content-type", "application/grpc-web-text")], false, web("application/grpc-web-text", true));
        check(
            &[("content-type", "application/grpc-web-text+proto")],
            false,
            web("application/grpc-web-text+proto", true),
        );
        let streaming = |t: &str| Protocol::ConnectStreaming { content_type: t.to_owned() };
        check(&[("content-type", "application/connect+json")], false, streaming("application/connect+json"));
        check(&[("content-type", "application/connect+proto")], false, streaming("application/connect+proto"));
        // Near misses are not gRPC.
        for other in ["application/grpcx", "application/grpc+", "application/grpc-webx", "application/connect"] {
            check(&[("content-type", other)], false, Protocol::Rest);
        }
    }

    #[test]
    fn connect_unary_by_content_type_or_version_header() {
        check(&[("content-type", "application/proto")], false, Protocol::ConnectUnary);
        check(
            &[("content-type", "application/json"), ("connect-protocol-version", "1")],
            false,
            Protocol::ConnectUnary,
        );
        // Connect's own framing wins over a GraphQL route.
        check(&[("content-type", "application/proto")], true, Protocol::ConnectUnary);
    }

    #[test]
    fn graphql_by_route_with_the_accepted_response_type() {
        check(&[("content-type", "application/json")], true, Protocol::GraphQl { response_type: false });
        check(
            &[("content-type", "application/json"), ("accept", "application/graphql-response+json, application/json")],
            true,
            Protocol::GraphQl { response_type: true },
        );
        check(&[("accept", "application/graphql-response+json")], false, Protocol::Rest);
    }

    #[test]
    fn everything_else_is_rest() {
        check(&[], false, Protocol::Rest);
        check(&[("content-type", "application/json")], false, Protocol::Rest);
        check(&[("content-type", "application/x-www-form-urlencoded")], false, Protocol::Rest);
        check(&[("content-type", "multipart/form-data; boundary=x")], false, Protocol::Rest);
        check(&[("content-type", "\u{ff}")], false, Protocol::Rest);
    }
}
