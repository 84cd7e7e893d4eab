//! The budget file (docs/figures.md#checks): the raw TOML structs, and the validated
//! budget `check` judges with. Every problem is collected with its
//! `file:line:col` before failing.
//!
//! The budget is data: it names its rule set and category budgets; the
//! rules file is compiled, and category names checked, by `check`, where
//! budget and analysis meet.
//!
//! Per-check level: a budget or tolerance value is either the plain value
//! (`overall-peak = "60 GiB"`, `allocated-peak = "2%"`) or a table
//! `{ limit = "60 GiB", level = "warn" }`; `level` is `"fail"` (the
//! default) or `"warn"` (reported, never fails the gate). A figure whose
//! budget is at `warn` is report-only: its growth over the baseline warns
//! too, unless `[target.tolerance]` gives the figure a level of its own.
//!
//! Which figures are judged: those `[defaults] figures` lists (the figures
//! [`Figure::gated_by_default`] when it is not set), and every figure a
//! target budgets or tolerates.

mod data;
#[cfg(test)]
mod example_file;
mod owners;
mod ranks;
pub mod raw;
pub use owners::{CodeownersAt, OwnersTable};
mod sites;
pub use sites::Sites;
mod suggest;
mod target;
#[cfg(test)]
mod tests;
mod validate;
mod values;
mod waiver;
pub use waiver::Waiver;

use crate::vocab::Device;
use std::collections::BTreeMap;
use std::fmt;

use regex::Regex;
use serde::Serialize;

use crate::patterns::Rule;

use crate::units::{Bytes, Percent};
use crate::vocab::{Figure, Statistic};

pub use crate::vocab::Rules;

pub use data::{budget_from_data, budget_from_json, figure_ids, parse_size, validate_data};
pub use ranks::RankBudget;
#[cfg(test)]
pub(crate) use validate::{parse, validate};
pub use validate::{validate_file, ConfigError, Validated};
pub(crate) use values::last_line;

/// Tolerance when neither `[defaults]` nor the target sets one.
pub const DEFAULT_TOLERANCE: Percent = Percent(5.0);
/// Noise floor when `[defaults]` sets none.
pub const DEFAULT_NOISE_FLOOR: Bytes = Bytes(1 << 20);

/// A position in the budget file (1-based), for errors and annotations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Loc {
    pub file: String,
    pub line: usize,
    pub col: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0: about the file as a whole (missing, unreadable).
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        }
    }
}

/// Whether a violated check fails the gate or only warns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    #[default]
    Fail,
    Warn,
}

/// How much a ceiling allows, in the unit of what it limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    Bytes(Bytes),
    Count(u64),
}

impl Amount {
    /// The number in the amount's own unit, as figures are measured.
    pub fn raw(self) -> u64 {
        match self {
            Amount::Bytes(b) => b.0,
            Amount::Count(n) => n,
        }
    }
}

/// A ceiling: bytes for size figures and categories, a count otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// With `share_of_device`, a placeholder until the device's capacity
    /// turns the share into bytes (`compare`).
    pub value: Amount,
    /// The value as the budget file writes it (`0.2 GB`, `0`), without
    /// TOML's quotes: reports show it beside the value in binary units.
    pub written: String,
    /// `"92% of device"`: the percentage, when the limit is a share of the
    /// device's memory (docs/figures.md#device-capacity).
    pub share_of_device: Option<f64>,
    /// `"20% of reserved"`: the percentage of the device's `reserved-peak`,
    /// for `cached-free-at-reserved-peak` (docs/figures.md#cached-free-at-reserved-peak).
    pub share_of_reserved: Option<f64>,
    pub level: Level,
    pub loc: Loc,
}

impl Limit {
    /// A share (of the device, or of the reserved peak) turned into `bytes`
    /// (docs/figures.md#device-capacity).
    pub fn with_bytes(&self, bytes: u64) -> Limit {
        Limit {
            value: Amount::Bytes(Bytes(bytes)),
            share_of_device: None,
            share_of_reserved: None,
            ..self.clone()
        }
    }
}

/// Allowed growth over the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerance {
    pub pct: Percent,
    pub level: Level,
    /// Where it was set; `None` for the built-in default.
    pub loc: Option<Loc>,
}

