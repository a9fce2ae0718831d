//! Compressed bodies and messages: `Content-Encoding`, `grpc-encoding` and
//! `connect-content-encoding` gzip, deflate (zlib-wrapped or raw, as Express takes both) and br.
//!
//! Every decoder writes into a buffer that never grows past the caller's bound: a bomb (50 MiB of
//! zeros in 51 KB) is refused after `max + 1` bytes, never inflated whole, so the gateway's memory
//! is bounded by the body limit whatever the ratio.

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};

use super::Unreadable;

/// A content coding the reader decodes (`br` with the `brotli` feature: the Wasm filter goes
/// without, its module would be over 1 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Gzip,
    /// zlib-wrapped or raw deflate, told apart by the zlib header.
    Deflate,
    Brotli,
}

impl Coding {
    /// One coding name (any case, padded): `None` for `identity`; a name the reader does not
    /// decode (`zstd`, `compress`, `snappy`...) is [`Unreadable::Encoded`].
    pub fn parse(name: &[u8]) -> Result<Option<Coding>, Unreadable> {
        let name = std::str::from_utf8(name).map_err(|_| Unreadable::Encoded)?.trim().to_ascii_lowercase();
        match name.as_str() {
            "identity" => Ok(None),
            "gzip" | "x-gzip" => Ok(Some(Coding::Gzip)),
            "deflate" => Ok(Some(Coding::Deflate)),
            #[cfg(feature = "brotli")]
            "br" => Ok(Some(Coding::Brotli)),
            _ => Err(Unreadable::Encoded),
        }
    }

    /// Every coding of a header's values (`gzip, br` and two lines alike), in the order applied.
    /// More than [`MAX_CODINGS`] is refused: no app undoes more.
    pub fn list(values: &[Vec<u8>]) -> Result<Vec<Coding>, Unreadable> {
        let mut codings = Vec::new();
        for value in values {
            for name in value.split(|&b| b == b',') {
                if let Some(coding) = Coding::parse(name)? {
                    codings.push(coding);
                }
            }
        }
        if codings.len() > MAX_CODINGS {
            return Err(Unreadable::TooComplex);
        }
        Ok(codings)
    }
}

/// Codings undone on one body (Express and Django undo one).
pub const MAX_CODINGS: usize = 2;

/// `input` decoded, at most `max` bytes; more is [`Unreadable::TooComplex`], a stream that does
/// not decode (or has bytes after its end) [`Unreadable::Malformed`].
pub fn decode(coding: Coding, input: &[u8], max: usize) -> Result<Vec<u8>, Unreadable> {
    match coding {
        Coding::Gzip => gunzip(input, max),
        Coding::Deflate => {
            let zlib =
                input.len() >= 2 && input[0] & 0x0F == 8 && (u16::from(input[0]) << 8 | u16::from(input[1])) % 31 == 0;
            let mut out = Vec::new();
            let used = inflate(input, zlib, max, &mut out)?;
            if used != input.len() {
                return Err(Unreadable::Malformed);
            }
            Ok(out)
        }
        #[cfg(feature = "brotli")]
        Coding::Brotli => unbrotli(input, max),
        #[cfg(not(feature = "brotli"))]
        Coding::Brotli => Err(Unreadable::Encoded),
    }
}

/// Every undone in reverse order of application.
pub fn decode_all(codings: &[Coding], input: &[u8], max: usize) -> Result<Vec<u8>, Unreadable> {
    let mut body = input.to_vec();
    for coding in codings.iter().rev() {
        body = decode(*coding, &body, max)?;
    }
    Ok(body)
}

/// RFC 1952, one member after another (Node's zlib and Python's gzip read them all).
fn gunzip(mut input: &[u8], max: usize) -> Result<Vec<u8>, Unreadable> {
    let mut out = Vec::new();
    if input.is_empty() {
        return Err(Unreadable::Malformed);
    }
    while !input.is_empty() {
        let header = gzip_header(input).ok_or(Unreadable::Malformed)?;
        let used = inflate(&input[header..], false, max, &mut out)?;
        let trailer = header + used + 8; // CRC-32 and ISIZE
        input = input.get(trailer..).ok_or(Unreadable::Malformed)?;
    }
    Ok(out)
}

