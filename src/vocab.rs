//! The ids memgate speaks in, on the ground floor: figures, their units and
//! the names of rule sets. Every layer may import this module; it imports
//! nothing of memgate's.
//!
//! The kebab-case ids are derived (`strum`), so a new figure is one variant
//! here (plus the two per-figure facts below, which the compiler asks for)
//! and the place where its value is computed.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use strum::{EnumCount, EnumString, IntoStaticStr, VariantArray};

/// Figure ids: the TOML keys, JSON keys and JUnit case names at once, so
/// renaming one is a reviewed API change.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    EnumCount,
    EnumString,
    IntoStaticStr,
    VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Figure {
    DynamicPeak,
    StaticMemory,
    OverallPeak,
    AllocatedPeak,
    ReservedPeak,
    OomEvents,
    AllocEvents,
    TraceEntries,
    /// The highest allocated peak of the iterations after the first.
    SteadyStatePeak,
    /// Growth of the live bytes per iteration (least squares; 0 when
    /// shrinking).
    LeakPerIteration,
    /// Reserved minus allocated bytes at the reserved peak: the cache the
    /// allocator held free when it held the most.
    CachedFreeAtReservedPeak,
    /// `segment_alloc` and `segment_map` entries: the cache grown.
    SegmentAllocs,
    /// `segment_free` and `segment_unmap` entries: the cache given back.
    SegmentFrees,
    /// Segment allocations made while the free cached bytes would have
    /// covered the request (docs/figures.md#segment-allocs-with-free-cache).
    SegmentAllocsWithFreeCache,
    /// The most pinned host bytes handed to callers
    /// (docs/figures.md#pinned-host-memory).
    HostAllocatedPeak,
    /// The most pinned host bytes the host allocator held.
    HostReservedPeak,
    /// The pinned host bytes handed out at the device's allocated peak.
    HostLiveAtDevicePeak,
}

impl Figure {
    /// Every figure, in report order (the enum's order).
    pub const ALL: [Figure; Figure::COUNT] = {
        // `VARIANTS` is a slice; callers iterate figures by value.
        let mut all = [Figure::DynamicPeak; Figure::COUNT];
        let mut i = 0;
        while i < Figure::COUNT {
            all[i] = Figure::VARIANTS[i];
            i += 1;
        }
        all
    };

