//! What a check found, as numbers. The verdict says *why* a check passed or
//! not in these terms; the sentences are written by `report/` alone.

use crate::vocab::Device;
use serde::Serialize;

use crate::analysis::{OomDetail, PeakAt, Place, WindowReport};

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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Neither a budget nor a baseline to judge against: reported, not judged.
    NothingToCompare { current: u64 },
    /// More OOM events than `allowed`; `first`: the first ones in detail
    /// (as many as the analysis kept, none from a summary).
    OomOverAllowed {
        current: u64,
        allowed: u64,
        allowed_by: AllowedBy,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        first: Vec<OomDetail>,
    },
    /// At most `allowed` OOM events.
    OomWithinAllowed {
        current: u64,
        allowed: u64,
        allowed_by: AllowedBy,
    },
    /// No baseline file for the snapshot: none named `looked_for` in
    /// `in_dir` (a directory or pattern), whose nearest names are `close`;
    /// both absent when no baseline is configured (`--require-baseline`).
    NoBaseline {
        looked_for: Option<String>,
        in_dir: Option<String>,
        close: Vec<String>,
        /// The names there were not compared (the run's near-name search
        /// was spent on earlier lookups): `close` is then empty.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        close_not_searched: bool,
    },
    /// The `baseline` file has no such device; it holds `devices`.
    BaselineLacksDevice {
        baseline: String,
        devices: Vec<Device>,
    },
    /// The `baseline` file has this device, the snapshot of the run does
    /// not; it holds `devices`.
    DeviceNotInRun {
        baseline: String,
        devices: Vec<Device>,
    },
    /// A baseline entry (`name`, file `baseline`) that no snapshot of the
    /// run is named after.
    NoSnapshot { name: String, baseline: String },
    /// `file` lists this device more than once: which to judge is unknown.
    DeviceListedTwice { file: String },
    /// The baseline's categories come from other rules than the run's:
    /// category bytes cannot be compared.
    RulesDiffer { baseline: String, current: String },
    /// The device's trace is empty (history recording off, or cleared): a
    /// trace-based figure is only its state at dump time. `judged`: the
    /// target's `require-trace = false` had it judged on that state anyway;
    /// otherwise the check fails without being compared.
    NoTrace { judged: bool },
    /// The run's figure (`current`), the baseline's (`baseline`) or both
    /// are only lower bounds: that trace started mid-run (the allocator's
    /// ring buffer, `max_entries`, dropped its start, and with it maybe
    /// the peak). `judged`: the check still has its status, because a
    /// lower bound over its budget fails whatever the real value is, or
    /// because the target's `accept-lower-bounds = true` takes the bounds
    /// as they are; otherwise it could not be judged.
    LowerBound {
        current: bool,
        baseline: bool,
        judged: bool,
    },
    /// A time-structure figure the snapshot does not have: `iterations`
    /// were found (the boundary annotations mark them), `needed` are needed.
    NotMeasured { iterations: u64, needed: u64 },
    /// A host figure the snapshot does not have: it records no pinned
    /// host memory (`recorded`: true when it does, but without the
    /// timestamps `host-live-at-device-peak` needs).
    NoHostMemory { recorded: bool },
    /// A device figure of a snapshot that records no device, only pinned
    /// host memory (`record_cuda=False`).
    HostOnly,
    /// A phase budget names an annotation the device has no span of; it
    /// has spans of `phases`.
    NoSuchPhase { phase: String, phases: Vec<String> },
    /// A pool budget names a pool the device does not have; it has
    /// `pools` (docs/figures.md#pools).
    NoSuchPool { pool: String, pools: Vec<String> },
    /// The pool is in the run, not in the baseline.
    PoolAppeared { pool: String },
    /// The pool was in the baseline (`baseline` bytes), not in the run.
    PoolVanished { pool: String, baseline: u64 },
    /// Up to `bytes` of the device's memory lie in no pool the snapshot
    /// names (segments made and freed by entries without `pool_id`): each
    /// pool's figure is a lower bound.
    PoolUnplaced { bytes: u64 },
    /// The baseline's iterations start at another boundary than the run's:
    /// per-iteration figures cannot be compared.
    BoundaryDiffers { baseline: String, current: String },
    /// How close a peak came to the device (docs/figures.md#device-capacity):
    /// `peak` bytes plus `outside` the allocator, of `device`.
    DeviceHeadroom {
        peak: u64,
        outside: u64,
        device: u64,
    },
    /// A budget of `share` percent of the device, and no device memory
    /// known: not judged.
    NoDeviceMemory { share: f64 },
    /// The baseline was recorded in another environment
    /// (docs/figures.md#environment): each part that differs.
    EnvironmentDiffers {
        differences: Vec<crate::analysis::environment::Difference>,
        /// Whether the target requires the same environment.
        required: bool,
    },
    /// Where the judged peak (`peak`) was reached; `baseline` is where the
    /// baseline's was, when that lies in another phase or iteration.
    /// Added to a failing or warning peak check: the gate says *when*.
    PeakAt {
        peak: PeakAt,
        place: Place,
        #[serde(skip_serializing_if = "Option::is_none")]
        baseline: Option<Place>,
    },
    /// The figures judged are those of the target's window.
    InWindow { window: WindowReport },
    /// The `window` places nothing on this device (`problem` says why):
    /// the device is not judged; the others are, inside the window.
    WindowNotPlaced { window: String, problem: String },
    /// The leak figure's fit: the RMS `residual` of the live bytes at each
    /// iteration's start around the fitted line, beside every leak check.
    LeakFit { residual: u64 },
    /// A leak `slope` over its budget or tolerance from a fit whose
    /// `residual` is larger: the growth was no line (a one-off step after
    /// warm-up, or noise), so it cannot support a leak verdict.
    LeakInconclusive { slope: u64, residual: u64 },
    /// Across `ranks` ranks, the `heaviest` one's value (`max`) is
    /// `imbalance` percent above the `mean` (docs/figures.md#ranks); the
    /// `limit` is the budget's, percent.
    RankImbalance {
        heaviest: String,
        max: u64,
        mean: f64,
        imbalance: f64,
        limit: f64,
        ranks: usize,
    },
    /// The heaviest `rank`'s value (`current`) against the `heaviest` limit.
    HeaviestRank {
        rank: String,
        current: u64,
        limit: u64,
    },
    /// `rank` is in the `baseline` and missing from the run.
    RankMissing { rank: String, baseline: String },
    /// Every rank of the baseline is in the run, which has `ranks`.
    RanksPresent { ranks: usize },
    /// The figures across ranks could not be judged whole: the ranks
    /// `unreadable` gave no figures, those of `lower-bounds` only lower
    /// bounds (a trace started mid-run, or none recorded).
    RanksIncomplete {
        unreadable: Vec<String>,
        lower_bounds: Vec<String>,
    },
    /// A `stages` entry claims no rank of the run.
    StageEmpty { stage: String },
    /// The figure over `runs` repeated runs of one name
    /// (docs/gate.md#repeated-runs): the value judged is their `statistic`;
    /// `spread` is `max - min` as a percentage of the median (none from a
    /// zero median). `wider`: the spread is wider than the `tolerance` the
    /// check compared with, so growth within it may be the runs' noise.
    Repeats {
        runs: usize,
        min: u64,
        median: u64,
        max: u64,
        statistic: crate::vocab::Statistic,
        spread: Option<f64>,
        tolerance: Option<f64>,
        wider: bool,
    },
    /// A `[[waiver]]` (written `at`) lets this failure through until its
    /// last day `until` (docs/gate.md#waivers), for `reason`; `maximum`:
    /// the most it allows.
    Waived {
        reason: String,
        until: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        maximum: Option<u64>,
        at: String,
    },
    /// The waiver written `at` ended on `until`: the failure fails again.
    WaiverExpired {
        reason: String,
        until: String,
        at: String,
    },
    /// The value is past the `maximum` of the waiver written `at`.
    WaiverExceeded {
        reason: String,
        until: String,
        maximum: u64,
        at: String,
    },
}

/// Where a snapshot's baseline was looked for in vain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The snapshot's name: the `key` capture or the file stem.
    pub looked_for: String,
    /// The baseline directory or pattern.
    pub in_dir: String,
    /// The names there nearest to `looked_for`, nearest first.
    pub close: Vec<String>,
    /// Whether the names there were not compared (see
    /// [`Finding::NoBaseline`]).
    pub close_not_searched: bool,
}

impl Lookup {
    /// The finding of a snapshot judged without its baseline.
    pub fn finding(&self) -> Finding {
        Finding::NoBaseline {
            looked_for: Some(self.looked_for.clone()),
            in_dir: Some(self.in_dir.clone()),
            close: self.close.clone(),
            close_not_searched: self.close_not_searched,
        }
    }
}

/// Where the allowed number of OOM events comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AllowedBy {
    /// The target's `oom-events` budget.
    Budget,
    /// The baseline's own count.
    Baseline,
    /// Neither: none are allowed.
    Default,
}
