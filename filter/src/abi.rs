//! The proxy-wasm ABI's header-map encoding, written out with bounds checks.
//!
//! The SDK's own decoder indexes slices directly and `unwrap`s UTF-8 conversions, so a header
//! value with obs-text bytes (legal in HTTP/1.1) would panic the VM. This one returns `None` on
//! anything malformed and keeps values as bytes. Pure code, tested natively; `wasm_host.rs` uses it.
//!
//! Layout: `u32` count, then per pair `u32` key length and `u32` value length, then per pair the
//! key bytes, a NUL, the value bytes, a NUL. Integers are little-endian.

/// Header names and values as the proxy holds them (values may be any bytes).
pub type HeaderPairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Encodes pairs for `proxy_send_local_response` and friends.
pub fn serialize_map(pairs: &[(&str, &str)]) -> Vec<u8> {
    let data: usize = pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut out = Vec::with_capacity(4 + pairs.len() * 8 + data);
    out.extend_from_slice(&len_u32(pairs.len()).to_le_bytes());
    for (k, v) in pairs {
        out.extend_from_slice(&len_u32(k.len()).to_le_bytes());
        out.extend_from_slice(&len_u32(v.len()).to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

/// Decodes what `proxy_get_header_map_pairs` returns. Empty input is an empty map.
pub fn deserialize_map(bytes: &[u8]) -> Option<HeaderPairs> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let count = read_u32(bytes, 0)? as usize;
    let sizes_end = count.checked_mul(8)?.checked_add(4)?;
    if sizes_end > bytes.len() {
        return None;
    }
    let mut pairs = Vec::with_capacity(count);
    let mut p = sizes_end;
    for n in 0..count {
        let key_len = read_u32(bytes, 4 + n * 8)? as usize;
        let value_len = read_u32(bytes, 8 + n * 8)? as usize;
        let key = take(bytes, &mut p, key_len)?;
        let value = take(bytes, &mut p, value_len)?;
        pairs.push((key.to_vec(), value.to_vec()));
    }
    Some(pairs)
}

/// Lengths on the ABI are `u32`; a header longer than 4 GiB cannot occur in a proxy.
fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(raw))
}

/// `len` bytes at `*p` followed by a NUL; advances `*p` past the NUL.
fn take<'a>(bytes: &'a [u8], p: &mut usize, len: usize) -> Option<&'a [u8]> {
    let end = p.checked_add(len)?;
    let item = bytes.get(*p..end)?;
    if bytes.get(end) != Some(&0) {
        return None;
    }
    *p = end + 1;
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(pairs: &[(&str, &str)]) -> HeaderPairs {
        pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn round_trips() {
        for pairs in [
            &[][..],
            &[(":status", "200")][..],
            &[("content-type", "application/json"), ("x-empty", ""), ("", "v")][..],
        ] {
            let bytes = serialize_map(pairs);
            assert_eq!(deserialize_map(&bytes), Some(owned(pairs)), "{pairs:?}");
        }
        assert_eq!(deserialize_map(&[]), Some(vec![]));
    }

    #[test]
    fn keeps_non_utf8_values() {
        let mut bytes = serialize_map(&[("x-email", "ab")]);
        let at = bytes.len() - 3;
        bytes[at] = 0xff;
        assert_eq!(deserialize_map(&bytes), Some(vec![(b"x-email".to_vec(), vec![0xff, b'b'])]));
    }

    #[test]
    fn malformed_input_is_none_not_a_panic() {
        let good = serialize_map(&[("a", "b"), ("cd", "ef")]);
        // Every truncation of a valid map is rejected.
        for n in 1..good.len() {
            assert_eq!(deserialize_map(&good[..n]), None, "truncated to {n}");
        }
        // A count far beyond the data, and lengths that overflow.
        assert_eq!(deserialize_map(&u32::MAX.to_le_bytes()), None);
        let mut huge = 1u32.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(deserialize_map(&huge), None);
        // Missing NUL terminator.
        let mut no_nul = good.clone();
        let last = no_nul.len() - 1;
        no_nul[last] = b'x';
        assert_eq!(deserialize_map(&no_nul), None);
    }
}
