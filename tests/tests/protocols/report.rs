//! Judging each case's outcome against what it expects, and the table of all of them (case ×
//! gateway), then every failure in full: what the client reported, which handler received a
//! disposable address.

use std::fmt;

use email_verdict_tests::protocols::Seen;
use serde_json::Value;

use super::Via;
use super::cases::{Case, Expect};

/// What happened to one case through one gateway.
pub struct Outcome {
    /// What the client reported (the runner's JSON: `ok`, or `code` and `message`; or `status`
    /// and `body` for fetch).
    pub reported: Value,
    /// What each handler received for this case.
    pub seen: Vec<Seen>,
    pub millis: u128,
}

/// A disposable address, as a handler holds it once its protocol has decoded it.
pub fn is_disposable(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains('@') && t.contains("mailinator.com")
}

impl Outcome {
    /// Handlers that received a disposable address.
    fn leaked(&self) -> Vec<&str> {
        self.seen.iter().filter(|(_, v)| v.iter().any(|v| is_disposable(v))).map(|(h, _)| h.as_str()).collect()
    }

    fn received(&self, address: &str) -> bool {
        self.seen.iter().any(|(_, v)| v.iter().any(|v| v == address))
    }

    /// The client's report in a few words: `OK`, the code name, `HTTP 403`.
    fn summary(&self) -> String {
        let r = &self.reported;
        if r["ok"] == true {
            return "OK".into();
        }
        if let Some(code) = r["code"].as_str() {
            return code.to_owned();
        }
        match r["status"].as_u64() {
            Some(0) => format!("no answer ({})", r["error"].as_str().unwrap_or("?")),
            Some(s) if self.graphql_errors() => format!("HTTP {s} errors"),
            Some(s) => format!("HTTP {s}"),
            None => format!("{r}"),
        }
    }

    fn body(&self) -> Option<Value> {
        self.reported["body"].as_str().and_then(|b| serde_json::from_str(b).ok())
    }

    /// A GraphQL response with errors (in a batch: any of its answers).
    fn graphql_errors(&self) -> bool {
        let has = |v: &Value| v["errors"].as_array().is_some_and(|e| !e.is_empty());
        match self.body() {
            Some(Value::Array(items)) => items.iter().any(has),
            Some(v) => has(&v),
            None => false,
        }
    }

    /// `Ok` or why the case failed, in a few words.
    pub fn judge(&self, expect: Expect) -> Result<(), String> {
        let leaked = self.leaked();
        let summary = self.summary();
        let status = self.reported["status"].as_u64();
        let answered = self.reported["ok"] == true || status.is_some_and(|s| s == 200);
        let mut problems = Vec::new();
        if !leaked.is_empty() {
            problems.push(format!("reached {}", leaked.join(", ")));
        }
        match expect {
            Expect::SignsUp(address) => {
                if !answered || self.graphql_errors() {
                    problems.push(format!("refused: {summary}"));
                } else if !self.received(address) {
                    problems.push("handler did not get it".into());
                }
            }
            Expect::Passes => {
                if !answered || self.graphql_errors() {
                    problems.push(format!("refused: {summary}"));
                }
            }
            Expect::Code(code) => {
                let message = self.reported["message"].as_str().unwrap_or("");
                if self.reported["code"] != code {
                    problems.push(summary);
                } else if message.is_empty() {
                    problems.push(format!("{code} without a message"));
                }
            }
            Expect::GraphQlErrors => {
                if !self.graphql_errors() {
                    problems.push(format!("{summary}, no errors"));
                }
            }
            Expect::Status(s) => {
                if status != Some(u64::from(s)) {
                    problems.push(summary);
                }
            }
            Expect::Bomb => {
                let refused = self.reported["code"].is_string() || status.is_some_and(|s| (400..500).contains(&s));
                if !refused {
                    problems.push(summary);
                }
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
    }
}

pub struct Report<'a> {
    cases: &'a [Case],
    runs: Vec<(Via, Vec<Outcome>)>,
}

impl<'a> Report<'a> {
    pub fn new(cases: &'a [Case]) -> Report<'a> {
        Report { cases, runs: Vec::new() }
    }

    pub fn add(&mut self, via: Via, outcomes: Vec<Outcome>) {
        self.runs.push((via, outcomes));
    }

    pub fn failures(&self) -> usize {
        self.runs
            .iter()
            .map(|(via, o)| o.iter().zip(self.cases).filter(|(o, c)| o.judge(c.expect(*via)).is_err()).count())
            .sum()
    }
}

/// Cut to `n` characters (a cell, a message).
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_owned() } else { format!("{}…", s.chars().take(n - 1).collect::<String>()) }
}

const CELL: usize = 34;

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.cases.iter().map(|c| c.name.chars().count()).max().unwrap_or(10).min(60);
        write!(f, "\n{:width$}", "case")?;
        for (via, _) in &self.runs {
            write!(f, " | {:CELL$}", via.name())?;
        }
        writeln!(f)?;
        writeln!(f, "{}", "-".repeat(width + self.runs.len() * (CELL + 3)))?;
        for (i, case) in self.cases.iter().enumerate() {
            write!(f, "{:width$}", cut(&case.name, width))?;
            for (via, outcomes) in &self.runs {
                let cell = match outcomes[i].judge(case.expect(*via)) {
                    Ok(()) => format!("ok ({})", outcomes[i].summary()),
                    Err(why) => format!("FAIL {why}"),
                };
                write!(f, " | {:CELL$}", cut(&cell, CELL))?;
            }
            writeln!(f)?;
        }
        for (via, outcomes) in &self.runs {
            let failed = outcomes.iter().zip(self.cases).filter(|(o, c)| o.judge(c.expect(*via)).is_err()).count();
            writeln!(f, "{}: {} of {} cases pass", via.name(), self.cases.len() - failed, self.cases.len())?;
        }
        if self.failures() == 0 {
            return writeln!(f, "\nno failures");
        }
        writeln!(f, "\nfailures in full:")?;
        for (via, outcomes) in &self.runs {
            for (o, case) in outcomes.iter().zip(self.cases) {
                let Err(why) = o.judge(case.expect(*via)) else { continue };
                let expected = case.expect(*via);
                writeln!(f, "- {} / {}: {why} (expected {expected:?}, {} ms)", via.name(), case.name, o.millis)?;
                writeln!(f, "    client reported: {}", cut(&o.reported.to_string(), 400))?;
                for (handler, values) in &o.seen {
                    let bad: Vec<&String> = values.iter().filter(|v| is_disposable(v)).collect();
                    writeln!(f, "    handler {handler} ran; disposable values: {bad:?}")?;
                }
            }
        }
        Ok(())
    }
}
