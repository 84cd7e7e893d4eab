//! The gated moment explained: where each peak falls in the run's time
//! structure (the annotation open at it, the iteration, the time since the
//! device's first timed entry) and each OOM with the memory at it. Built
//! from the replay's peak entries and recorded OOM moments; nothing here
//! replays the trace.

use serde::{Deserialize, Serialize};

use crate::convert::index;
use crate::snapshot::{Segment, Snapshot, StackLabels, Trace};

use super::figures::{PeakEntry, StackGroup};
use super::fragmentation::{largest_free_blocks, OomCause};
use super::phases::{self, Attribution, DevicePhases};
use super::replay::OomMoment;

/// At most this many OOM entries are detailed per device, the first ones;
/// the rest are counted (`figures.oom-events`).
pub const OOM_DETAILS: usize = 20;

/// Which peak's moment `peak` lists the live stacks of (`--at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum PeakAt {
    /// The allocated (MemoryViz) peak: the figure the README says to gate.
    AllocatedPeak,
    /// Mosaic's dynamic peak.
    DynamicPeak,
    /// The reserved (segments) peak's entry.
    ReservedPeak,
}

impl PeakAt {
    /// The figure id (`allocated-peak`…).
    pub fn id(self) -> &'static str {
        self.into()
    }
}

/// Where one entry falls in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Place {
    /// The innermost annotation open at the entry (`""`: none).
    pub annotation: String,
    /// The iteration it falls in; absent before the first boundary or
    /// where the trace has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    pub entry: u64,
    /// Seconds since the device's first timed entry; absent when the entry
    /// has no `time_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_s: Option<f64>,
}

/// Where each peak of a device is first reached (docs/figures.md#peak-phase).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct PeakPhase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_peak: Option<Place>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_peak: Option<Place>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_peak: Option<Place>,
}

impl PeakPhase {
    /// The place of one peak.
    pub fn of(&self, at: PeakAt) -> Option<&Place> {
        match at {
            PeakAt::AllocatedPeak => self.allocated_peak.as_ref(),
            PeakAt::DynamicPeak => self.dynamic_peak.as_ref(),
            PeakAt::ReservedPeak => self.reserved_peak.as_ref(),
        }
    }
}

/// One `oom` entry of the trace and the memory at it (docs/figures.md#oom).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct OomDetail {
    pub entry: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_s: Option<f64>,
    /// The size the failed allocation asked for.
    pub requested: u64,
    /// What the driver reported free on the device.
    pub device_free: u64,
    /// Allocated (MemoryViz) and reserved bytes at that moment.
    pub allocated: u64,
    pub reserved: u64,
    /// Reserved minus allocated: the free cached bytes
    /// (docs/figures.md#oom-cause; 0 in summaries written before).
    #[serde(default)]
    pub cached_free: u64,
    /// The longest free stretch of the reserved memory.
    #[serde(default)]
    pub largest_free_block: u64,
    /// Capacity, fragmentation or unexplained (absent in summaries written
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<OomCause>,
    /// The innermost annotation open at it (`""`: none).
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    /// `name (file:line)`, innermost first, shared.
    pub frames: StackLabels,
}

/// The stacks live at one peak's moment (`peak --at`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct MomentStacks {
    pub at: PeakAt,
    pub stacks: Vec<StackGroup>,
}

/// Names the place of any entry of one device: its annotation (by
/// Mosaic's attribution; on a device without annotations, the stack-rule
/// phase span holding it), its iteration (the iterations its time figures
/// use) and its time relative to the device's first timed entry.
pub(crate) struct Clock<'a> {
    trace: Trace<'a>,
    attribution: Attribution,
    /// Stack-rule phase spans (entries `from..to`, name), when the device
    /// has no annotations.
    rule_spans: Vec<(usize, usize, String)>,
    starts: Vec<usize>,
    /// The first entry after the last iteration.
    iterations_end: usize,
    first_time: Option<i64>,
}

