//! Byte encodings the corpus sends: gzip and zlib (stored deflate blocks, valid for every
//! inflater, no dependency), UTF-16 and UTF-32.

fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// Raw deflate made of stored (uncompressed) blocks.
fn deflate_stored(data: &[u8]) -> Vec<u8> {
    let chunks: Vec<&[u8]> = if data.is_empty() { vec![data] } else { data.chunks(65535).collect() };
    let mut out = Vec::with_capacity(data.len() + 5 * chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = c.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend_from_slice(c);
    }
    out
}

/// `Content-Encoding: gzip` (RFC 1952).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(deflate_stored(data));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// `Content-Encoding: deflate` (the zlib format, RFC 1950).
pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    out.extend(deflate_stored(data));
    out.extend(adler32(data).to_be_bytes());
    out
}

pub fn utf16(s: &str, little_endian: bool, bom: bool) -> Vec<u8> {
    let units = bom.then_some(0xFEFF).into_iter().chain(s.encode_utf16());
    units.flat_map(|u| if little_endian { u.to_le_bytes() } else { u.to_be_bytes() }).collect()
}

pub fn utf32le(s: &str) -> Vec<u8> {
    s.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect()
}