/// The length of a gzip member's header, when it is one.
fn gzip_header(input: &[u8]) -> Option<usize> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if input.len() < 10 || input[..3] != [0x1f, 0x8b, 8] || input[3] & 0xE0 != 0 {
        return None;
    }
    let flags = input[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = usize::from(u16::from_le_bytes([*input.get(at)?, *input.get(at + 1)?]));
        at += 2 + len;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += input.get(at..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    (at <= input.len()).then_some(at)
}

/// Inflates one deflate stream (zlib-wrapped or raw) from the start of `input`, appending to
/// `out` while it holds at most `max` bytes; returns the input bytes the stream took.
fn inflate(input: &[u8], zlib: bool, max: usize, out: &mut Vec<u8>) -> Result<usize, Unreadable> {
    const WINDOW: usize = 32 * 1024;
    let mut state = DecompressorOxide::new();
    let flags = if zlib { inflate_flags::TINFL_FLAG_PARSE_ZLIB_HEADER } else { 0 }
        | inflate_flags::TINFL_FLAG_HAS_MORE_INPUT
        | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let start = out.len();
    let mut buffer = vec![0u8; start + WINDOW];
    buffer[..start].copy_from_slice(out);
    let mut read = 0;
    let mut written = start;
    loop {
        let more = if read < input.len() { flags } else { flags & !inflate_flags::TINFL_FLAG_HAS_MORE_INPUT };
        let (status, used, made) = decompress(&mut state, &input[read..], &mut buffer, written, more);
        read += used;
        written += made;
        if written > max {
            return Err(Unreadable::TooComplex);
        }
        match status {
            TINFLStatus::Done => {
                buffer.truncate(written);
                *out = buffer;
                return Ok(read);
            }
            TINFLStatus::HasMoreOutput => {
                let grown = (buffer.len() * 2).min(max.saturating_add(WINDOW + 1));
                if grown <= buffer.len() {
                    return Err(Unreadable::TooComplex);
                }
                buffer.resize(grown, 0);
            }
            TINFLStatus::NeedsMoreInput if read < input.len() => {}
            _ => return Err(Unreadable::Malformed),
        }
    }
}

#[cfg(feature = "brotli")]
fn unbrotli(input: &[u8], max: usize) -> Result<Vec<u8>, Unreadable> {
    use std::io::Read;
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut reader = brotli_decompressor::Decompressor::new(input, 4096).take(limit);
    reader.read_to_end(&mut out).map_err(|_| Unreadable::Malformed)?;
    if out.len() > max {
        return Err(Unreadable::TooComplex);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use miniz_oxide::deflate::{compress_to_vec, compress_to_vec_zlib};

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
        out.extend(compress_to_vec(data, 6));
        out.extend([0; 8]);
        out
    }

    #[test]
    #[cfg(feature = "brotli")]
    fn each_coding_decodes() {
        let body = br#"{"email":"bob@mailinator.com"}"#;
        assert_eq!(decode(Coding::Gzip, &gzip(body), 1000).unwrap(), body);
        assert_eq!(decode(Coding::Deflate, &compress_to_vec_zlib(body, 6), 1000).unwrap(), body);
        assert_eq!(decode(Coding::Deflate, &compress_to_vec(body, 6), 1000).unwrap(), body, "raw deflate");
        let two = [gzip(b"ab"), gzip(b"cd")].concat();
        assert_eq!(decode(Coding::Gzip, &two, 1000).unwrap(), b"abcd", "members one after another");
        let mut br = Vec::new();
        {
            let mut w = brotli_encoder(&mut br);
            std::io::Write::write_all(&mut w, body).unwrap();
        }
        assert_eq!(decode(Coding::Brotli, &br, 1000).unwrap(), body);
    }

    /// A tiny brotli stream writer for the test: an uncompressed meta-block stream.
    fn brotli_encoder(out: &mut Vec<u8>) -> impl std::io::Write + '_ {
        struct Raw<'a>(&'a mut Vec<u8>);
        impl std::io::Write for Raw<'_> {
            fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
                // WBITS=16 (bit 0 = 0), then one uncompressed meta-block, then an empty last one.
                let mut bits = BitWriter::default();
                bits.put(0, 1); // window 16
                bits.put(0, 1); // ISLAST = 0
                bits.put(0, 2); // MNIBBLES = 4
                bits.put((data.len() - 1) as u64, 16); // MLEN - 1
                bits.put(1, 1); // ISUNCOMPRESSED
                bits.align();
                self.0.extend(bits.bytes);
                self.0.extend_from_slice(data);
                self.0.push(0b11); // ISLAST, ISLASTEMPTY
                Ok(data.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        Raw(out)
    }

    #[derive(Default)]
    struct BitWriter {
        bytes: Vec<u8>,
        used: u32,
    }

    impl BitWriter {
        fn put(&mut self, value: u64, count: u32) {
            for i in 0..count {
                if self.used.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                let bit = ((value >> i) & 1) as u8;
                *self.bytes.last_mut().unwrap() |= bit << (self.used % 8);
                self.used += 1;
            }
        }
        fn align(&mut self) {
            self.used = self.used.div_ceil(8) * 8;
        }
    }

    #[test]
    fn a_bomb_stops_at_the_bound() {
        let zeros = vec![0u8; 50 * 1024 * 1024];
        let bomb = gzip(&zeros);
        assert!(bomb.len() < 100 * 1024, "{}", bomb.len());
        assert_eq!(decode(Coding::Gzip, &bomb, 65536), Err(Unreadable::TooComplex));
        assert_eq!(decode(Coding::Deflate, &compress_to_vec_zlib(&zeros, 9), 65536), Err(Unreadable::TooComplex));
    }

    #[test]
    fn what_does_not_decode_is_malformed() {
        assert_eq!(decode(Coding::Gzip, b"not gzip at all", 1000), Err(Unreadable::Malformed));
        let mut cut = gzip(b"hello world");
        cut.truncate(cut.len() - 12);
        assert_eq!(decode(Coding::Gzip, &cut, 1000), Err(Unreadable::Malformed));
        let mut trailing = compress_to_vec_zlib(b"hello", 6);
        trailing.extend(b"junk");
        assert_eq!(decode(Coding::Deflate, &trailing, 1000), Err(Unreadable::Malformed));
        assert_eq!(decode(Coding::Brotli, b"\xff\xff\xff", 1000), Err(Unreadable::Malformed));
    }

    #[test]
    fn coding_names() {
        let v = |s: &str| vec![s.as_bytes().to_vec()];
        assert_eq!(Coding::list(&v("gzip")), Ok(vec![Coding::Gzip]));
        assert_eq!(Coding::list(&v(" identity ")), Ok(vec![]));
        assert_eq!(Coding::list(&v("deflate, br")), Ok(vec![Coding::Deflate, Coding::Brotli]));
        assert_eq!(Coding::list(&v("zstd")), Err(Unreadable::Encoded));
        assert_eq!(Coding::list(&v("gzip, gzip, gzip")), Err(Unreadable::TooComplex));
    }
}
