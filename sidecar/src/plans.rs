//! Plans: the spec's four (its Limits table, verbatim), built in; `gateway`, unlimited, for the
//! filter's and ext_authz's key, defined by default so that no setup leaves the gateway's key on
//! a plan end users can spend (64 junk signups would otherwise exhaust `pro`'s burst); and those
//! an operator defines in the `--config` file (`[plans.NAME]`, which may redefine `gateway`).
//!
//! A key stores its plan's *name*; the figures are looked up at each admission in this
//! process's [`PlanBook`], which SIGHUP reloads from the `--config` file (`config::reload`), so
//! a changed figure applies to every key of the plan at once, and a key whose plan the file no
//! longer defines is refused (fail closed) instead of running without limits.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};

/// A plan's name: 1 to 32 of `a-z`, `0-9`, `-`, `_` (stored with the key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlanName(String);

impl PlanName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a plan name (1 to 32 of a-z, 0-9, '-', '_')")]
pub struct BadPlanName(String);

impl FromStr for PlanName {
    type Err = BadPlanName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.to_ascii_lowercase();
        let ok = (1..=32).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if ok { Ok(Self(name)) } else { Err(BadPlanName(s.to_owned())) }
    }
}

/// A daily quota or a per-second burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Finite(u64),
    Unlimited,
}

impl Limit {
    /// The figure the state store enforces (`Limits::UNLIMITED` when unlimited).
    pub fn as_u64(self) -> u64 {
        match self {
            Limit::Finite(n) => n,
            Limit::Unlimited => Limits::UNLIMITED,
        }
    }

    pub fn is_unlimited(self) -> bool {
        self == Limit::Unlimited
    }

    /// For JSON answers: the number, or `"unlimited"`.
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Limit::Finite(n) => n.into(),
            Limit::Unlimited => "unlimited".into(),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Finite(n) => write!(f, "{n}"),
            Limit::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) if n > 0 => Ok(Limit::Finite(n)),
            Raw::Text(t) if t == "unlimited" => Ok(Limit::Unlimited),
            _ => Err(serde::de::Error::custom("expected a whole number of at least 1, or \"unlimited\"")),
        }
    }
}

/// A plan's figures as the state store enforces them at each admission;
/// [`Limits::UNLIMITED`] for no limit (an unlimited burst keeps no window at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub daily_quota: u64,
    pub burst_per_second: u64,
}

impl Limits {
    pub const UNLIMITED: u64 = u64::MAX;
}

impl From<&Plan> for Limits {
    fn from(plan: &Plan) -> Self {
        Limits { daily_quota: plan.daily_quota.as_u64(), burst_per_second: plan.burst_per_second.as_u64() }
    }
}

/// One plan: its name and figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub name: PlanName,
    /// Lookups answered with a verdict per UTC day.
    pub daily_quota: Limit,
    /// Requests admitted per second.
    pub burst_per_second: Limit,
    /// One of the spec's four.
    pub builtin: bool,
}

/// A plan as the `--config` file defines it (`[plans.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PlanDef {
    pub daily_quota: Limit,
    pub burst_per_second: Limit,
}

/// The spec's Limits table: name, daily quota, burst per second.
const BUILTIN: [(&str, u64, u64); 4] =
    [("free", 3, 1), ("basic", 5_000, 10), ("premium", 10_000, 20), ("pro", 20_000, 50)];

/// The gateway's plan, unlimited unless the `--config` file redefines it.
pub const GATEWAY_PLAN: &str = "gateway";

/// Every plan this process knows: the built-in ones first, then `gateway`, then the operator's
/// by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plans(Vec<Plan>);

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    BadName(#[from] BadPlanName),
    #[error("plan {0:?} is one of the built-in plans (free, basic, premium, pro), whose figures are fixed")]
    Builtin(String),
    #[error("unknown plan {name:?} (defined: {known})")]
    Unknown { name: String, known: String },
}

impl Plans {
    /// The spec's four and the default `gateway` plan.
    pub fn builtin() -> Self {
        let spec = BUILTIN.iter().map(|&(name, quota, burst)| Plan {
            name: PlanName(name.to_owned()),
            daily_quota: Limit::Finite(quota),
            burst_per_second: Limit::Finite(burst),
            builtin: true,
        });
        let gateway = Plan {
            name: PlanName(GATEWAY_PLAN.to_owned()),
            daily_quota: Limit::Unlimited,
            burst_per_second: Limit::Unlimited,
            builtin: false,
        };
        Self(spec.chain([gateway]).collect())
    }

