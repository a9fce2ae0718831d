//! Names compared the way the most lenient binders compare them: case-insensitively, with
//! Unicode simple case folding.
//!
//! Go's `encoding/json` matches a key to a struct field by Unicode simple case folding (each
//! rune to the smallest of its `unicode.SimpleFold` orbit), so `ſ` (U+017F) is `s` and the
//! Kelvin sign `K` (U+212A) is `k`; ASP.NET Core binds JSON (`PropertyNameCaseInsensitive`),
//! form fields and query parameters (`OrdinalIgnoreCase`, an invariant upper-casing per UTF-16
//! unit). Two names are the same here when their characters have the same upper case of their
//! lower case, the same upper case or the same lower case: a superset of those rules (it also
//! takes the dotless `ı` and the dotted `İ` for `i`), so every key an app may bind to a
//! configured name is that name; one no app binds costs at most a refusal.

/// Whether `a` and `b` name the same field for some popular binder.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a == b || (a.chars().count() == b.chars().count() && a.chars().zip(b.chars()).all(|(x, y)| same_char(x, y)))
}

fn same_char(a: char, b: char) -> bool {
    a == b || fold(a) == fold(b) || simple_upper(a) == simple_upper(b) || simple_lower(a) == simple_lower(b)
}

/// Upper case of the lower case: one representative of a simple case-folding orbit.
fn fold(c: char) -> char {
    simple_upper(simple_lower(c))
}

/// The simple (one code point) lower-case mapping: Rust's mapping when it is one code point,
/// U+0130 (`İ`, whose full mapping is `i` + a combining dot) to `i`, else the character.
fn simple_lower(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    single(c.to_lowercase()).unwrap_or(c)
}

/// The simple upper-case mapping: Rust's when it is one code point (`ß` stays `ß`).
fn simple_upper(c: char) -> char {
    single(c.to_uppercase()).unwrap_or(c)
}

fn single(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    chars.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::same_name;

    #[test]
    fn names_that_a_binder_takes_for_each_other() {
        let same = [
            ("email", "email"),
            ("email", "Email"),
            ("email", "EMAIL"),
            ("email", "eMaIl"),
            ("ask", "a\u{17F}k"),   // ſ (long s): in the orbit of s and S
            ("ask", "as\u{212A}"),  // K (Kelvin sign): in the orbit of k and K
            ("mail", "ma\u{130}l"), // İ: simple lower-case i
            ("mail", "ma\u{131}l"), // ı (dotless i): upper-case I
            ("straße", "STRAßE"),   // ß has no one-code-point upper case
            ("élan", "ÉLAN"),
        ];
        for (a, b) in same {
            assert!(same_name(a, b), "{a:?} and {b:?} are the same name");
            assert!(same_name(b, a), "{b:?} and {a:?} are the same name");
        }
        let different =
            [("email", "emai"), ("email", "e-mail"), ("email", "email "), ("email", "emai\u{131}l"), ("ss", "ß")];
        for (a, b) in different {
            assert!(!same_name(a, b), "{a:?} and {b:?} differ");
        }
    }
}
