//! Differences between two analyses of the same job (`memgate diff`):
//! figure and category deltas, and allocation sites that grew, shrank,
//! appeared or vanished, largest change first.

use std::collections::BTreeMap;

use serde::Serialize;

use super::types::{DeviceReport, Figure};

/// One number in both analyses.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Delta {
    pub(crate) id: String,
    pub(crate) base: u64,
    pub(crate) new: u64,
    pub(crate) delta: i128,
    /// `None` when the base is 0.
    pub(crate) percent: Option<f64>,
}

impl Delta {
    pub fn new(id: &str, base: u64, new: u64) -> Delta {
        let delta = i128::from(new) - i128::from(base);
        Delta {
            id: id.to_string(),
            base,
            new,
            delta,
            percent: (base > 0).then(|| delta as f64 * 100.0 / base as f64),
        }
    }
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
    pub device: u32,
    pub in_base: bool,
    pub in_new: bool,
    pub figures: Vec<Delta>,
    /// Bytes per category at the allocated peak.
    pub categories: Vec<Delta>,
    pub sites: Vec<SiteChange>,
}

/// Compare two analyses device by device (by ordinal).
pub(crate) fn diff_reports(base: &[DeviceReport], new: &[DeviceReport]) -> Vec<DeviceDiff> {
    let mut ids: Vec<u32> = base.iter().chain(new).map(|d| d.device).collect();
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

fn device_diff(device: u32, b: Option<&DeviceReport>, n: Option<&DeviceReport>) -> DeviceDiff {
    // A time-structure figure neither side has is left out.
    let figures = Figure::ALL
        .iter()
        .filter_map(|f| {
            let (x, y) = (b.and_then(|d| f.value(d)), n.and_then(|d| f.value(d)));
            (x.is_some() || y.is_some() || !f.needs_iterations())
                .then(|| Delta::new(f.id(), x.unwrap_or(0), y.unwrap_or(0)))
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
        .map(|(k, (x, y))| Delta::new(k, x, y))
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
        figures,
        categories,
        sites,
    }
}
