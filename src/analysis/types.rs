//! The figures one analysis produces: computed once, rendered by every
//! command and reporter, and stored as the summary (baseline) JSON.

use crate::vocab::Device;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::vocab::Figure;

use super::dump::DumpState;
use super::environment::Fingerprint;
use super::figures::{Figures, HostFigures, PeakEntry, StackGroup};
use super::moment::{MomentStacks, OomDetail, PeakPhase};
use super::pools::PoolFigures;
use super::window::WindowReport;

impl Figure {
    /// The figure's value for a device; `None` for a time-structure figure
    /// the device does not have (no iterations, too few for a leak fit).
    pub fn value(self, d: &DeviceReport) -> Option<u64> {
        let time = d.time.as_ref();
        match self {
            Figure::SteadyStatePeak => time.and_then(|t| t.steady_state_peak),
            Figure::HostAllocatedPeak => d.host.map(|h| h.allocated_peak),
            Figure::HostReservedPeak => d.host.map(|h| h.reserved_peak),
            Figure::HostLiveAtDevicePeak => d.host.and_then(|h| h.live_at_device_peak),
            Figure::LeakPerIteration => time
                .and_then(|t| t.leak_per_iteration)
                .map(|l| l.max(0).unsigned_abs()),
            f => Some(f.of(&d.figures)),
        }
    }
}

/// Per-category bytes (docs/figures.md#categories), keyed by category name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Categories {
    /// `default`, `mosaic`, or the custom rules' source.
    pub rules: String,
    pub at_allocated_peak: BTreeMap<String, u64>,
    pub at_dynamic_peak: BTreeMap<String, u64>,
    /// Each category's own peak over the trace.
    pub peaks: BTreeMap<String, u64>,
    /// The custom rules' categories, in rule order (reports list them
    /// first, 0 B included); absent without custom rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom: Vec<String>,
}

/// Live bytes at the peak attributed to one allocation site (docs/figures.md#stacks-and-sites).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct SiteBytes {
    /// `function (file)`, no line number, so it survives code moving; the
    /// file by its portable name (docs/figures.md#sites).
    pub site: String,
    pub bytes: u64,
    pub count: u64,
    /// The site's file as the snapshot recorded it (its first stack's),
    /// for display only: runs are compared by `site`, and a summary leaves
    /// it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
}

/// One figure over the repeated runs of one snapshot name
/// (docs/gate.md#repeated-runs): their count, min, median and max, and the
/// statistic the folded value is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Spread {
    pub runs: usize,
    pub min: u64,
    pub median: u64,
    pub max: u64,
    pub statistic: crate::vocab::Statistic,
}

impl Spread {
    /// `max - min` as a share of the median, percent; none from a zero median.
    pub fn percent(&self) -> Option<f64> {
        (self.median > 0)
            .then(|| self.max.saturating_sub(self.min) as f64 * 100.0 / self.median as f64)
    }
}

/// Everything computed for one device of one snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct DeviceReport {
    pub device: Device,
    pub figures: Figures,
    pub categories: Categories,
    pub peak_entry: PeakEntry,
    /// `time_us` at each peak entry, when the trace has timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_time_us: Option<PeakEntry>,
    /// False when the trace started mid-run (figures are then "at least").
    pub trace_complete: bool,
    pub stacks_at_peak: Vec<StackGroup>,
    pub sites_at_peak: Vec<SiteBytes>,
    /// Iterations and phases (docs/figures.md#time-structure), when the trace has annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeFigures>,
    /// Where each peak falls (docs/figures.md#peak-phase); absent only for an
    /// empty trace (and in summaries written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_phase: Option<PeakPhase>,
    /// The stacks live at the peak `memgate peak --at` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks_at_moment: Option<MomentStacks>,
    /// The first OOM entries in detail (docs/figures.md#oom); the count of all
    /// is `figures.oom-events`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom: Vec<OomDetail>,
    /// Inconsistencies found while analysing (the figures are still given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where the window lies, when the figures are those of a window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowReport>,
    /// What the dump shows, for a device without allocation history (an
    /// empty trace): docs/figures.md#a-dump-without-history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump: Option<DumpState>,
    /// The environment the snapshot was recorded in
    /// (docs/figures.md#environment); absent in summaries written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Fingerprint>,
    /// Each memory pool's figures (docs/figures.md#pools), `default` first;
    /// empty when the device has only the default pool (and in summaries
    /// written before pools were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolFigures>,
    /// Each figure's spread (by figure id) when the device is repeated runs
    /// folded into one (docs/gate.md#repeated-runs); empty for one run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spreads: BTreeMap<String, Spread>,
    /// Pinned host memory (docs/figures.md#pinned-host-memory), when the
    /// snapshot records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostFigures>,
}

/// The figures of a device's time structure that budgets and baselines
/// judge (`memgate phases` lists the detail).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct TimeFigures {
    /// How many iterations the boundary annotations mark.
    pub iterations: u64,
    /// What starts an iteration (`ProfilerStep#*:START`, `stack /re/`…):
    /// figures from other boundaries are not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state_peak: Option<u64>,
    /// Bytes per iteration (negative: shrinking), when fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_per_iteration: Option<i64>,
    /// The leak fit's RMS residual in bytes: a slope smaller than it
    /// cannot be told from a one-off step or noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_residual: Option<u64>,
    /// Per annotation name, the maximum over its spans.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phases: BTreeMap<String, PhaseFigures>,
}

/// A phase's figures: the maximum over its spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct PhaseFigures {
    pub allocated_peak: u64,
    pub dynamic_peak: u64,
}

impl PhaseFigures {
    /// The value of a [`Figure::PER_PHASE`] figure.
    pub fn value(&self, f: Figure) -> Option<u64> {
        match f {
            Figure::AllocatedPeak => Some(self.allocated_peak),
            Figure::DynamicPeak => Some(self.dynamic_peak),
            _ => None,
        }
    }
}
