//! The plans of the spec's Limits table, verbatim.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plan {
    Free,
    Basic,
    Premium,
    Pro,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Free, Plan::Basic, Plan::Premium, Plan::Pro];

    /// Successful lookups per UTC day.
    pub fn daily_quota(self) -> u64 {
        match self {
            Plan::Free => 3,
            Plan::Basic => 5_000,
            Plan::Premium => 10_000,
            Plan::Pro => 20_000,
        }
    }

    /// Requests admitted per second.
    pub fn burst_per_second(self) -> u64 {
        match self {
            Plan::Free => 1,
            Plan::Basic => 10,
            Plan::Premium => 20,
            Plan::Pro => 50,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Basic => "basic",
            Plan::Premium => "premium",
            Plan::Pro => "pro",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown plan {0:?} (expected free, basic, premium or pro)")]
pub struct UnknownPlan(String);

impl FromStr for Plan {
    type Err = UnknownPlan;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Plan::ALL.into_iter().find(|p| p.as_str().eq_ignore_ascii_case(s)).ok_or_else(|| UnknownPlan(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_table() {
        let table: Vec<_> = Plan::ALL.iter().map(|p| (p.as_str(), p.daily_quota(), p.burst_per_second())).collect();
        assert_eq!(table, [("free", 3, 1), ("basic", 5_000, 10), ("premium", 10_000, 20), ("pro", 20_000, 50)]);
        assert_eq!("PRO".parse::<Plan>().unwrap(), Plan::Pro);
        assert!("gold".parse::<Plan>().is_err());
    }
}