    /// The built-in plans and these definitions (a spec plan's name cannot be redefined;
    /// `gateway` can).
    pub fn with_defined(defs: &BTreeMap<String, PlanDef>) -> Result<Self, PlanError> {
        let mut plans = Self::builtin();
        for (name, def) in defs {
            let name: PlanName = name.parse()?;
            let plan =
                Plan { name, daily_quota: def.daily_quota, burst_per_second: def.burst_per_second, builtin: false };
            match plans.0.iter_mut().find(|p| p.name == plan.name) {
                Some(spec) if spec.builtin => return Err(PlanError::Builtin(plan.name.0)),
                Some(gateway) => *gateway = plan,
                None => plans.0.push(plan),
            }
        }
        Ok(plans)
    }

    pub fn get(&self, name: &PlanName) -> Option<&Plan> {
        self.0.iter().find(|p| &p.name == name)
    }

    /// The plan named `name` (any case), which must be defined: for keys being created or changed.
    pub fn resolve(&self, name: &str) -> Result<&Plan, PlanError> {
        let parsed: PlanName = name.parse()?;
        self.get(&parsed).ok_or_else(|| PlanError::Unknown {
            name: name.to_owned(),
            known: self.0.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Plan> {
        self.0.iter()
    }
}

/// The plans in force, swapped whole when the `--config` file is read again.
pub struct PlanBook(arc_swap::ArcSwap<Plans>);

impl PlanBook {
    pub fn new(plans: Plans) -> Self {
        Self(arc_swap::ArcSwap::from_pointee(plans))
    }

    pub fn current(&self) -> Arc<Plans> {
        self.0.load_full()
    }

    pub fn replace(&self, plans: Plans) {
        self.0.store(Arc::new(plans));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_table() {
        let plans = Plans::builtin();
        let table: Vec<_> =
            plans.iter().map(|p| (p.name.as_str(), p.daily_quota.as_u64(), p.burst_per_second.as_u64())).collect();
        let unlimited = u64::MAX;
        assert_eq!(
            table,
            [
                ("free", 3, 1),
                ("basic", 5_000, 10),
                ("premium", 10_000, 20),
                ("pro", 20_000, 50),
                ("gateway", unlimited, unlimited)
            ]
        );
        assert_eq!(plans.resolve("PRO").unwrap().name.as_str(), "pro");
        let err = plans.resolve("gold").unwrap_err().to_string();
        assert_eq!(err, r#"unknown plan "gold" (defined: free, basic, premium, pro, gateway)"#);
    }

    #[test]
    fn operator_plans() {
        let defs: BTreeMap<String, PlanDef> = toml::from_str(
            "[gateway]\ndaily-quota = 1000000\nburst-per-second = \"unlimited\"\n\
             [partner]\ndaily-quota = 100000\nburst-per-second = 200\n",
        )
        .unwrap();
        let plans = Plans::with_defined(&defs).unwrap();
        let gateway = plans.resolve("gateway").unwrap();
        assert_eq!((gateway.daily_quota, gateway.burst_per_second), (Limit::Finite(1_000_000), Limit::Unlimited));
        assert!(!gateway.builtin, "the default gateway plan is redefined in place");
        assert_eq!(plans.resolve("partner").unwrap().burst_per_second, Limit::Finite(200));
        assert_eq!(
            plans.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["free", "basic", "premium", "pro", "gateway", "partner"]
        );
        let redefine: BTreeMap<String, PlanDef> =
            toml::from_str("[pro]\ndaily-quota = 1\nburst-per-second = 1\n").unwrap();
        assert!(matches!(Plans::with_defined(&redefine), Err(PlanError::Builtin(_))));
        let bad: BTreeMap<String, PlanDef> =
            toml::from_str("[\"Gold Plan\"]\ndaily-quota = 1\nburst-per-second = 1\n").unwrap();
        assert!(matches!(Plans::with_defined(&bad), Err(PlanError::BadName(_))));
        for text in
            ["daily-quota = 0\nburst-per-second = 1", "daily-quota = \"lots\"\nburst-per-second = 1", "daily-quota = 1"]
        {
            assert!(toml::from_str::<PlanDef>(text).is_err(), "{text}");
        }
    }
}
