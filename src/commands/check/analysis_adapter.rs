//! The seam between `check` and the analysis: the rule set a budget file
//! asks for (built once per run), and the figures of one snapshot.

use crate::analysis::{self, DeviceReport};
use crate::budget::{Budget, Rules};
use crate::snapshot::Snapshot;

pub use crate::analysis::RuleSet;

/// `[defaults] rules` with the `[categories]` custom rules tried first.
pub fn rule_set(budget: &Budget) -> Result<RuleSet, String> {
    let base = match &budget.rules {
        Rules::Default => RuleSet::builtin_default(),
        Rules::Mosaic => RuleSet::mosaic(),
        Rules::File(p) => RuleSet::from_spec(&p.to_string_lossy())?,
    };
    Ok(if budget.categories.is_empty() {
        base
    } else {
        RuleSet::with_custom(budget.categories.clone(), base)
    })
}

pub fn analyze(snap: &Snapshot, rules: &RuleSet, top: usize) -> Result<Vec<DeviceReport>, String> {
    Ok(analysis::analyze(snap, rules, top))
}
