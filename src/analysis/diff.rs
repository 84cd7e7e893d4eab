//! Differences between two analyses of the same job (`memgate diff`):
//! whether a peak moved to another phase or iteration, figure and category
//! deltas, and allocation sites that grew, shrank, appeared or vanished,
//! largest change first.
//!
//! A percentage is given only where its base means something: a count
//! above 0, or bytes at least [`MIN_PERCENT_BASE`] and at least
//! 1/[`PEAK_SHARE`] of the device's allocated peak (the larger of the two
//! sides). A 2 KiB category that became 40 MiB is "+40 MiB", not
//! "+2000000%".

use crate::vocab::Device;
use std::collections::BTreeMap;

use serde::Serialize;

use super::moment::{PeakAt, Place};
use super::types::{DeviceReport, Figure};

/// The smallest byte base a percentage is given for.
pub const MIN_PERCENT_BASE: u64 = 1 << 20;
/// A byte base under 1/`PEAK_SHARE` of the device's allocated peak gets
/// no percentage either.
pub const PEAK_SHARE: u64 = 100;

/// One number in both analyses.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Delta {
    pub(crate) id: String,
    pub(crate) base: u64,
    pub(crate) new: u64,
    pub(crate) delta: i128,
    /// `None` when the base is 0 or under the floor it was made with.
    pub(crate) percent: Option<f64>,
}

impl Delta {
    pub fn new(id: &str, base: u64, new: u64) -> Delta {
        Delta::with_floor(id, base, new, 1)
    }

    /// A delta whose percentage is given only when `base ≥ floor` (and
    /// `base > 0`).
    pub fn with_floor(id: &str, base: u64, new: u64, floor: u64) -> Delta {
        let delta = i128::from(new) - i128::from(base);
        Delta {
            id: id.to_string(),
            base,
            new,
            delta,
            percent: (base > 0 && base >= floor).then(|| delta as f64 * 100.0 / base as f64),
        }
    }
}

/// The smallest byte base given a percentage on a device whose allocated
/// peak is `peak` (see the module comment).
pub fn percent_floor(peak: u64) -> u64 {
    MIN_PERCENT_BASE.max(peak / PEAK_SHARE)
}

/// A peak reached in another phase or iteration in NEW than in BASE.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PeakMove {
    pub peak: PeakAt,
    pub base: Place,
    pub new: Place,
}

/// How a site changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteChangeKind {
    Grew,
    Shrank,
    Appeared,
    Vanished,
}

impl SiteChangeKind {
    pub(crate) fn id(self) -> &'static str {
        match self {
            SiteChangeKind::Grew => "grew",
            SiteChangeKind::Shrank => "shrank",
            SiteChangeKind::Appeared => "appeared",
            SiteChangeKind::Vanished => "vanished",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SiteChange {
    pub site: String,
    pub change: SiteChangeKind,
    pub base: u64,
    pub new: u64,
    pub delta: i128,
}

/// The differences on one device (`None` side: the device is missing there).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeviceDiff {
    pub device: Device,
    pub in_base: bool,
    pub in_new: bool,
    /// The allocated and dynamic peaks that moved (both sides explained).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub peak_moved: Vec<PeakMove>,
    pub figures: Vec<Delta>,
    /// Bytes per category at the allocated peak.
    pub categories: Vec<Delta>,
    pub sites: Vec<SiteChange>,
    /// Each side's trace is whole (`false`: it started mid-run, so that
    /// side's figures are lower bounds; docs/figures.md#lower-bounds). The
    /// text and the page say it; the JSON (schema 1) does not.
    #[serde(skip)]
    pub complete: Sides,
}

/// Whether each side's trace is whole (a side without the device: true).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    pub base: bool,
    pub new: bool,
}

impl Default for Sides {
    fn default() -> Sides {
        Sides {
            base: true,
            new: true,
        }
    }
}

/// Compare two analyses device by device (by ordinal).
pub(crate) fn diff_reports(base: &[DeviceReport], new: &[DeviceReport]) -> Vec<DeviceDiff> {
    let mut ids: Vec<Device> = base.iter().chain(new).map(|d| d.device).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|id| {
            let b = base.iter().find(|d| d.device == id);
            let n = new.iter().find(|d| d.device == id);
            device_diff(id, b, n)
        })
        .collect()
}

