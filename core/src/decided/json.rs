//! `GET /api/v1/decisions` read as a stream, straight into a [`PartsBuilder`]: the JSON's
//! structure is walked here a byte at a time from a buffer of [`BUFFER`] bytes, and each token
//! the answer's meaning hangs on (a string, `complete`'s boolean, a field this build does not
//! know) is handed whole to `serde_json`, so that strings, escapes, UTF-8 and literals are
//! decoded and checked by the same code as `serde_json::from_slice::<DecisionList>`. The rules
//! are the derived `Deserialize`'s: every field there, none twice, unknown fields ignored,
//! nothing after the object. (Only its sequence form, `[reviewer, operator, complete]`, which
//! no sidecar writes, is refused.) Why not `serde_json::from_reader`: a second instance of
//! serde_json's parser grew the Wasm module past its 1 MiB bound; this walk costs little.

use std::io::{self, Read};

use serde::de::IgnoredAny;

use super::{Listed, PartsBuilder};

/// The bytes read from the reader at a time (a host copies as many into the VM per read):
/// small, as a Wasm VM keeps whatever it touched; a few hundred reads for 100,000 names.
pub const BUFFER: usize = 16 * 1024;

const LIST: [&str; 3] = ["reviewer", "operator", "complete"];
const NAMES: [&str; 2] = ["block", "allow"];

/// Reads the whole answer from `reader` into `builder`; an error for anything
/// `serde_json::from_slice::<DecisionList>` would refuse, and for the reader's errors.
pub(super) fn read(reader: impl Read, builder: &mut PartsBuilder) -> io::Result<()> {
    let mut json = Json { reader, buf: vec![0; BUFFER], at: 0, len: 0, offset: 0, token: Vec::new() };
    json.whitespace()?;
    json.expect(b'{')?;
    let mut seen = [false; 3];
    json.members(&LIST, &mut seen, |json, field| match field {
        Some(i @ (0 | 1)) => json.names(builder, i == 0),
        Some(_) => json.value::<bool>().map(drop),
        None => json.value::<IgnoredAny>().map(drop),
    })?;
    json.whitespace()?;
    match json.peek()? {
        None => Ok(()),
        Some(_) => Err(json.error("trailing characters")),
    }
}

struct Json<R> {
    reader: R,
    buf: Vec<u8>,
    /// The next byte's index in `buf`, and how much of `buf` was read.
    at: usize,
    len: usize,
    /// Bytes consumed before `buf` (for error messages).
    offset: usize,
    /// The token being read, reused.
    token: Vec<u8>,
}

impl<R: Read> Json<R> {
    fn peek(&mut self) -> io::Result<Option<u8>> {
        while self.at == self.len {
            let n = match self.reader.read(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => other?,
            };
            if n == 0 {
                return Ok(None);
            }
            self.offset += self.len;
            (self.at, self.len) = (0, n.min(self.buf.len()));
        }
        Ok(self.buf.get(self.at).copied())
    }

    fn next(&mut self) -> io::Result<Option<u8>> {
        let byte = self.peek()?;
        self.at += usize::from(byte.is_some());
        Ok(byte)
    }

    fn error(&self, what: &str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("{what} at byte {}", self.offset + self.at))
    }

    fn whitespace(&mut self) -> io::Result<()> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek()? {
            self.at += 1;
        }
        Ok(())
    }

    fn expect(&mut self, byte: u8) -> io::Result<()> {
        match self.next()? {
            Some(b) if b == byte => Ok(()),
            _ => Err(self.error(&format!("expected `{}`", char::from(byte)))),
        }
    }

    /// An object's members after its `{`: each known field (its index in `fields`) or unknown
    /// one (`None`) to `value`, which reads its value; a known field twice or missing fails.
    fn members<const N: usize>(
        &mut self,
        fields: &[&'static str; N],
        seen: &mut [bool; N],
        mut value: impl FnMut(&mut Self, Option<usize>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.whitespace()?;
        if self.peek()? == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.whitespace()?;
                let key: String = self.value()?;
                let field = fields.iter().position(|f| *f == key);
                if let Some(i) = field
                    && std::mem::replace(&mut seen[i], true)
                {
                    return Err(self.error(&format!("duplicate field `{key}`")));
                }
                self.whitespace()?;
                self.expect(b':')?;
                self.whitespace()?;
                value(self, field)?;
                self.whitespace()?;
                match self.next()? {
                    Some(b',') => continue,
                    Some(b'}') => break,
                    _ => return Err(self.error("expected `,` or `}`")),
                }
            }
        }
        match seen.iter().position(|s| !s) {
            Some(i) => Err(self.error(&format!("missing field `{}`", fields[i]))),
            None => Ok(()),
        }
    }

    /// `DecidedNames` of the reviewers or the operator.
    fn names(&mut self, builder: &mut PartsBuilder, reviewer: bool) -> io::Result<()> {
        self.expect(b'{')?;
        let mut seen = [false; 2];
        self.members(&NAMES, &mut seen, |json, field| {
            let listed = match (reviewer, field) {
                (_, None) => return json.value::<IgnoredAny>().map(drop),
                (true, Some(0)) => Listed::ReviewerBlock,
                (true, Some(_)) => Listed::ReviewerAllow,
                (false, Some(0)) => Listed::OperatorBlock,
                (false, Some(_)) => Listed::OperatorAllow,
            };
            json.expect(b'[')?;
            json.whitespace()?;
            if json.peek()? == Some(b']') {
                json.at += 1;
                return Ok(());
            }
            loop {
                json.whitespace()?;
                let name: String = json.value()?;
                builder.push(listed, &name);
                json.whitespace()?;
                match json.next()? {
                    Some(b',') => continue,
                    Some(b']') => return Ok(()),
                    _ => return Err(json.error("expected `,` or `]`")),
                }
            }
        })
    }

    /// The next value, decoded by `serde_json` from its bytes.
    fn value<T: serde::de::DeserializeOwned>(&mut self) -> io::Result<T> {
        let start = self.offset + self.at;
        self.token.clear();
        self.token()?;
        serde_json::from_slice(&self.token)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e} in the value at byte {start}")))
    }

    /// Copies the next value's bytes into `self.token`: a string to its closing quote, an
    /// array or object to its closing bracket, anything else up to the next delimiter. What
    /// it holds is checked when it is decoded.
    fn token(&mut self) -> io::Result<()> {
        let mut depth = 0usize;
        let mut in_string = false;
        loop {
            let Some(byte) = self.peek()? else {
                // The end of the answer: a scalar ends there, anything else is cut.
                return if depth == 0 && !in_string { Ok(()) } else { Err(self.error("EOF while parsing a value")) };
            };
            if !in_string && depth == 0 && !self.token.is_empty() && is_delimiter(byte) {
                return Ok(());
            }
            self.at += 1;
            self.token.push(byte);
            match (in_string, byte) {
                (true, b'\\') => {
                    let escaped = self.next()?.ok_or_else(|| self.error("EOF while parsing a string"))?;
                    self.token.push(escaped);
                }
                (true, b'"') => in_string = false,
                (false, b'"') => in_string = true,
                (false, b'[' | b'{') => depth += 1,
                (false, b']' | b'}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            if !in_string && depth == 0 && matches!(byte, b'"' | b']' | b'}') {
                return Ok(());
            }
        }
    }
}

fn is_delimiter(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\t' | b'\r' | b',' | b':' | b']' | b'}')
}
