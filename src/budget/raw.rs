//! The budget file as written: serde structs that mirror the TOML. Every
//! leaf is a spanned `toml::Value`, so a wrong type or unit is reported by
//! validation (all problems at once) instead of stopping serde at the first.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::analysis::Figure;

/// A value whose type is checked by validation, with its position.
pub type Leaf = Spanned<toml::Value>;
/// An open table whose keys validation checks (category names, rules).
pub type OpenTable = BTreeMap<Spanned<String>, Leaf>;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawConfig {
    pub defaults: Option<RawDefaults>,
    #[serde(default)]
    pub target: Vec<Spanned<RawTarget>>,
    pub categories: Option<OpenTable>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawDefaults {
    pub tolerance: Option<Leaf>,
    pub noise_floor: Option<Leaf>,
    pub rules: Option<Leaf>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawTarget {
    pub name: Option<Leaf>,
    pub snapshots: Option<Leaf>,
    pub baseline: Option<Leaf>,
    pub device: Option<Leaf>,
    pub key: Option<Leaf>,
    pub budget: Option<RawBudget>,
    pub tolerance: Option<RawPerFigure>,
}

/// `[target.budget]`: a ceiling per figure id, plus `[target.budget.category]`.
/// Each value is a size / count, or `{ limit = …, level = "warn" }`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawBudget {
    pub category: Option<OpenTable>,
    pub dynamic_peak: Option<Leaf>,
    pub static_memory: Option<Leaf>,
    pub overall_peak: Option<Leaf>,
    pub allocated_peak: Option<Leaf>,
    pub reserved_peak: Option<Leaf>,
    pub oom_events: Option<Leaf>,
    pub alloc_events: Option<Leaf>,
    pub trace_entries: Option<Leaf>,
}

/// `[target.tolerance]`: a percentage per figure id, or
/// `{ limit = "2%", level = "warn" }`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawPerFigure {
    pub dynamic_peak: Option<Leaf>,
    pub static_memory: Option<Leaf>,
    pub overall_peak: Option<Leaf>,
    pub allocated_peak: Option<Leaf>,
    pub reserved_peak: Option<Leaf>,
    pub oom_events: Option<Leaf>,
    pub alloc_events: Option<Leaf>,
    pub trace_entries: Option<Leaf>,
}

/// The value of one figure's key in a per-figure table.
fn pick(figure: Figure, f: [&Option<Leaf>; 8]) -> Option<&Leaf> {
    let i = Figure::ALL.iter().position(|x| *x == figure)?;
    f[i].as_ref()
}

impl RawBudget {
    pub fn figure(&self, figure: Figure) -> Option<&Leaf> {
        pick(
            figure,
            [
                &self.dynamic_peak,
                &self.static_memory,
                &self.overall_peak,
                &self.allocated_peak,
                &self.reserved_peak,
                &self.oom_events,
                &self.alloc_events,
                &self.trace_entries,
            ],
        )
    }
}

impl RawPerFigure {
    pub fn figure(&self, figure: Figure) -> Option<&Leaf> {
        pick(
            figure,
            [
                &self.dynamic_peak,
                &self.static_memory,
                &self.overall_peak,
                &self.allocated_peak,
                &self.reserved_peak,
                &self.oom_events,
                &self.alloc_events,
                &self.trace_entries,
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::keys::fields_of;

    #[test]
    fn per_figure_tables_have_exactly_the_figure_ids_as_keys() {
        let ids: Vec<&str> = Figure::ALL.iter().map(|f| f.id()).collect();
        assert_eq!(fields_of::<RawPerFigure>(), ids.as_slice());
        assert_eq!(&fields_of::<RawBudget>()[1..], ids.as_slice());
    }
}
