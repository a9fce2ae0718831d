//! The builder against the path it replaced (frozen below as it was at 48d03cb): the same
//! answers give the same bytes, part for part, and the same answers are refused.

use super::*;
use crate::decided::{DecidedNames, DecidedSet, DecisionList, REVIEWER};

/// `DecidedSet::new` before the builder: a `DecisionList` sorted and deduplicated whole.
fn old_new(list: &DecisionList) -> DecidedSet {
    fn normalized<T: Copy + 'static>(names: &[String], tag: T) -> impl Iterator<Item = (&str, T)> + '_ {
        names
            .iter()
            .filter(|n| Domain::parse(n).is_ok_and(|d| d.as_str() == n.as_str()))
            .map(move |n| (n.as_str(), tag))
    }
    let mut reviewer: Vec<(&str, u8)> =
        normalized(&list.reviewer.block, b'B').chain(normalized(&list.reviewer.allow, b'A')).collect();
    reviewer.sort_by(|a, b| a.0.cmp(b.0));
    reviewer.dedup_by(|a, b| a.0 == b.0);
    fn table(names: &[String]) -> Vec<&str> {
        let mut t: Vec<&str> = normalized(names, ()).map(|(n, ())| n).collect();
        t.sort_unstable();
        t.dedup();
        t
    }
    let tables = [reviewer.iter().map(|(n, _)| *n).collect(), table(&list.operator.block), table(&list.operator.allow)];
    DecidedSet::from_bytes(encode(&tables, reviewer.iter().map(|(_, d)| *d))).unwrap_or_default()
}

/// `DecidedSet::split` before the builder: a whole set cut in parts.
fn old_split(set: &DecidedSet, buckets: usize) -> Vec<DecidedSet> {
    let mut parts: Vec<([Vec<&str>; 3], Vec<u8>)> = (0..buckets).map(|_| Default::default()).collect();
    for (t, table) in set.tables.iter().enumerate() {
        for i in 0..table.count {
            let name = std::str::from_utf8(set.name(table, i)).unwrap_or_default();
            let part = &mut parts[bucket_of(name, buckets)];
            part.0[t].push(name);
            if t == REVIEWER {
                part.1.push(set.bytes[set.decisions + i]);
            }
        }
    }
    parts.into_iter().map(|(t, d)| DecidedSet::from_bytes(encode(&t, d.into_iter())).unwrap_or_default()).collect()
}

/// What the old path stored for `body`: `None` when it refused it.
fn old_parts(body: &[u8], buckets: usize) -> Option<Vec<Vec<u8>>> {
    let list: DecisionList = serde_json::from_slice(body).ok()?;
    Some(old_split(&old_new(&list), buckets).iter().map(|p| p.as_bytes().to_vec()).collect())
}

/// A reader that hands out at most `step` bytes a call, as a host's slices would.
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn new_parts(body: &[u8], buckets: usize, step: usize) -> Option<Vec<Vec<u8>>> {
    let builder = PartsBuilder::from_json(Trickle(body, step), buckets).ok()?;
    Some(builder.into_parts().map(|p| p.as_bytes().to_vec()).collect())
}

/// Both paths accept the same bodies and store the same bytes from them.
fn check(body: &[u8]) {
    for buckets in [1, 7, 256] {
        let old = old_parts(body, buckets);
        for step in [1, 3, 64 * 1024] {
            assert!(
                new_parts(body, buckets, step) == old,
                "{} in {buckets} parts, read {step} bytes at a time (old: {})",
                String::from_utf8_lossy(&body[..body.len().min(200)]),
                if old.is_some() { "stored" } else { "refused" }
            );
        }
    }
}

/// xorshift64*: the same lists on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Names the lists draw from: normal ones (parents and children of each other, so that
/// parts and sort order mix), and ones the set leaves out.
fn pool() -> Vec<String> {
    let mut names: Vec<String> = (0..120).map(|i| format!("n{i}.decided.example")).collect();
    names.extend((0..20).map(|i| format!("x.n{i}.decided.example")));
    names.extend(
        ["decided.example", "a.b.c.example.org", "xn--bcher-kva.example", "0.example", "z-z.example"].map(String::from),
    );
    // Left out: not a name, not in its normal form (upper case, Unicode for its A-label,
    // a trailing dot), a public suffix alone is still a name the sidecar would not send.
    names.extend(
        [
            "Not A Name",
            "",
            "N1.Decided.Example",
            "bücher.example",
            "n2.decided.example.",
            "a..b",
            "-x.example",
            "com",
            "localhost",
        ]
        .map(String::from),
    );
    names
}