/// The allocated and dynamic peaks whose annotation or iteration differs
/// between the two sides (none unless both say where their peaks fall).
fn peak_moves(b: Option<&DeviceReport>, n: Option<&DeviceReport>) -> Vec<PeakMove> {
    let (Some(bp), Some(np)) = (
        b.and_then(|d| d.peak_phase.as_ref()),
        n.and_then(|d| d.peak_phase.as_ref()),
    ) else {
        return Vec::new();
    };
    [PeakAt::AllocatedPeak, PeakAt::DynamicPeak]
        .into_iter()
        .filter_map(|at| {
            let (x, y) = (bp.of(at)?, np.of(at)?);
            let moved = x.annotation != y.annotation || x.iteration != y.iteration;
            moved.then(|| PeakMove {
                peak: at,
                base: x.clone(),
                new: y.clone(),
            })
        })
        .collect()
}

fn device_diff(device: Device, b: Option<&DeviceReport>, n: Option<&DeviceReport>) -> DeviceDiff {
    let peak = |d: Option<&DeviceReport>| d.map_or(0, |d| d.figures.allocated_peak);
    let floor = percent_floor(peak(b).max(peak(n)));
    // A time-structure or host figure neither side has is left out.
    let figures = Figure::ALL
        .iter()
        .filter_map(|f| {
            let (x, y) = (b.and_then(|d| f.value(d)), n.and_then(|d| f.value(d)));
            (x.is_some() || y.is_some() || !(f.needs_iterations() || f.is_host())).then(|| {
                Delta::with_floor(
                    f.id(),
                    x.unwrap_or(0),
                    y.unwrap_or(0),
                    if f.is_bytes() { floor } else { 1 },
                )
            })
        })
        .collect();
    let mut cats: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (k, v) in b.iter().flat_map(|d| &d.categories.at_allocated_peak) {
        cats.entry(k).or_default().0 = *v;
    }
    for (k, v) in n.iter().flat_map(|d| &d.categories.at_allocated_peak) {
        cats.entry(k).or_default().1 = *v;
    }
    let mut categories: Vec<Delta> = cats
        .into_iter()
        .map(|(k, (x, y))| Delta::with_floor(k, x, y, floor))
        .collect();
    categories.sort_by(|a, b| b.delta.abs().cmp(&a.delta.abs()).then(a.id.cmp(&b.id)));
    let mut sites: BTreeMap<&str, (Option<u64>, Option<u64>)> = BTreeMap::new();
    for s in b.iter().flat_map(|d| &d.sites_at_peak) {
        sites.entry(&s.site).or_default().0 = Some(s.bytes);
    }
    for s in n.iter().flat_map(|d| &d.sites_at_peak) {
        sites.entry(&s.site).or_default().1 = Some(s.bytes);
    }
    let mut sites: Vec<SiteChange> = sites
        .into_iter()
        .filter_map(|(site, (x, y))| {
            let change = match (x, y) {
                (None, _) => SiteChangeKind::Appeared,
                (_, None) => SiteChangeKind::Vanished,
                (Some(x), Some(y)) if y > x => SiteChangeKind::Grew,
                (Some(x), Some(y)) if y < x => SiteChangeKind::Shrank,
                _ => return None,
            };
            let (x, y) = (x.unwrap_or(0), y.unwrap_or(0));
            Some(SiteChange {
                site: site.to_string(),
                change,
                base: x,
                new: y,
                delta: i128::from(y) - i128::from(x),
            })
        })
        .collect();
    sites.sort_by(|a, b| b.delta.abs().cmp(&a.delta.abs()).then(a.site.cmp(&b.site)));
    DeviceDiff {
        device,
        in_base: b.is_some(),
        in_new: n.is_some(),
        peak_moved: peak_moves(b, n),
        figures,
        categories,
        sites,
        complete: Sides {
            base: b.is_none_or(|d| d.trace_complete),
            new: n.is_none_or(|d| d.trace_complete),
        },
    }
}
