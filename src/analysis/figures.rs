//! The values one replay finds for a device (the figures, the entry of
//! each peak) and a stack group: the leaves every other analysis file
//! builds on, importing none of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::snapshot::StackLabels;
use crate::vocab::Figure;

impl Figure {
    /// The figure's value in `f` (0 for the time-structure and host
    /// figures, which `Figures` does not hold: see [`Figure::value`]).
    pub fn of(self, f: &Figures) -> u64 {
        match self {
            Figure::DynamicPeak => f.dynamic_peak,
            Figure::StaticMemory => f.static_memory,
            Figure::OverallPeak => f.overall_peak,
            Figure::AllocatedPeak => f.allocated_peak,
            Figure::ReservedPeak => f.reserved_peak,
            Figure::OomEvents => f.oom_events,
            Figure::AllocEvents => f.alloc_events,
            Figure::TraceEntries => f.trace_entries,
            Figure::CachedFreeAtReservedPeak => f.cached_free_at_reserved_peak,
            Figure::SegmentAllocs => f.segment_allocs,
            Figure::SegmentFrees => f.segment_frees,
            Figure::SegmentAllocsWithFreeCache => f.segment_allocs_with_free_cache,
            Figure::SteadyStatePeak
            | Figure::LeakPerIteration
            | Figure::HostAllocatedPeak
            | Figure::HostReservedPeak
            | Figure::HostLiveAtDevicePeak => 0,
        }
    }
}

/// The figures (docs/figures.md#figures) of one device, in bytes or counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Figures {
    pub dynamic_peak: u64,
    pub static_memory: u64,
    pub overall_peak: u64,
    pub allocated_peak: u64,
    pub reserved_peak: u64,
    pub oom_events: u64,
    pub alloc_events: u64,
    pub trace_entries: u64,
    /// The fragmentation figures (docs/figures.md#fragmentation); absent
    /// (0) in summaries written before they were kept.
    #[serde(default)]
    pub cached_free_at_reserved_peak: u64,
    #[serde(default)]
    pub segment_allocs: u64,
    #[serde(default)]
    pub segment_frees: u64,
    #[serde(default)]
    pub segment_allocs_with_free_cache: u64,
}

impl Figures {
    /// `cached-free-at-reserved-peak` over `reserved-peak`
    /// (docs/figures.md#cached-free-at-reserved-peak); `None` with nothing
    /// reserved.
    pub fn cached_free_ratio(&self) -> Option<f64> {
        (self.reserved_peak > 0)
            .then(|| self.cached_free_at_reserved_peak as f64 / self.reserved_peak as f64)
    }
}

/// The pinned host figures of a snapshot, as one device's report holds
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HostFigures {
    /// `host-allocated-peak`: the most pinned bytes handed to callers.
    pub allocated_peak: u64,
    /// `host-reserved-peak`: the most pinned bytes the host allocator held.
    pub reserved_peak: u64,
    /// `host-live-at-device-peak`: the pinned bytes handed out at this
    /// device's allocated peak (by `time_us`); absent without timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_at_device_peak: Option<u64>,
    /// Entries of `host_traces`.
    pub trace_entries: u64,
    /// The snapshot records no device (`record_cuda=False`): the report
    /// holds only these figures, and only they are judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only: bool,
}

/// Trace entry index (0-based, list order) where each peak is first reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct PeakEntry {
    pub dynamic_peak: Option<u64>,
    pub allocated_peak: Option<u64>,
    pub reserved_peak: Option<u64>,
}

/// Live allocations at the peak sharing one full stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct StackGroup {
    pub bytes: u64,
    pub count: u64,
    /// `name (file:line)`, innermost first, shared with every other list
    /// of this stack.
    pub frames: StackLabels,
    /// For a group without frames, which memory with no story it is
    /// (`pre-trace` or `frameless`, docs/figures.md#memory-with-no-story);
    /// absent in summaries written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_frames: Option<crate::vocab::NoStory>,
    /// The group's live bytes by the allocations' user metadata
    /// (docs/figures.md#user-metadata-groups), at most
    /// [`MAX_METADATA`](crate::analysis::MAX_METADATA) values, the rest
    /// summed under `…`; empty (and not written) for a trace without any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_metadata: BTreeMap<String, u64>,
}