/// A `[target.budget.category]` key. Whether the rule set knows the name
/// is decided where budget and analysis meet (`check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryKey {
    pub name: String,
    /// Where the key is written.
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub loc: Loc,
    /// Glob patterns, already joined to the budget file's directory.
    pub snapshots: Vec<String>,
    /// Baseline path or pattern, joined to the budget file's directory.
    pub baseline: Option<String>,
    pub device: Option<Device>,
    /// Capture group 1 names a snapshot; the file stem otherwise.
    pub key: Option<Regex>,
    /// `require-trace`: a device without an allocation trace fails its
    /// trace-based checks (true, the default) or has them judged on the
    /// dump-time figures (false).
    pub require_trace: bool,
    /// Where `require-trace` is written; `None` for the default.
    pub require_trace_loc: Option<Loc>,
    /// `accept-lower-bounds`: a figure that is only a lower bound (its
    /// trace started mid-run) is judged as it is (true), or a pass on it
    /// is not judged (false, the default).
    pub accept_lower_bounds: bool,
    /// `same-environment`: a baseline recorded in another environment
    /// (docs/figures.md#environment) fails (true) or warns (false, the
    /// default).
    pub same_environment: bool,
    /// `device-memory` and `outside-allocator` (docs/figures.md#device-capacity),
    /// in bytes.
    pub device_memory: Option<u64>,
    pub outside_allocator: Option<u64>,
    /// `window`: judge the figures inside `FROM..TO` only, and where it is
    /// written. The spec is parsed where budget and analysis meet
    /// (`check`), like category names.
    pub window: Option<(String, Loc)>,
    /// `statistic`: which value of repeated runs (several snapshots with
    /// one key) is judged (docs/gate.md#repeated-runs).
    pub statistic: Statistic,
    pub budget: BTreeMap<Figure, Limit>,
    pub category_budget: BTreeMap<String, Limit>,
    /// `[target.budget.phase."NAME"]`, in file order.
    pub phase_budget: Vec<PhaseLimit>,
    /// `[target.budget.pool."NAME"]`, in file order (docs/figures.md#pools).
    pub pool_budget: Vec<PoolLimit>,
    pub tolerance: BTreeMap<Figure, Tolerance>,
    /// `[target.tolerance.phase."NAME"]`, in file order.
    pub phase_tolerance: Vec<PhaseTolerance>,
    /// `iteration-boundary`: iterations start at annotations whose name
    /// starts with this (the default boundaries when `None`).
    pub iteration_boundary: Option<String>,
    /// `[target.ranks]`: figures across the target's ranks (docs/ranks.md).
    pub ranks: Option<RankBudget>,
}

/// A limit on a figure over one annotation's spans (docs/figures.md#phase-figures).
#[derive(Debug, Clone)]
pub struct PhaseLimit {
    /// The annotation name, as `memgate phases` lists it.
    pub phase: String,
    /// One of [`Figure::PER_PHASE`].
    pub figure: Figure,
    pub limit: Limit,
}

/// A limit on one memory pool's figure (docs/figures.md#pools).
#[derive(Debug, Clone)]
pub struct PoolLimit {
    /// The pool's name, as `memgate peak` lists it (`cuda-graph-1`).
    pub pool: String,
    /// One of [`Figure::PER_POOL`].
    pub figure: Figure,
    pub limit: Limit,
}

/// A tolerance on a figure over one annotation's spans.
#[derive(Debug, Clone)]
pub struct PhaseTolerance {
    pub phase: String,
    /// One of [`Figure::PER_PHASE`].
    pub figure: Figure,
    pub tolerance: Tolerance,
}

