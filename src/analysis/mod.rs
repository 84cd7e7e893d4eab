//! Figures from a snapshot: peaks (replay), categories, sites.

mod addr;
mod default_rules;
pub mod diff;
pub(crate) mod phases;
mod replay;
#[cfg(test)]
mod replay_tests;
pub(crate) mod rules;
mod stacks;
pub(crate) mod timeline;
mod types;
mod window;

use std::collections::{BTreeMap, HashMap};

use crate::snapshot::{Device, Segment, Snapshot, StackId};
use crate::units::counted;

pub use phases::{AnnotationEvent, Boundary, DevicePhases, Iteration, Iterations, Leak, PhaseSpan};
pub use rules::{RuleSet, RulesError};
pub use timeline::{Timeline, TimelinePoint};
pub use types::{Categories, DeviceReport, Figure, Figures, PeakEntry, SiteBytes, StackGroup};
pub use window::{Window, WindowError, WindowReport, WindowSpecError};

use replay::{DeviceReplay, Live};
use stacks::StackInfo;

/// Analyse every device of a snapshot (SPEC §3–5); `top` bounds the stack
/// groups and sites listed per device.
pub fn analyze(snap: &Snapshot, rules: &RuleSet, top: usize) -> Vec<DeviceReport> {
    let mut info = StackInfo::new(snap, rules);
    snap.devices()
        .into_iter()
        .map(|d| device_analysis(snap, d, &mut info, top, None, None).0)
        .collect()
}

/// [`analyze`] inside `window` (SPEC §11): each device's figures are the
/// maxima over the window's entries, with the state before it carried in,
/// and each report says where the window lies. With `max_points`, each
/// device's category timeline (of the whole trace) comes from the same
/// replay. An error when the window cannot be placed on a device or holds
/// no entry there.
pub fn analyze_in_window(
    snap: &Snapshot,
    rules: &RuleSet,
    top: usize,
    max_points: Option<usize>,
    window: &Window,
) -> Result<Vec<(DeviceReport, Option<Timeline>)>, WindowError> {
    let devices = snap.devices();
    let ranges = devices
        .iter()
        .map(|&d| window.resolve(snap, d))
        .collect::<Result<Vec<_>, _>>()?;
    let mut info = StackInfo::new(snap, rules);
    Ok(devices
        .into_iter()
        .zip(ranges)
        .map(|(d, range)| {
            let (report, points) =
                device_analysis(snap, d, &mut info, top, max_points, Some((window, range)));
            let timeline = points.map(|points| Timeline {
                device: d,
                categories: rules.categories().to_vec(),
                points,
            });
            (report, timeline)
        })
        .collect())
}

/// [`analyze`], and each device's category timeline at about `max_points`
/// samples, from the same replay of each trace.
pub fn analyze_with_timelines(
    snap: &Snapshot,
    rules: &RuleSet,
    top: usize,
    max_points: usize,
) -> Vec<(DeviceReport, Timeline)> {
    let mut info = StackInfo::new(snap, rules);
    snap.devices()
        .into_iter()
        .map(|d| {
            let (report, points) = device_analysis(snap, d, &mut info, top, Some(max_points), None);
            let timeline = Timeline {
                device: d,
                categories: rules.categories().to_vec(),
                points: points.unwrap_or_default(),
            };
            (report, timeline)
        })
        .collect()
}

/// One replay of the device's trace, and what is derived from it; with a
/// window, its inclusive entry range on this device.
fn device_analysis(
    snap: &Snapshot,
    device: Device,
    info: &mut StackInfo<'_>,
    top: usize,
    timeline_points: Option<usize>,
    window: Option<(&Window, (usize, usize))>,
) -> (DeviceReport, Option<Vec<TimelinePoint>>) {
    let trace = snap.trace(device);
    let segments: Vec<&Segment> = snap.segments_of(device).collect();
    let ncat = info.rules_categories().len();
    let mut r = replay::replay(
        trace,
        &segments,
        ncat,
        &mut |s| info.category(s),
        replay::Extras {
            timeline_points,
            curves: false,
            window: window.map(|(_, range)| range),
        },
    );
    let names = info.rules_categories().to_vec();
    let named = |v: &[u64]| -> BTreeMap<String, u64> {
        names.iter().cloned().zip(v.iter().copied()).collect()
    };
    let categories = Categories {
        rules: info.rules_source().to_string(),
        at_allocated_peak: named(&r.cats_at_allocated),
        at_dynamic_peak: named(&r.cats_at_dynamic),
        peaks: named(&r.cat_peaks),
    };
    let time_at = |i: Option<u64>| i.and_then(|i| trace[i as usize].time()).map(|t| t as u64);
    let peak_time_us = snap.has_time().then(|| PeakEntry {
        dynamic_peak: time_at(r.peak_entry.dynamic_peak),
        allocated_peak: time_at(r.peak_entry.allocated_peak),
        reserved_peak: time_at(r.peak_entry.reserved_peak),
    });
    let dyn_upto = (r.figures.dynamic_peak > 0)
        .then_some(r.peak_entry.dynamic_peak)
        .flatten()
        .map(|i| i as usize);
    let alloc_upto = if r.allocated_peak_at_start {
        None
    } else {
        r.peak_entry.allocated_peak.map(|i| i as usize)
    };
    let stacks_at_peak = stack_groups(snap, r.live_after(trace, dyn_upto), top);
    let sites_at_peak =
        sites_at_allocated_peak(r.live_after(trace, alloc_upto), alloc_upto, &r, info, top);
    let report = DeviceReport {
        device,
        figures: r.figures,
        categories,
        peak_entry: r.peak_entry,
        peak_time_us,
        trace_complete: r.complete,
        stacks_at_peak,
        sites_at_peak,
        warnings: warnings(&segments, &r),
        window: window.zip(r.window).map(|((w, (from, to)), edges)| {
            let (from_text, to_text) = w.texts();
            WindowReport {
                from: from_text.to_string(),
                to: to_text.to_string(),
                from_entry: from as u64,
                to_entry: to as u64,
                dynamic_usage_at_from: edges.dynamic_at_from,
                dynamic_usage_at_to: edges.dynamic_at_to,
                allocated_at_to: edges.allocated_at_to,
            }
        }),
    };
    (report, r.timeline.take())
}

