//! Repeated runs of one snapshot name (docs/gate.md#repeated-runs): several
//! snapshots with one key folded into one device report per device, each
//! figure at the statistic the target chooses, and the spread of every
//! figure kept beside its check.

use super::{Check, CheckId, Finding, SnapshotError, SnapshotVerdict, Status};
use crate::analysis::{DeviceReport, Spread};
use crate::vocab::{Device, Figure, Statistic};

/// Fold `runs` (each the devices of one run, the first run's file first)
/// into one report per device of the first run. Each figure is the
/// statistic of its values; everything else of a device (categories,
/// sites, phases, peak places) is that of the run whose `allocated-peak`
/// is the statistic, so a finding's story is a run's own. Every run must
/// hold the same devices (`files` names them for the error). Each folded
/// device keeps its figures' spreads (`spreads`), which a summary of it
/// keeps too.
pub fn fold(
    runs: &[&[DeviceReport]],
    files: &[String],
    statistic: Statistic,
) -> Result<Vec<DeviceReport>, SnapshotError> {
    let devices_of = |r: &[DeviceReport]| {
        let mut d: Vec<Device> = r.iter().map(|x| x.device).collect();
        d.sort();
        d.dedup();
        d
    };
    let first = runs.first().copied().unwrap_or_default();
    let want = devices_of(first);
    for (run, file) in runs.iter().zip(files).skip(1) {
        let holds = devices_of(run);
        if holds != want {
            return Err(SnapshotError::RepeatsDiffer {
                first: files.first().cloned().unwrap_or_default(),
                file: file.clone(),
                want,
                holds,
            });
        }
    }
    let mut folded = Vec::new();
    for d in first {
        let same: Vec<&DeviceReport> = runs
            .iter()
            .filter_map(|r| r.iter().find(|x| x.device == d.device))
            .collect();
        folded.push(fold_device(&same, statistic));
    }
    Ok(folded)
}

/// One device over its runs (`same`, not empty).
fn fold_device(same: &[&DeviceReport], statistic: Statistic) -> DeviceReport {
    let mut order: Vec<&DeviceReport> = same.to_vec();
    order.sort_by_key(|d| d.figures.allocated_peak);
    let at = match statistic {
        Statistic::Min => 0,
        Statistic::Max => order.len() - 1,
        // The lower of two middle runs for an even count.
        Statistic::Median => (order.len() - 1) / 2,
    };
    let mut out = order[at].clone();
    out.trace_complete = same.iter().all(|d| d.trace_complete);
    out.spreads.clear();
    for f in Figure::ALL {
        let values: Option<Vec<u64>> = same.iter().map(|d| f.value(d)).collect();
        let Some(mut values) = values else {
            // A figure some run lacks (no iterations) stays the chosen run's.
            continue;
        };
        values.sort_unstable();
        let spread = Spread {
            runs: values.len(),
            min: values[0],
            median: Statistic::Median.of_sorted(&values),
            max: values[values.len() - 1],
            statistic,
        };
        set(&mut out, f, statistic.of_sorted(&values));
        out.spreads.insert(f.id().to_string(), spread);
    }
    out
}

/// Put `v` as figure `f` of `d`.
fn set(d: &mut DeviceReport, f: Figure, v: u64) {
    let x = &mut d.figures;
    match f {
        Figure::DynamicPeak => x.dynamic_peak = v,
        Figure::StaticMemory => x.static_memory = v,
        Figure::OverallPeak => x.overall_peak = v,
        Figure::AllocatedPeak => x.allocated_peak = v,
        Figure::ReservedPeak => x.reserved_peak = v,
        Figure::OomEvents => x.oom_events = v,
        Figure::AllocEvents => x.alloc_events = v,
        Figure::TraceEntries => x.trace_entries = v,
        Figure::CachedFreeAtReservedPeak => x.cached_free_at_reserved_peak = v,
        Figure::SegmentAllocs => x.segment_allocs = v,
        Figure::SegmentFrees => x.segment_frees = v,
        Figure::SegmentAllocsWithFreeCache => x.segment_allocs_with_free_cache = v,
        Figure::SteadyStatePeak => {
            if let Some(t) = d.time.as_mut() {
                t.steady_state_peak = Some(v);
            }
        }
        Figure::HostAllocatedPeak => {
            if let Some(h) = d.host.as_mut() {
                h.allocated_peak = v;
            }
        }
        Figure::HostReservedPeak => {
            if let Some(h) = d.host.as_mut() {
                h.reserved_peak = v;
            }
        }
        Figure::HostLiveAtDevicePeak => {
            if let Some(h) = d.host.as_mut() {
                h.live_at_device_peak = Some(v);
            }
        }
        Figure::LeakPerIteration => {
            if let Some(t) = d.time.as_mut() {
                t.leak_per_iteration = Some(i64::try_from(v).unwrap_or(i64::MAX));
            }
        }
    }
}

/// Say each figure check's spread beside it, from the judged devices
/// (`current`: folded here, or a summary of repeated runs). A spread wider
/// than the tolerance the check compared with is a warning: growth within
/// it may be the runs' noise, not the change.
pub fn annotate(v: &mut SnapshotVerdict, current: &[DeviceReport]) {
    if current.iter().all(|d| d.spreads.is_empty()) {
        return;
    }
    for d in &mut v.devices {
        let Some(cur) = current.iter().find(|c| c.device == d.device) else {
            continue;
        };
        for c in &mut d.checks {
            let CheckId::Figure(f) = c.id else {
                continue;
            };
            if let Some(s) = cur.spreads.get(f.id()) {
                say_spread(c, s);
            }
        }
    }
    v.status = v.worst_check();
}

fn say_spread(c: &mut Check, s: &Spread) {
    // The tolerance matters only against a baseline.
    let tolerance = c.tolerance.filter(|_| c.baseline.is_some());
    let percent = s.percent();
    let wider = matches!((percent, tolerance), (Some(p), Some(t)) if p > t);
    c.findings.push(Finding::Repeats {
        runs: s.runs,
        min: s.min,
        median: s.median,
        max: s.max,
        statistic: s.statistic,
        spread: percent,
        tolerance,
        wider,
    });
    if wider && c.status < Status::Warn {
        c.status = Status::Warn;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_two_middle_values() {
        assert_eq!(Statistic::Median.of_sorted(&[1, 3, 10, 20]), 6);
        assert_eq!(Statistic::Median.of_sorted(&[1, 3, 10]), 3);
        assert_eq!(Statistic::Min.of_sorted(&[1, 3, 10]), 1);
        assert_eq!(Statistic::Max.of_sorted(&[1, 3, 10]), 10);
        assert_eq!(
            Statistic::Median.of_sorted(&[u64::MAX - 1, u64::MAX]),
            u64::MAX - 1
        );
    }

    #[test]
    fn a_spread_is_max_minus_min_over_the_median() {
        let s = Spread {
            runs: 3,
            min: 97,
            median: 100,
            max: 100,
            statistic: Statistic::Median,
        };
        assert_eq!(s.percent(), Some(3.0));
    }
}