/// The validated budget file.
#[derive(Debug, Clone)]
pub struct Budget {
    /// The file as named on the command line (used in messages).
    pub file: String,
    pub tolerance: Tolerance,
    pub noise_floor: Bytes,
    /// `[defaults]` `device-memory` and `outside-allocator`, in bytes.
    pub device_memory: Option<u64>,
    pub outside_allocator: Option<u64>,
    /// `defaults.rules`, a file's path resolved; compiled by `check`.
    pub rules: Rules,
    /// Where `defaults.rules` is written; `None` for the default.
    pub rules_loc: Option<Loc>,
    /// `defaults.figures`: the figures judged when a target neither budgets
    /// nor tolerates them, in report order.
    pub figures: Vec<Figure>,
    /// Custom category rules in file order: name, regex.
    pub categories: Vec<Rule>,
    /// `[sites]`: what names an allocation site.
    pub sites: Sites,
    /// `[owners]`: who owns a site's file (docs/figures.md#owners).
    pub owners: Option<OwnersTable>,
    pub targets: Vec<Target>,
    /// `[[waiver]]`s, in file order (docs/gate.md#waivers).
    pub waivers: Vec<Waiver>,
    /// Every category key of every target (those of a target that failed
    /// validation too), in file order.
    pub category_keys: Vec<CategoryKey>,
}

impl Budget {
    /// The figures judged when `[defaults] figures` is not set.
    pub fn default_figures() -> Vec<Figure> {
        Figure::ALL
            .into_iter()
            .filter(|f| f.gated_by_default())
            .collect()
    }
}

impl Target {
    /// Whether the figure is judged: listed by `[defaults] figures` (or
    /// gated by default), or budgeted or tolerated by this target.
    pub fn judges(&self, figure: Figure, budget: &Budget) -> bool {
        budget.figures.contains(&figure)
            || self.budget.contains_key(&figure)
            || self.tolerance.contains_key(&figure)
    }

    /// The tolerance of one figure: the target's override, else the
    /// default, which only warns when the figure's budget only warns (a
    /// report-only figure must not fail the gate by growing either) or the
    /// figure is too noisy to fail on by default ([`Figure::warns_by_default`]).
    pub fn tolerance_of(&self, figure: Figure, budget: &Budget) -> Tolerance {
        if let Some(t) = self.tolerance.get(&figure) {
            return t.clone();
        }
        let limit = self.budget.get(&figure);
        let mut t = budget.tolerance.under(limit);
        // A noisy figure's growth only warns unless the target asks
        // (docs/gate.md#noise).
        if figure.warns_by_default() {
            t.level = Level::Warn;
        }
        t
    }

    /// The phase checks of this target: every (phase, figure) with a
    /// budget or a tolerance, in file order (budgets first), each with its
    /// limit and tolerance (the phase's own, else the figure's).
    pub fn phase_checks(&self, budget: &Budget) -> Vec<(String, Figure, Option<Limit>, Tolerance)> {
        let mut out: Vec<(String, Figure, Option<Limit>, Tolerance)> = Vec::new();
        let keys = self
            .phase_budget
            .iter()
            .map(|p| (&p.phase, p.figure))
            .chain(self.phase_tolerance.iter().map(|p| (&p.phase, p.figure)));
        for (phase, figure) in keys {
            if out.iter().any(|(p, f, _, _)| p == phase && *f == figure) {
                continue;
            }
            let limit = self
                .phase_budget
                .iter()
                .find(|p| &p.phase == phase && p.figure == figure)
                .map(|p| p.limit.clone());
            let tolerance = self
                .phase_tolerance
                .iter()
                .find(|p| &p.phase == phase && p.figure == figure)
                .map_or_else(
                    || match &limit {
                        // A phase's own limit sets the level of its growth
                        // check, as a figure's does.
                        Some(l) if !self.tolerance.contains_key(&figure) => {
                            budget.tolerance.under(Some(l))
                        }
                        _ => self.tolerance_of(figure, budget),
                    },
                    |p| p.tolerance.clone(),
                );
            out.push((phase.clone(), figure, limit, tolerance));
        }
        out
    }

    /// The level of a figure's own checks that are not a comparison (a
    /// missing trace): its budget's, or fail.
    pub fn level_of(&self, figure: Figure) -> Level {
        self.budget.get(&figure).map_or(Level::Fail, |l| l.level)
    }
}

impl Tolerance {
    /// This tolerance applied to a value with `limit` as its budget: at
    /// `warn` when the budget is, so growth of a report-only value warns.
    pub fn under(&self, limit: Option<&Limit>) -> Tolerance {
        let mut t = self.clone();
        if limit.is_some_and(|l| l.level == Level::Warn) {
            t.level = Level::Warn;
        }
        t
    }
}
