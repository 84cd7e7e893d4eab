//! What a check found, as numbers. The verdict says *why* a check passed or
//! not in these terms; the sentences are written by `report/` alone.

use serde::Serialize;

/// One reason behind a [`Check`](super::Check)'s status, in the check's unit.
///
/// A check carries one or more: a value can be over its budget and past its
/// baseline's tolerance at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Finding {
    /// `current` is over the budget's `limit` by `over`.
    OverBudget { limit: u64, current: u64, over: u64 },
    /// `current` grew by `grew` over the `baseline`, past the `tolerance`
    /// (percent) and the noise floor; `percent` is the growth relative to
    /// the baseline, absent when the baseline is zero.
    Grew {
        baseline: u64,
        current: u64,
        grew: u64,
        percent: Option<f64>,
        tolerance: f64,
    },
    /// `current` is `shrank` below the `baseline`, `percent` of it.
    Shrank {
        baseline: u64,
        current: u64,
        shrank: u64,
        percent: f64,
    },
    /// Nothing against it: within the `budget`, within the `tolerance` of
    /// the `baseline`, or both (the absent ones were not there to judge by).
    Within {
        current: u64,
        budget: Option<u64>,
        baseline: Option<u64>,
        tolerance: Option<f64>,
    },
    /// Neither a budget nor a baseline to judge against: skipped.
    NothingToCompare { current: u64 },
    /// More OOM events than `allowed`.
    OomOverAllowed {
        current: u64,
        allowed: u64,
        allowed_by: AllowedBy,
    },
    /// At most `allowed` OOM events.
    OomWithinAllowed {
        current: u64,
        allowed: u64,
        allowed_by: AllowedBy,
    },
    /// `--require-baseline`, and the snapshot's baseline has no such device
    /// (or there is no baseline at all).
    NoBaseline,
    /// The device's trace is empty (history recording off, or cleared): a
    /// trace-based figure is only its state at dump time. `judged`: the
    /// target's `require-trace = false` had it judged on that state anyway;
    /// otherwise the check fails without being compared.
    NoTrace { judged: bool },
}

/// Where the allowed number of OOM events comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllowedBy {
    /// The target's `oom-events` budget.
    Budget,
    /// The baseline's own count.
    Baseline,
    /// Neither: none are allowed.
    Default,
}