    pub fn id(self) -> &'static str {
        self.into()
    }

    pub fn from_id(id: &str) -> Option<Figure> {
        id.parse().ok()
    }

    /// What the figure counts. An exhaustive match, so a new figure must
    /// say.
    pub fn unit(self) -> Unit {
        match self {
            Figure::DynamicPeak
            | Figure::StaticMemory
            | Figure::OverallPeak
            | Figure::AllocatedPeak
            | Figure::ReservedPeak
            | Figure::SteadyStatePeak
            | Figure::LeakPerIteration
            | Figure::CachedFreeAtReservedPeak
            | Figure::HostAllocatedPeak
            | Figure::HostReservedPeak
            | Figure::HostLiveAtDevicePeak => Unit::Bytes,
            Figure::OomEvents
            | Figure::AllocEvents
            | Figure::TraceEntries
            | Figure::SegmentAllocs
            | Figure::SegmentFrees
            | Figure::SegmentAllocsWithFreeCache => Unit::Count,
        }
    }

    /// Whether the figure is a byte count (the others are event counts).
    pub fn is_bytes(self) -> bool {
        self.unit() == Unit::Bytes
    }

    /// Whether `check` judges the figure when `[defaults] figures` is not
    /// set and a target neither budgets nor tolerates it. The event counts
    /// other than OOMs describe the workload rather than its memory, so
    /// they are judged only when asked for.
    pub fn gated_by_default(self) -> bool {
        match self {
            Figure::DynamicPeak
            | Figure::StaticMemory
            | Figure::OverallPeak
            | Figure::AllocatedPeak
            | Figure::ReservedPeak
            | Figure::OomEvents => true,
            Figure::AllocEvents
            | Figure::TraceEntries
            | Figure::SteadyStatePeak
            | Figure::LeakPerIteration
            | Figure::CachedFreeAtReservedPeak
            | Figure::SegmentAllocs
            | Figure::SegmentFrees
            | Figure::SegmentAllocsWithFreeCache
            | Figure::HostAllocatedPeak
            | Figure::HostReservedPeak
            | Figure::HostLiveAtDevicePeak => false,
        }
    }

    /// Whether the figure's growth only warns unless the target sets its
    /// tolerance (docs/gate.md#noise): the reserved peak moves with the
    /// allocator's pool history between identical runs (sglang measured
    /// 35,926–39,026 MiB, 8.6%, for the same work), so it is reported and
    /// warned, and the allocated figures are what fails the gate.
    pub fn warns_by_default(self) -> bool {
        matches!(self, Figure::ReservedPeak)
    }

    /// Whether the figure is one of pinned host memory
    /// (docs/figures.md#pinned-host-memory): only snapshots recorded with
    /// `record_pinned_host_memory=True` have it.
    pub fn is_host(self) -> bool {
        matches!(
            self,
            Figure::HostAllocatedPeak | Figure::HostReservedPeak | Figure::HostLiveAtDevicePeak
        )
    }

    /// The host figures judged on a host-only snapshot when neither
    /// `[defaults] figures` nor the target names one (its device figures
    /// are not judged: it has no device).
    pub fn gated_on_host_only(self) -> bool {
        matches!(self, Figure::HostAllocatedPeak | Figure::HostReservedPeak)
    }

    /// Whether the figure is measured over iterations (docs/figures.md#iterations): only
    /// snapshots whose annotations mark iterations have it.
    pub fn needs_iterations(self) -> bool {
        matches!(self, Figure::SteadyStatePeak | Figure::LeakPerIteration)
    }

    /// Whether the figure describes the cache's fragmentation
    /// (docs/figures.md#fragmentation).
    pub fn is_fragmentation(self) -> bool {
        matches!(
            self,
            Figure::CachedFreeAtReservedPeak
                | Figure::SegmentAllocs
                | Figure::SegmentFrees
                | Figure::SegmentAllocsWithFreeCache
        )
    }

    /// The figures a phase budget (`[target.budget.phase."NAME"]`) may
    /// name: those measured per phase span.
    pub const PER_PHASE: [Figure; 2] = [Figure::AllocatedPeak, Figure::DynamicPeak];

    /// The figures a pool budget (`[target.budget.pool."NAME"]`) may name:
    /// those measured per memory pool (docs/figures.md#pools).
    pub const PER_POOL: [Figure; 2] = [Figure::AllocatedPeak, Figure::ReservedPeak];

    /// Whether the figure is read from the allocation trace: with an empty
    /// trace (history recording off, or cleared) it is only the state at
    /// dump time. Static memory and the reserved peak are dump-time facts
    /// of the segments whatever the trace holds.
    pub fn is_trace_based(self) -> bool {
        match self {
            Figure::DynamicPeak
            | Figure::OverallPeak
            | Figure::AllocatedPeak
            | Figure::OomEvents
            | Figure::AllocEvents
            | Figure::TraceEntries
            | Figure::SteadyStatePeak
            | Figure::LeakPerIteration
            | Figure::CachedFreeAtReservedPeak
            | Figure::SegmentAllocs
            | Figure::SegmentFrees
            | Figure::SegmentAllocsWithFreeCache => true,
            // Host figures have bounds of their own: the host trace's.
            Figure::StaticMemory
            | Figure::ReservedPeak
            | Figure::HostAllocatedPeak
            | Figure::HostReservedPeak
            | Figure::HostLiveAtDevicePeak => false,
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Which value of a set of repeated runs (one key, several snapshots) a
/// target judges (docs/gate.md#repeated-runs): `statistic` in `[[target]]`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    EnumString,
    IntoStaticStr,
    VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Statistic {
    /// The middle value (the mean of the two middle ones for an even count).
    #[default]
    Median,
    Min,
    Max,
}

impl Statistic {
    pub fn id(self) -> &'static str {
        self.into()
    }

    /// The statistic of `sorted` (ascending, not empty).
    pub fn of_sorted(self, sorted: &[u64]) -> u64 {
        let n = sorted.len();
        match self {
            Statistic::Min => sorted[0],
            Statistic::Max => sorted[n - 1],
            Statistic::Median if n % 2 == 1 => sorted[n / 2],
            // The mean of the two middle values, without overflow.
            Statistic::Median => {
                let (a, b) = (sorted[n / 2 - 1], sorted[n / 2]);
                a + (b - a) / 2
            }
        }
    }
}

/// What a figure, a budget or a check counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Unit {
    Bytes,
    Count,
}

impl Unit {
    pub fn id(self) -> &'static str {
        self.into()
    }
}

/// Memory with no story: what memgate calls memory it cannot place by a
/// frame of its own allocation (docs/figures.md#memory-with-no-story). One
/// name each, the same in every output (category, site, stack table, JSON,
/// Markdown, JUnit, page, Python, MCP), and one sentence that every output
/// prints where the name first appears.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum NoStory {
    /// Live since before recording began: its allocation was never
    /// recorded, so it has no frames.
    PreTrace,
    /// Allocated while recording, but recorded without a single frame.
    Frameless,
    /// Its stack has frames, but none that memgate can name a site by.
    UnknownSite,
}