impl<'a> Clock<'a> {
    /// `time` is the device's time structure, when it has one.
    pub(crate) fn new(
        trace: Trace<'a>,
        attribution: Attribution,
        time: Option<&DevicePhases>,
    ) -> Clock<'a> {
        let items = time
            .and_then(|t| t.iterations.as_ref())
            .map_or(&[][..], |it| &it.items[..]);
        let starts = items.iter().map(|i| index(i.from_entry)).collect();
        // Past the last iteration's end (its END annotation) is no iteration.
        let iterations_end = items
            .last()
            .map_or(0, |i| index(i.to_entry.map_or(i.from_entry, |e| e + 1)));
        let rule_spans = match time {
            Some(t) if attribution.owner.is_empty() => t
                .phases
                .iter()
                .map(|p| {
                    let to = p.to_entry.map_or(p.from_entry, |e| e + 1);
                    (index(p.from_entry), index(to), p.name.clone())
                })
                .collect(),
            _ => Vec::new(),
        };
        Clock {
            trace,
            attribution,
            rule_spans,
            starts,
            iterations_end,
            first_time: trace.iter().find_map(|e| e.time()),
        }
    }

    /// The annotation (or stack-rule phase) entry `i` belongs to.
    fn phase_at(&self, i: usize) -> &str {
        if self.attribution.owner.is_empty() {
            // Spans are in trace order; the last one begun by `i` holds it.
            let k = self.rule_spans.partition_point(|s| s.0 <= i);
            return match k.checked_sub(1).map(|k| &self.rule_spans[k]) {
                Some((_, to, name)) if i < *to => name,
                _ => phases::NO_ANNOTATION,
            };
        }
        self.attribution.name_at(i)
    }

    pub(crate) fn place(&self, i: usize) -> Place {
        let rel_s = match (self.trace.get(i).and_then(|e| e.time()), self.first_time) {
            (Some(t), Some(f)) => Some((t - f) as f64 / 1e6),
            _ => None,
        };
        Place {
            annotation: self.phase_at(i).to_string(),
            iteration: phases::iteration_of(&self.starts, i).filter(|_| i < self.iterations_end),
            entry: i as u64,
            rel_s,
        }
    }

    /// The places of the three peaks (none where the trace is empty).
    pub(crate) fn peaks(&self, e: &PeakEntry) -> PeakPhase {
        let at = |i: Option<u64>| {
            i.map(index)
                .filter(|&i| i < self.trace.len())
                .map(|i| self.place(i))
        };
        PeakPhase {
            allocated_peak: at(e.allocated_peak),
            dynamic_peak: at(e.dynamic_peak),
            reserved_peak: at(e.reserved_peak),
        }
    }

    /// The first [`OOM_DETAILS`] OOMs in detail.
    pub(crate) fn ooms(
        &self,
        snap: &Snapshot,
        segments: &[&Segment],
        ooms: &[OomMoment],
    ) -> Vec<OomDetail> {
        let ooms = &ooms[..ooms.len().min(OOM_DETAILS)];
        let at: Vec<usize> = ooms.iter().map(|o| o.index).collect();
        let largest = largest_free_blocks(self.trace, segments, &at);
        ooms.iter()
            .zip(largest)
            .map(|(o, largest_free_block)| {
                let e = self.trace.at(o.index);
                let p = self.place(o.index);
                let cached_free = o.reserved.saturating_sub(o.allocated);
                let cause = OomCause::of(e.size, cached_free, largest_free_block, e.addr);
                OomDetail {
                    entry: p.entry,
                    rel_s: p.rel_s,
                    requested: e.size,
                    device_free: e.addr,
                    allocated: o.allocated,
                    reserved: o.reserved,
                    cached_free,
                    largest_free_block,
                    cause: Some(cause),
                    phase: p.annotation,
                    iteration: p.iteration,
                    frames: snap.stack_labels(e.stack),
                }
            })
            .collect()
    }
}