fn list(rng: &mut Rng, pool: &[String]) -> DecisionList {
    let pick = |rng: &mut Rng| -> Vec<String> {
        let n = [0, 1, 5, 60, 300][rng.below(5)];
        (0..n).map(|_| pool[rng.below(pool.len())].clone()).collect()
    };
    DecisionList {
        reviewer: DecidedNames { block: pick(rng), allow: pick(rng) },
        operator: DecidedNames { block: pick(rng), allow: pick(rng) },
        complete: rng.below(2) == 0,
    }
}

/// `list` as JSON the way a sidecar could write it: fields in either order, unknown fields,
/// spaces, a character escaped.
fn written(rng: &mut Rng, list: &DecisionList) -> String {
    let names = |rng: &mut Rng, v: &[String]| {
        let quoted: Vec<String> = v
            .iter()
            .map(|n| match rng.below(4) {
                0 if n.starts_with('n') => format!("\"\\u006e{}\"", &n[1..]),
                _ => serde_json::to_string(n).unwrap(),
            })
            .collect();
        format!("[{}]", quoted.join(if rng.below(2) == 0 { "," } else { " ,\n " }))
    };
    let decided = |rng: &mut Rng, d: &DecidedNames| {
        let (block, allow) = (names(rng, &d.block), names(rng, &d.allow));
        match rng.below(3) {
            0 => format!(r#"{{"block":{block},"allow":{allow}}}"#),
            1 => format!(r#"{{"allow":{allow}, "block":{block}}}"#),
            _ => format!(r#"{{"note":{{"x":[1,null]}},"allow":{allow},"block":{block}}}"#),
        }
    };
    let (reviewer, operator) = (decided(rng, &list.reviewer), decided(rng, &list.operator));
    match rng.below(3) {
        0 => format!(r#"{{"reviewer":{reviewer},"operator":{operator},"complete":{}}}"#, list.complete),
        1 => format!(r#" {{ "complete": {}, "operator": {operator}, "reviewer": {reviewer} }} "#, list.complete),
        _ => format!(r#"{{"operator":{operator},"limit":100000,"reviewer":{reviewer},"complete":{}}}"#, list.complete),
    }
}

#[test]
fn generated_lists_store_the_bytes_the_old_path_stored() {
    let (mut rng, pool) = (Rng(0x5eed), pool());
    for _ in 0..150 {
        let list = list(&mut rng, &pool);
        assert_eq!(DecidedSet::new(&list).as_bytes(), old_new(&list).as_bytes(), "{list:?}");
        check(serde_json::to_string(&list).unwrap().as_bytes());
        check(written(&mut rng, &list).as_bytes());
    }
}

#[test]
fn edge_lists_store_the_bytes_the_old_path_stored() {
    let both = r#"{"reviewer":{"block":["x.example","y.example"],"allow":["y.example","z.example","x.example"]},"operator":{"block":["y.example"],"allow":["y.example"]},"complete":true}"#;
    let allow_first = r#"{"reviewer":{"allow":["y.example","y.example"],"block":["y.example"]},"operator":{"block":[],"allow":[]},"complete":false}"#;
    for body in [
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":false}"#,
        both,
        allow_first,
        r#"{"reviewer":{"block":["Not A Name","BIG.example","bücher.example"],"allow":[]},"operator":{"block":["xn--bcher-kva.example"],"allow":[]},"complete":true}"#,
        // Escapes in keys and names, brackets and quotes inside strings, unknown fields of
        // every kind, whitespace everywhere JSON allows it.
        "\t{ \"\\u0072eviewer\" :\r\n{\"block\" : [ \"\\u0061.example\" , \"b.example\"\n] ,\"allow\":[] } ,\"x\":\"]}\\\"[{\",\"operator\":{\"block\":[],\"allow\":[],\"n\":-0.5e+3},\"y\":[{\"z\":[true,false,null,\"}\"]},1E5],\"complete\":true,\"w\":null}\n",
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,"limit":100000,"note":""}"#,
    ] {
        check(body.as_bytes());
        assert!(old_parts(body.as_bytes(), 1).is_some(), "{body}");
    }
    // The sequence form `#[derive(Deserialize)]` took too, which no sidecar writes: refused now.
    let sequence = r#"[{"block":["s.example"],"allow":[]},[["t.example"],[]],true]"#;
    assert!(old_parts(sequence.as_bytes(), 1).is_some());
    assert!(new_parts(sequence.as_bytes(), 1, 64).is_none());
    let stored = |body: &str| PartsBuilder::from_json(body.as_bytes(), 1).unwrap().into_parts().next().unwrap();
    let set = stored(both);
    let d = |s: &str| Domain::parse(s).unwrap();
    assert_eq!(set.len(), 5, "each name once a table");
    assert_eq!(set.decision(&d("y.example")), Some(crate::Decision::Block), "blocked and allowed: blocked");
    assert_eq!(stored(allow_first).decision(&d("y.example")), Some(crate::Decision::Block), "in any order");
}

#[test]
fn what_the_old_path_refused_is_refused() {
    let good = r#"{"reviewer":{"block":["a.example"],"allow":[]},"operator":{"block":[],"allow":["b.example"]},"complete":true}"#;
    // Cut anywhere: refused (the whole body and the body less its last byte are not cuts).
    for end in 0..good.len() {
        check(&good.as_bytes()[..end]);
        assert!(new_parts(&good.as_bytes()[..end], 256, 5).is_none(), "cut at {end}");
    }
    for body in [
        "",
        "<html>",
        "null",
        "[]",
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]}}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":"yes"}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[],"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":null,"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[1],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":["a.example"]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true} x"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}{}"#,
        r#"[{"block":[],"allow":[]},{"block":[],"allow":[]}]"#,
        r#"[{"block":[],"allow":[]},{"block":[],"allow":[]},true,1]"#,
        r#"{"reviewer":{"block":["a.example",],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,}"#,
        r#"{,"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer" {"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[] "allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":tru}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true"x"}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,"x":01}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,"x":[1,}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,"x":}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,"x":"\q"}"#,
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true,1:2}"#,
        "{\"reviewer\":{\"block\":[\"a\tb.example\"],\"allow\":[]},\"operator\":{\"block\":[],\"allow\":[]},\"complete\":true}",
        "{\"reviewer\":{\"block\":[],\"allow\":[]},\"operator\":{\"block\":[],\"allow\":[]},\"complete\":true}\u{a0}",
        r#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}]"#,
    ] {
        assert!(old_parts(body.as_bytes(), 1).is_none(), "the old path refused {body}");
        check(body.as_bytes());
    }
    // A name that is not UTF-8; an unknown field nested deep (taken by both).
    let not_utf8 = [&good.as_bytes()[..28], b"\xff\xfe", &good.as_bytes()[28..]].concat();
    check(&not_utf8);
    assert!(old_parts(&not_utf8, 1).is_none());
    let deep = format!(r#"{{"x":{}{},{}"#, "[".repeat(200), "]".repeat(200), &good[1..]);
    check(deep.as_bytes());
}

#[test]
fn an_unreadable_answer_is_refused() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("the host failed"))
        }
    }
    assert!(PartsBuilder::from_json(Broken, 256).is_err());
    let good = br#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
    assert!(PartsBuilder::from_json(good.as_slice().chain(Broken), 256).is_err(), "an error after the end");
}

/// Answers with a byte changed, dropped or added (a structural character or a letter), a
/// thousand times: each refused or stored exactly as the old path did.
#[test]
fn mutated_answers_are_refused_or_stored_as_before() {
    let (mut rng, pool) = (Rng(0xbad), pool());
    let alphabet = b"{}[]:,\" \\tn0-eu.xE";
    let mut stored = 0;
    for _ in 0..1000 {
        let list = list(&mut rng, &pool[..40]);
        let mut body = written(&mut rng, &list).into_bytes();
        for _ in 0..=rng.below(2) {
            let at = rng.below(body.len());
            let byte = alphabet[rng.below(alphabet.len())];
            match rng.below(3) {
                0 => body[at] = byte,
                1 => drop(body.remove(at)),
                _ => body.insert(at, byte),
            }
        }
        let old = old_parts(&body, 7);
        stored += usize::from(old.is_some());
        assert!(new_parts(&body, 7, 4096) == old, "{}", String::from_utf8_lossy(&body));
    }
    assert!((100..900).contains(&stored), "both kinds tried: {stored} of 1000 stored");
}
