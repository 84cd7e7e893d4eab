//! The allocated-memory timeline by category (for `profile --html`),
//! downsampled so a multi-million-entry trace stays a small page.

use crate::snapshot::{Action, Device, Segment, Snapshot};

use super::replay::{replay, AddrMap};
use super::rules::RuleSet;
use super::stacks::StackInfo;

/// One sample: the live bytes per category after trace entry `entry`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePoint {
    /// Entry index (`None`: before the first entry).
    pub entry: Option<u64>,
    pub time_us: Option<i64>,
    /// Bytes per category, in `Timeline::categories` order.
    pub bytes: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub device: Device,
    pub categories: Vec<String>,
    pub points: Vec<TimelinePoint>,
}

fn sample(entry: Option<usize>, time_us: Option<i64>, cats: &[i64]) -> TimelinePoint {
    TimelinePoint {
        entry: entry.map(|i| i as u64),
        time_us,
        bytes: cats.iter().map(|v| (*v).max(0) as u64).collect(),
    }
}

/// Allocated bytes per category over the trace of `device`, at most about
/// `max_points` samples: each bucket of entries keeps its highest moment,
/// so peaks survive the downsampling.
pub fn timeline(snap: &Snapshot, device: Device, rules: &RuleSet, max_points: usize) -> Timeline {
    let mut info = StackInfo::new(snap, rules);
    let trace = snap.trace(device);
    let segments: Vec<&Segment> = snap.segments_of(device).collect();
    let ncat = rules.categories().len();
    let r = replay(trace, &segments, ncat, &mut |s| info.category(s));
    let mut cats = vec![0i64; ncat];
    for p in &r.pre {
        cats[info.category(p.stack)] += p.size as i64;
    }
    let mut points = vec![sample(None, None, &cats)];
    let bucket = trace.len().div_ceil(max_points.max(1)).max(1);
    let mut best: Option<(i64, TimelinePoint)> = None;
    let mut map: AddrMap<(u64, usize)> = AddrMap::default();
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            Action::Alloc => {
                let c = info.category(e.stack);
                map.insert(e.addr, (e.size, c));
                cats[c] += e.size as i64;
            }
            Action::FreeCompleted => match map.remove(&e.addr) {
                Some((size, c)) => cats[c] -= size as i64,
                None => cats[info.category(e.stack)] -= e.size as i64,
            },
            _ => {}
        }
        let total: i64 = cats.iter().sum();
        if best.as_ref().is_none_or(|(t, _)| total > *t) {
            best = Some((total, sample(Some(i), e.time(), &cats)));
        }
        if (i + 1) % bucket == 0 || i + 1 == trace.len() {
            if let Some((_, p)) = best.take() {
                points.push(p);
            }
        }
    }
    Timeline {
        device,
        categories: rules.categories().to_vec(),
        points,
    }
}