impl NoStory {
    /// The name: a category, a site and a stack label at once.
    pub const fn id(self) -> &'static str {
        match self {
            NoStory::PreTrace => "pre-trace",
            NoStory::Frameless => "frameless",
            NoStory::UnknownSite => "unknown-site",
        }
    }

    /// Every kind, in report order.
    pub fn all() -> &'static [NoStory] {
        NoStory::VARIANTS
    }

    /// The name read back (a site, a category, a stack label).
    pub fn from_id(id: &str) -> Option<NoStory> {
        NoStory::VARIANTS.iter().copied().find(|n| n.id() == id)
    }

    /// One sentence on what the name means, for the legend line of every
    /// output that shows it.
    pub const fn meaning(self) -> &'static str {
        match self {
            NoStory::PreTrace => {
                "memory live since before recording began: its allocation was not \
                 recorded, so it has no frames (record history before the model is built \
                 to see it)"
            }
            NoStory::Frameless => {
                "memory allocated while recording, but recorded with no frames at all \
                 (C++ frames off, or torch_npu on AArch64); its category comes from its \
                 phase and lifetime where a rule fits"
            }
            NoStory::UnknownSite => {
                "memory whose stack has frames, but none that names a site (no Python \
                 frame: C++ or `??` frames only)"
            }
        }
    }

    /// `pre-trace: memory live since …`: the legend line.
    pub fn legend(self) -> String {
        format!("{}: {}", self.id(), self.meaning())
    }

    /// The names among `names`, each once, in the enum's order: what a
    /// legend under a list of sites, stacks or categories explains.
    pub fn among<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<NoStory> {
        let mut seen: Vec<NoStory> = names.into_iter().filter_map(NoStory::from_id).collect();
        seen.sort();
        seen.dedup();
        seen
    }
}

impl fmt::Display for NoStory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A category rule set as named by `--rules` or `defaults.rules`: the one
/// parser of that spec (what the file holds is analysis's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rules {
    Default,
    Mosaic,
    /// A TOML file with a `[categories]` and/or a `[phases]` table.
    File(PathBuf),
}

impl FromStr for Rules {
    type Err = std::convert::Infallible;

    /// Anything but the two built-in names is a path.
    fn from_str(spec: &str) -> Result<Rules, Self::Err> {
        Ok(match spec {
            "default" => Rules::Default,
            "mosaic" => Rules::Mosaic,
            path => Rules::File(PathBuf::from(path)),
        })
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rules::Default => f.write_str("default"),
            Rules::Mosaic => f.write_str("mosaic"),
            Rules::File(p) => write!(f, "{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_ids_are_kebab_case_and_read_back() {
        assert_eq!(Figure::OverallPeak.id(), "overall-peak");
        assert_eq!(Figure::OomEvents.to_string(), "oom-events");
        for f in Figure::ALL {
            assert_eq!(Figure::from_id(f.id()), Some(f));
        }
        assert_eq!(Figure::from_id("overall_peak"), None);
    }

    #[test]
    fn all_lists_every_figure_once_in_enum_order() {
        assert_eq!(Figure::ALL.as_slice(), Figure::VARIANTS);
        assert!(Figure::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn sizes_are_bytes_and_events_are_counts() {
        assert_eq!(Figure::ReservedPeak.unit(), Unit::Bytes);
        assert!(!Figure::AllocEvents.is_bytes());
        assert_eq!(Unit::Count.id(), "count");
    }

    #[test]
    fn each_kind_of_memory_with_no_story_has_one_name_that_reads_back() {
        let ids: Vec<&str> = NoStory::VARIANTS.iter().map(|n| n.id()).collect();
        assert_eq!(ids, ["pre-trace", "frameless", "unknown-site"]);
        for n in NoStory::VARIANTS {
            assert_eq!(NoStory::from_id(n.id()), Some(*n));
            assert_eq!(serde_json::to_value(n).unwrap(), n.id());
            assert!(n.legend().starts_with(&format!("{}: memory ", n.id())));
        }
        assert_eq!(NoStory::from_id("<unknown>"), None);
        assert_eq!(
            NoStory::among(["frameless", "x (a.py)", "pre-trace", "frameless"]),
            [NoStory::PreTrace, NoStory::Frameless]
        );
    }

    #[test]
    fn a_rules_spec_is_a_built_in_name_or_a_path() {
        assert_eq!("default".parse(), Ok(Rules::Default));
        assert_eq!("mosaic".parse(), Ok(Rules::Mosaic));
        assert_eq!(
            "rules/mosaic.toml".parse(),
            Ok(Rules::File("rules/mosaic.toml".into()))
        );
        assert_eq!(Rules::File("r.toml".into()).to_string(), "r.toml");
    }
}

/// A device ordinal (`cuda:N`, `npu:N`), from the snapshot to every report,
/// verdict, finding and budget target. Serialised, parsed and printed as the
/// bare number it always was; its own type so it is never mixed up with an
/// entry index, a count or a frame id.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Device(u32);

impl Device {
    /// The device with ordinal `n`.
    pub const fn new(n: u32) -> Device {
        Device(n)
    }

    /// The ordinal.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The ordinal as a table position (`u32` always fits a 64-bit `usize`).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<u32> for Device {
    fn from(n: u32) -> Device {
        Device(n)
    }
}

impl TryFrom<u64> for Device {
    type Error = std::num::TryFromIntError;

    /// A device index read from a file; past `u32::MAX` it is refused.
    fn try_from(n: u64) -> Result<Device, Self::Error> {
        u32::try_from(n).map(Device)
    }
}

impl TryFrom<usize> for Device {
    type Error = std::num::TryFromIntError;

    fn try_from(n: usize) -> Result<Device, Self::Error> {
        u32::try_from(n).map(Device)
    }
}

impl PartialEq<u32> for Device {
    fn eq(&self, other: &u32) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