/// Live allocations at the dynamic peak grouped by full stack (Mosaic's
/// listing), largest first; ties in allocation order.
fn stack_groups(snap: &Snapshot, live: impl Iterator<Item = Live>, top: usize) -> Vec<StackGroup> {
    // stack -> (bytes, count, first alloc index)
    let mut groups: HashMap<StackId, (u64, u64, usize)> = HashMap::new();
    for l in live {
        let g = groups.entry(l.stack).or_insert((0, 0, usize::MAX));
        g.0 += l.size;
        g.1 += 1;
        g.2 = g.2.min(l.index);
    }
    let mut v: Vec<(StackId, (u64, u64, usize))> = groups.into_iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .2.cmp(&b.1 .2)));
    v.into_iter()
        .take(top)
        .map(|(stack, (bytes, count, _))| StackGroup {
            bytes,
            count,
            frames: snap
                .stack(stack)
                .iter()
                .map(|&f| snap.frame_label(f))
                .collect(),
        })
        .collect()
}

/// Memory live at the allocated peak (including what existed before
/// recording) grouped by allocation site, largest first.
fn sites_at_allocated_peak(
    live: impl Iterator<Item = Live>,
    upto: Option<usize>,
    r: &DeviceReplay,
    info: &mut StackInfo<'_>,
    top: usize,
) -> Vec<SiteBytes> {
    let mut sites: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut add = |site: u32, size: u64| {
        let s = sites.entry(site).or_insert((0, 0));
        s.0 += size;
        s.1 += 1;
    };
    for l in live {
        add(info.site(l.stack), l.size);
    }
    for p in &r.pre {
        let still_live = match (p.freed_at, upto) {
            (None, _) | (Some(_), None) => true,
            (Some(f), Some(u)) => f > u,
        };
        if still_live {
            add(info.site(p.stack), p.size);
        }
    }
    let mut v: Vec<SiteBytes> = sites
        .into_iter()
        .map(|(id, (bytes, count))| SiteBytes {
            site: info.site_name(id).to_string(),
            bytes,
            count,
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
    v.truncate(top);
    v
}

/// Inconsistencies that do not stop analysis but make figures less certain.
fn warnings(segments: &[&Segment], r: &DeviceReplay) -> Vec<String> {
    let mut out = Vec::new();
    let pre_frees = r.pre.iter().filter(|p| p.freed_at.is_some()).count();
    if pre_frees > 0 {
        out.push(format!(
            "{} of addresses not allocated in the trace: recording started \
             mid-run (or the ring buffer wrapped); dynamic-peak and overall-peak are lower bounds",
            counted(pre_frees as u64, "free", "frees")
        ));
    }
    let untiled = segments
        .iter()
        .filter(|s| {
            !s.blocks.is_empty() && s.blocks.iter().map(|b| b.size).sum::<u64>() != s.total_size
        })
        .count();
    if untiled > 0 {
        out.push(format!(
            "{} whose blocks do not add up to the segment size",
            counted(untiled as u64, "segment", "segments")
        ));
    }
    if r.time_backwards > 0 {
        out.push(format!(
            "time_us decreases {}; entries are analysed in list order",
            counted(r.time_backwards as u64, "time", "times")
        ));
    }
    out
}

/// Allocated bytes per category over the trace of `device`, at most about
/// `max_points` samples: each bucket of entries keeps its highest moment,
/// so peaks survive the downsampling. To get the timelines together with
/// the rest of the analysis from one replay, use
/// [`analyze_with_timelines`].
pub fn timeline(snap: &Snapshot, device: Device, rules: &RuleSet, max_points: usize) -> Timeline {
    let mut info = StackInfo::new(snap, rules);
    let segments: Vec<&Segment> = snap.segments_of(device).collect();
    let r = replay::replay(
        snap.trace(device),
        &segments,
        rules.categories().len(),
        &mut |s| info.category(s),
        replay::Extras {
            timeline_points: Some(max_points),
            curves: false,
            window: None,
        },
    );
    Timeline {
        device,
        categories: rules.categories().to_vec(),
        points: r.timeline.unwrap_or_default(),
    }
}

/// The time structure of every device (SPEC §11): annotation events with
/// the memory at each, phase spans, iterations and the leak fit, from one
/// replay of each trace. `substrings`, when given, keep only the annotation
/// events whose name contains one of them.
/// Devices are those with a trace or a segment, and those an annotation
/// names.
pub fn phases(snap: &Snapshot, boundary: &Boundary, substrings: &[String]) -> Vec<DevicePhases> {
    let mut devices = snap.devices();
    devices.extend(snap.annotations.iter().filter_map(|a| a.device));
    devices.sort_unstable();
    devices.dedup();
    devices
        .into_iter()
        .map(|d| {
            let segments: Vec<&Segment> = snap.segments_of(d).collect();
            let r = replay::replay(
                snap.trace(d),
                &segments,
                1,
                &mut |_| 0,
                replay::Extras {
                    timeline_points: None,
                    curves: true,
                    window: None,
                },
            );
            let curves = r.curves.unwrap_or_default();
            phases::device_phases(snap, d, &curves, boundary, substrings)
        })
        .collect()
}
