//! Whether a new copy of a list may replace the one in use: it must be UTF-8 text, not an
//! HTML page (a login wall or an error page served with 200), hold at least one valid name,
//! and not have shrunk by more than `--list-max-shrink` against the last good copy (a file cut
//! short, a server answering half a list).

use email_verdict_core::lists::ParsedList;

use crate::outbound::Refusal;

/// Why a list's new copy was refused; the copy in use stays.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ListError {
    #[error("cannot read the file: {0}")]
    Read(String),
    #[error("fetch failed: {0}")]
    Fetch(String),
    /// The request was not made, or its redirect not followed (`outbound`).
    #[error("{0}")]
    Refused(Refusal),
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("an HTML page, not a list")]
    Html,
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("no valid name in it ({0} lines refused)")]
    NoNames(usize),
    #[error("shrank from {from} to {to} entries, more than --list-max-shrink {max_shrink} allows")]
    Shrunk { from: usize, to: usize, max_shrink: f64 },
}

/// The text and entries of `bytes` when they may replace `previous`, the last good copy.
/// `max_shrink`: the largest share of `previous`'s entries a new copy may lose (1 = any).
pub fn accept(bytes: &[u8], previous: Option<&ParsedList>, max_shrink: f64) -> Result<(String, ParsedList), ListError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ListError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('<') {
        return Err(ListError::Html);
    }
    let parsed = ParsedList::parse(text);
    if parsed.is_empty() {
        return Err(ListError::NoNames(parsed.refused().len()));
    }
    if let Some(previous) = previous {
        let floor = previous.len() as f64 * (1.0 - max_shrink);
        if (parsed.len() as f64) < floor {
            return Err(ListError::Shrunk { from: previous.len(), to: parsed.len(), max_shrink });
        }
    }
    Ok((text.to_owned(), parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u8], previous: Option<&str>, expected: Result<usize, ListError>) {
        let previous = previous.map(ParsedList::parse);
        let got = accept(bytes, previous.as_ref(), 0.5).map(|(_, p)| p.len());
        assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(bytes));
    }

    #[test]
    fn what_may_replace_a_list() {
        let four = "a.example\nb.example\nc.example\nd.example\n";
        check(b"a.example\n", None, Ok(1));
        check("\u{feff}# list\na.example\n".as_bytes(), None, Ok(1));
        check(b"a.example\nb.example\n", Some(four), Ok(2));
        check(b"a.example\n", Some(four), Err(ListError::Shrunk { from: 4, to: 1, max_shrink: 0.5 }));
        check(b"\xff\xfe a.example\n", None, Err(ListError::NotUtf8));
        check(b"  \n<!doctype html><title>502</title>", None, Err(ListError::Html));
        check(b"<html>a.example</html>", None, Err(ListError::Html));
        check(b"# nothing\n\n", None, Err(ListError::NoNames(0)));
        check(b"not a name\npp.ua\n", None, Err(ListError::NoNames(2)));
        let all = ParsedList::parse(four);
        assert!(accept(b"a.example\n", Some(&all), 1.0).is_ok(), "1 turns the shrink check off");
        assert!(accept(b"a.example\nb.example\nc.example\n", Some(&all), 0.0).is_err(), "0: no shrinking at all");
    }
}
