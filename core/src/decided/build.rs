//! The one way a [`DecidedSet`] is built: name by name, each name straight into the part of a
//! split set it belongs in ([`bucket_of`]), so that a gateway can read `GET /api/v1/decisions`
//! as a stream ([`PartsBuilder::from_json`]) and hold no more than the parts' names while it
//! does: never the answer, a [`DecisionList`] or the whole set. A Wasm VM's
//! memory never shrinks, so what the parse holds at its peak is held for the proxy's life.

use std::io::Read;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{DecidedSet, DecisionList, bucket_of, encode};
use crate::Domain;

/// The list of the answer a name is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    ReviewerBlock,
    ReviewerAllow,
    OperatorBlock,
    OperatorAllow,
}

/// The parts of a split [`DecidedSet`] as names come in, in any order; [`Self::into_parts`]
/// sorts each part and drops names twice over, so the order names come in changes nothing.
#[derive(Debug)]
pub struct PartsBuilder {
    parts: Vec<Part>,
}

/// One part's names as they came: the three tables of [`DecidedSet`] and a decision byte per
/// reviewer name.
#[derive(Debug, Default)]
struct Part {
    tables: [Names; 3],
    decisions: Vec<u8>,
}

/// Names concatenated and their end offsets: no allocation per name.
#[derive(Debug, Default)]
struct Names {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Names {
    fn push(&mut self, name: &str) {
        self.bytes.extend_from_slice(name.as_bytes());
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends.get(i - 1).copied().unwrap_or(0) };
        let end = self.ends.get(i).copied().unwrap_or(0);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The names sorted, each once.
    fn sorted(&self) -> Vec<&[u8]> {
        let mut names: Vec<&[u8]> = (0..self.len()).map(|i| self.get(i)).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

impl PartsBuilder {
    /// An empty set cut in `buckets` parts (at least 1).
    pub fn new(buckets: usize) -> Self {
        Self { parts: (0..buckets.max(1)).map(|_| Part::default()).collect() }
    }

    /// Adds `name` from list `listed`. A name that does not parse as a [`Domain`], or is not in
    /// its normal form, is left out (the sidecar sends normal names; nothing else can match).
    pub fn push(&mut self, listed: Listed, name: &str) {
        if !Domain::parse(name).is_ok_and(|d| d.as_str() == name) {
            return;
        }
        let buckets = self.parts.len();
        let Some(part) = self.parts.get_mut(bucket_of(name, buckets)) else { return };
        let (table, decision) = match listed {
            Listed::ReviewerBlock => (0, Some(b'B')),
            Listed::ReviewerAllow => (0, Some(b'A')),
            Listed::OperatorBlock => (1, None),
            Listed::OperatorAllow => (2, None),
        };
        part.tables[table].push(name);
        part.decisions.extend(decision);
    }

    /// Adds every name of `list`.
    pub fn extend(&mut self, list: &DecisionList) {
        let lists = [
            (&list.reviewer.block, Listed::ReviewerBlock),
            (&list.reviewer.allow, Listed::ReviewerAllow),
            (&list.operator.block, Listed::OperatorBlock),
            (&list.operator.allow, Listed::OperatorAllow),
        ];
        for (names, listed) in lists {
            names.iter().for_each(|name| self.push(listed, name));
        }
    }

    /// Each part as a [`DecidedSet`], in bucket order, built one at a time as the iterator is
    /// read (a caller that stores each at once holds one built part, never all of them).
    pub fn into_parts(self) -> impl Iterator<Item = DecidedSet> {
        self.parts.into_iter().map(Part::finish)
    }

    /// Reads the answer of `GET /api/v1/decisions` from `reader` (the JSON of a
    /// [`DecisionList`], held to the same rules: every field there, none
    /// twice, nothing after it) straight into `buckets` parts: no name is allocated on its own,
    /// and the answer is read as it comes (give a buffered reader).
    pub fn from_json(reader: impl Read, buckets: usize) -> Result<Self, serde_json::Error> {
        let mut builder = Self::new(buckets);
        let mut de = serde_json::Deserializer::from_reader(reader);
        ListSeed(&mut builder).deserialize(&mut de)?;
        de.end()?;
        Ok(builder)
    }
}

impl Part {
    fn finish(self) -> DecidedSet {
        let [reviewer, block, allow] = &self.tables;
        let decision = |i: usize| self.decisions.get(i).copied().unwrap_or(b'A');
        // A name both blocked and allowed by reviewers cannot be: blocked (the sidecar's list
        // is consistent; this only has to be deterministic). Block sorts first, `dedup` keeps it.
        let mut order: Vec<usize> = (0..reviewer.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            reviewer.get(a).cmp(reviewer.get(b)).then_with(|| (decision(a) != b'B').cmp(&(decision(b) != b'B')))
        });
        order.dedup_by(|a, b| reviewer.get(*a) == reviewer.get(*b));
        let tables = [order.iter().map(|&i| reviewer.get(i)).collect(), block.sorted(), allow.sorted()];
        DecidedSet::from_bytes(encode(&tables, order.iter().map(|&i| decision(i)))).unwrap_or_default()
    }
}

const LIST: &[&str] = &["reviewer", "operator", "complete"];
const NAMES: &[&str] = &["block", "allow"];

/// `DecisionList`: its visitor does what `#[derive(Deserialize)]` does for it (a map or a
/// sequence; unknown fields ignored; a field missing or twice an error), names to the builder.
struct ListSeed<'a>(&'a mut PartsBuilder);

/// `DecidedNames` of the reviewers (`true`) or the operator.
struct NamesSeed<'a>(&'a mut PartsBuilder, bool);

