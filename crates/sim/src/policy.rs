//! The policies a simulation compares: the scheduler's, and the oracle.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sitemapd_scheduler::policy::BuiltinPolicy;

use crate::oracle::ORACLE;

/// A policy the simulator can run: one of the store's, or the
/// [`oracle`](crate::ORACLE) (the upper bound, which knows the true change
/// times). Named as the scheduler names its policies, plus `oracle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimPolicy {
    /// A policy of the scheduler, run through the real store and queue.
    Store(BuiltinPolicy),
    /// The oracle.
    Oracle,
}

impl SimPolicy {
    /// Every policy: the scheduler's, then the oracle.
    pub fn all() -> Vec<SimPolicy> {
        BuiltinPolicy::ALL
            .into_iter()
            .map(SimPolicy::Store)
            .chain([SimPolicy::Oracle])
            .collect()
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            SimPolicy::Store(p) => p.name(),
            SimPolicy::Oracle => ORACLE,
        }
    }

    /// The policy called `name`.
    pub fn from_name(name: &str) -> Option<SimPolicy> {
        match name {
            ORACLE => Some(SimPolicy::Oracle),
            _ => BuiltinPolicy::from_name(name).map(SimPolicy::Store),
        }
    }
}

impl fmt::Display for SimPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for SimPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SimPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SimPolicy::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = SimPolicy::all().iter().map(|p| p.name()).collect();
            serde::de::Error::custom(format!(
                "unknown policy `{name}` (known: {})",
                known.join(", ")
            ))
        })
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for SimPolicy {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::LazyLock<Vec<SimPolicy>> = std::sync::LazyLock::new(SimPolicy::all);
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let all = SimPolicy::all();
        assert_eq!(all.len(), BuiltinPolicy::ALL.len() + 1);
        for p in all {
            assert_eq!(SimPolicy::from_name(p.name()), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<SimPolicy>(&json).unwrap(), p);
        }
        assert!(serde_json::from_str::<SimPolicy>("\"nope\"").is_err());
    }
}
