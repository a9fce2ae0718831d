//! Base64 decoding as lenient as any reader of it: the standard and URL-safe alphabets, padded
//! or not, trailing bits ignored. Written out (30 lines) rather than taken from the `base64`
//! crate, whose generic engines cost the Wasm filter about as much as its whole 1 MiB budget had
//! left.

/// The value of a base64 character of either alphabet.
fn value(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    }))
}

/// `text` decoded, appended to `out`; `None` for a character outside the alphabets, padding
/// anywhere but at the end (at most two), or a length no encoder writes (4n + 1).
pub fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let data = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    if data.len() % 4 == 1 {
        return None;
    }
    for chunk in data.chunks(4) {
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= value(c)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(())
}

/// `text` decoded.
pub fn decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    decode_into(text, &mut out).map(|()| out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The standard alphabet, padded or not (`url_safe`: `-` and `_`).
    pub fn encode(data: &[u8], padded: bool) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let mut bits = 0u32;
            for (i, &b) in chunk.iter().enumerate() {
                bits |= u32::from(b) << (16 - 8 * i);
            }
            for i in 0..=chunk.len() {
                out.push(char::from(ALPHABET[(bits >> (18 - 6 * i) & 63) as usize]));
            }
            if padded {
                out.push_str(&"=="[..3 - chunk.len()]);
            }
        }
        out
    }

    #[test]
    fn encodes_what_it_decodes() {
        for data in [&b""[..], b"a", b"ab", b"abc", b"\xfb\xff\xbf bob@x.com"] {
            assert_eq!(decode(encode(data, true).as_bytes()).as_deref(), Some(data));
            assert_eq!(decode(encode(data, false).as_bytes()).as_deref(), Some(data));
        }
    }

    #[test]
    fn both_alphabets_padded_or_not() {
        assert_eq!(decode(b"Ym9iQHguY29t"), Some(b"bob@x.com".to_vec()));
        assert_eq!(decode(b"YQ=="), Some(b"a".to_vec()));
        assert_eq!(decode(b"YQ"), Some(b"a".to_vec()));
        assert_eq!(decode(b"YWI="), Some(b"ab".to_vec()));
        assert_eq!(decode(b"-_-_"), Some(vec![0xfb, 0xff, 0xbf]));
        assert_eq!(decode(b"+/+/"), Some(vec![0xfb, 0xff, 0xbf]));
        assert_eq!(decode(b""), Some(vec![]));
        for bad in [&b"Y"[..], b"Y===", b"YQ=a", b"a b=", b"!!!!"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}
