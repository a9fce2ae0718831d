//! gRPC, gRPC-Web and Connect streaming bodies: messages in 5-byte length-prefixed frames (a flag
//! byte, a big-endian u32 length), each one compressed when its flag says so, with the coding
//! the request names (`grpc-encoding`, `connect-content-encoding`).
//!
//! A signup is one call: a gRPC or gRPC-Web request is read as exactly one message (a unary
//! call); Connect streaming as at most [`MAX_MESSAGES`]. A length that lies, bytes after the
//! last frame, a flag a client never sends (a gRPC-Web trailer frame, Connect's end-stream), a
//! compressed message without a coding, a second message on a gRPC route: all refused as
//! [`Unreadable::Malformed`], never read in part.

use super::Unreadable;
use super::decode::{self, Coding};

/// Messages read from one Connect streaming request.
pub const MAX_MESSAGES: usize = 16;

/// How the frames of a request are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `application/grpc` and gRPC-Web (binary): one message.
    Grpc,
    /// `application/connect+…`: up to [`MAX_MESSAGES`].
    Connect,
}

/// The messages of `body`, each decoded with `coding` when its frame is compressed; at most
/// `max` bytes each once decoded.
pub fn messages(body: &[u8], framing: Framing, coding: Option<Coding>, max: usize) -> Result<Vec<Vec<u8>>, Unreadable> {
    let most = match framing {
        Framing::Grpc => 1,
        Framing::Connect => MAX_MESSAGES,
    };
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (flags, len) = match rest {
            [flags, a, b, c, d, ..] => (*flags, u32::from_be_bytes([*a, *b, *c, *d]) as usize),
            _ => return Err(Unreadable::Malformed),
        };
        let message = rest.get(5..5usize.saturating_add(len)).ok_or(Unreadable::Malformed)?;
        rest = &rest[5 + len..];
        if flags & !1 != 0 || out.len() == most {
            return Err(Unreadable::Malformed);
        }
        let message = match (flags & 1 == 1, coding) {
            (false, _) => message.to_vec(),
            (true, Some(coding)) => decode::decode(coding, message, max)?,
            (true, None) => return Err(Unreadable::Malformed),
        };
        out.push(message);
    }
    Ok(out)
}

/// `application/grpc-web-text`: the frames in base64, possibly in several padded chunks (a
/// client may encode each write on its own).
pub fn from_text(body: &[u8]) -> Result<Vec<u8>, Unreadable> {
    use base64::Engine;
    let text: Vec<u8> = body.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.split_inclusive(|&b| b == b'=').filter(|c| *c != b"=") {
        let chunk = chunk.strip_suffix(b"=").unwrap_or(chunk);
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode_vec(chunk, &mut out)
            .map_err(|_| Unreadable::Malformed)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(flags: u8, message: &[u8]) -> Vec<u8> {
        let mut out = vec![flags];
        out.extend((message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
        out
    }

    #[test]
    fn one_grpc_message() {
        assert_eq!(messages(&frame(0, b"abc"), Framing::Grpc, None, 100), Ok(vec![b"abc".to_vec()]));
        assert_eq!(messages(&frame(0, b""), Framing::Grpc, None, 100), Ok(vec![Vec::new()]));
        let two = [frame(0, b"a"), frame(0, b"b")].concat();
        assert_eq!(messages(&two, Framing::Grpc, None, 100), Err(Unreadable::Malformed), "a second message");
        assert_eq!(messages(&two, Framing::Connect, None, 100).map(|m| m.len()), Ok(2));
    }

    #[test]
    fn lies_and_leftovers_are_malformed() {
        let mut lying = frame(0, b"abc");
        lying[4] = 9;
        assert_eq!(messages(&lying, Framing::Grpc, None, 100), Err(Unreadable::Malformed));
        let mut trailing = frame(0, b"abc");
        trailing.extend(b"xy");
        assert_eq!(messages(&trailing, Framing::Grpc, None, 100), Err(Unreadable::Malformed));
        assert_eq!(
            messages(&frame(0x80, b""), Framing::Grpc, None, 100),
            Err(Unreadable::Malformed),
            "a trailer frame"
        );
        assert_eq!(messages(&frame(2, b"{}"), Framing::Connect, None, 100), Err(Unreadable::Malformed), "end-stream");
        assert_eq!(messages(&frame(1, b"x"), Framing::Grpc, None, 100), Err(Unreadable::Malformed), "no coding");
        let huge = [0u8, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(messages(&huge, Framing::Grpc, None, 100), Err(Unreadable::Malformed));
    }

    #[test]
    fn compressed_messages_decode() {
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
        gz.extend(miniz_oxide::deflate::compress_to_vec(b"hello", 6));
        gz.extend([0; 8]);
        assert_eq!(messages(&frame(1, &gz), Framing::Grpc, Some(Coding::Gzip), 100), Ok(vec![b"hello".to_vec()]));
    }

    #[test]
    fn text_in_chunks() {
        use base64::Engine;
        let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
        let body = format!("{}{}", b64(&frame(0, b"ab")), b64(b"x"));
        let mut expected = frame(0, b"ab");
        expected.push(b'x');
        assert_eq!(from_text(body.as_bytes()), Ok(expected));
        assert_eq!(from_text(b"!!!!"), Err(Unreadable::Malformed));
    }
}