/// One `Vec<String>` of names.
struct NameSeq<'a>(&'a mut PartsBuilder, Listed);

/// One name.
struct Name<'a>(&'a mut PartsBuilder, Listed);

/// A field's index in `.0`, `None` for a field not there.
struct Field(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct("DecisionList", LIST, self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct DecisionList")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let short = |i| de::Error::invalid_length(i, &"struct DecisionList with 3 elements");
        seq.next_element_seed(NamesSeed(&mut *self.0, true))?.ok_or_else(|| short(0))?;
        seq.next_element_seed(NamesSeed(&mut *self.0, false))?.ok_or_else(|| short(1))?;
        seq.next_element::<bool>()?.ok_or_else(|| short(2))?;
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = [false; 3];
        while let Some(field) = map.next_key_seed(Field(LIST))? {
            let Some(i) = field else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[i], true) {
                return Err(de::Error::duplicate_field(LIST[i]));
            }
            match i {
                0 => map.next_value_seed(NamesSeed(&mut *self.0, true))?,
                1 => map.next_value_seed(NamesSeed(&mut *self.0, false))?,
                _ => {
                    map.next_value::<bool>()?;
                }
            }
        }
        missing(&seen, LIST)
    }
}

impl<'de> DeserializeSeed<'de> for NamesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct("DecidedNames", NAMES, self)
    }
}

impl NamesSeed<'_> {
    fn list(&mut self, block: bool) -> NameSeq<'_> {
        let listed = match (self.1, block) {
            (true, true) => Listed::ReviewerBlock,
            (true, false) => Listed::ReviewerAllow,
            (false, true) => Listed::OperatorBlock,
            (false, false) => Listed::OperatorAllow,
        };
        NameSeq(&mut *self.0, listed)
    }
}

impl<'de> Visitor<'de> for NamesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct DecidedNames")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let short = |i| de::Error::invalid_length(i, &"struct DecidedNames with 2 elements");
        seq.next_element_seed(self.list(true))?.ok_or_else(|| short(0))?;
        seq.next_element_seed(self.list(false))?.ok_or_else(|| short(1))?;
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = [false; 2];
        while let Some(field) = map.next_key_seed(Field(NAMES))? {
            let Some(i) = field else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[i], true) {
                return Err(de::Error::duplicate_field(NAMES[i]));
            }
            map.next_value_seed(self.list(i == 0))?;
        }
        missing(&seen, NAMES)
    }
}

fn missing<E: de::Error>(seen: &[bool], fields: &'static [&'static str]) -> Result<(), E> {
    match seen.iter().position(|s| !s) {
        Some(i) => Err(E::missing_field(fields[i])),
        None => Ok(()),
    }
}

impl<'de> DeserializeSeed<'de> for NameSeq<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NameSeq<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Name(&mut *self.0, self.1))?.is_some() {}
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Name<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_string(self)
    }
}

impl<'de> Visitor<'de> for Name<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, name: &str) -> Result<(), E> {
        self.0.push(self.1, name);
        Ok(())
    }
    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<(), E> {
        let name = std::str::from_utf8(bytes).map_err(|_| E::invalid_value(de::Unexpected::Bytes(bytes), &self))?;
        self.visit_str(name)
    }
}

impl<'de> DeserializeSeed<'de> for Field {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for Field {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_u64<E: de::Error>(self, i: u64) -> Result<Option<usize>, E> {
        Ok(usize::try_from(i).ok().filter(|&i| i < self.0.len()))
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|f| *f == key))
    }
    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|f| f.as_bytes() == key))
    }
}

#[cfg(test)]
mod tests;
