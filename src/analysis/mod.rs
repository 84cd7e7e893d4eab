//! Figures from a snapshot: peaks (replay), categories, sites.

mod addr;
mod allocator;
mod default_rules;
pub mod diff;
mod dump;
pub mod environment;
mod figures;
mod fragmentation;
mod frameless;
mod groups;
mod host;
mod inline_rules;
mod metadata;
mod moment;
mod observe;
pub(crate) mod phases;
mod pools;
mod replay;
#[cfg(test)]
mod replay_tests;
mod rule_phases;
#[cfg(test)]
mod rule_set_tests;
pub(crate) mod rules;
pub(crate) mod sites;
mod span_index;
mod stacks;
pub(crate) mod timeline;
mod types;
mod window;

use std::collections::{BTreeMap, HashMap};

use crate::convert::{index, position};
use crate::snapshot::{Device, Segment, Snapshot, StackId, StackLabels, Trace};
use crate::units::counted;
use crate::vocab::NoStory;

pub use crate::patterns::{PatternBudget, Rule};
pub use dump::{DumpState, LiveBlock};
pub use figures::{Figures, HostFigures, PeakEntry, StackGroup};
pub use fragmentation::OomCause;
pub use groups::{GroupBy, NO_COMPILE_CONTEXT};
pub use inline_rules::{parse_inline, InlineRules};
pub use metadata::{MetaKey, MAX_METADATA, MORE_METADATA};
pub use moment::{MomentStacks, OomDetail, PeakAt, PeakPhase, Place, OOM_DETAILS};
pub use phases::{AnnotationEvent, Boundary, DevicePhases, Iteration, Iterations, Leak, PhaseSpan};
pub use pools::{PoolFigures, PoolKind};
pub use rules::{RuleSet, RulesError};
pub(crate) use sites::site_file;
pub use sites::{SiteFlags, SiteRule, SiteRuleError};
pub use timeline::{Band, FinePoint, Moment, MomentKind, Timeline, TimelinePoint};
pub use types::{Categories, DeviceReport, Figure, PhaseFigures, SiteBytes, Spread, TimeFigures};
pub use window::{Window, WindowError, WindowReport, WindowSpecError};

use allocator::Live;
use groups::Groups;
use metadata::AllocMeta;
use replay::DeviceReplay;
use stacks::StackInfo;

/// Analyse every device of a snapshot (docs/figures.md#figures, #categories, #stacks-and-sites); `top` bounds the stack
/// groups and sites listed per device.
pub fn analyze(snap: &Snapshot, rules: &RuleSet, top: usize) -> Vec<DeviceReport> {
    reports(snap, rules, Request::top(top))
}

/// Everything an analysis can be asked for besides the figures, all from
/// one replay of each trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'w> {
    /// How many stack groups and sites to list per device.
    pub top: usize,
    /// How `categories` (and the timeline) group allocations.
    pub group_by: GroupBy,
    /// Each device's timeline at about this many samples.
    pub timeline_points: Option<usize>,
    /// The stacks live at this peak, listed besides those at the dynamic
    /// peak (`peak --at`).
    pub stacks_at: Option<PeakAt>,
    /// Figures inside this window only (docs/figures.md#windows).
    pub window: Option<&'w Window>,
    /// Where iterations start (the default boundaries when `None`).
    pub iteration_boundary: Option<&'w Boundary>,
}

impl Request<'_> {
    /// Figures, categories and `top` stacks and sites: nothing more.
    pub fn top(top: usize) -> Request<'static> {
        Request {
            top,
            ..Request::default()
        }
    }
}

/// Analyse every device as `req` asks; each device's timeline when it asks
/// for one. An error when a window cannot be placed on a device or holds no
/// entry there ([`analyze_placing`] analyses the devices that place it).
pub fn analyze_request(
    snap: &Snapshot,
    rules: &RuleSet,
    req: Request<'_>,
) -> Result<Vec<(DeviceReport, Option<Timeline>)>, WindowError> {
    let placed = analyze_placing(snap, rules, req);
    match placed.unplaced.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(placed.devices),
    }
}

/// The devices a window could be placed on, analysed, and why it could not
/// be on the others (each device's own reason, in device order).
#[derive(Debug, Default)]
pub struct Placed {
    pub devices: Vec<(DeviceReport, Option<Timeline>)>,
    pub unplaced: Vec<WindowError>,
}

/// [`analyze_request`], with a window resolved on each device alone: a
/// device where it places nothing is listed in `unplaced` (and not
/// analysed), never an error for the others. Which devices must place it
/// is the caller's to judge.
pub fn analyze_placing(snap: &Snapshot, rules: &RuleSet, req: Request<'_>) -> Placed {
    let mut unplaced = Vec::new();
    let devices: Vec<(Device, Option<(usize, usize)>)> = snap
        .devices()
        .into_iter()
        .filter_map(|d| match req.window.map(|w| w.resolve(snap, d)) {
            None => Some((d, None)),
            Some(Ok(range)) => Some((d, Some(range))),
            Some(Err(e)) => {
                unplaced.push(e);
                None
            }
        })
        .collect();
    let mut info = StackInfo::new(snap, rules);
    let host = host::Host::of(snap);
    let mut devices: Vec<(DeviceReport, Option<Timeline>)> = devices
        .into_iter()
        .map(|(d, range)| {
            let groups = Groups::new(snap, d, req.group_by, &mut info);
            let (mut report, timeline) =
                device_analysis(snap, d, &mut info, groups, Ask::of(&req, range));
            report.host = host.as_ref().map(|h| h.at(device_peak_time(snap, &report)));
            (report, timeline)
        })
        .collect();
    // A host-only snapshot (docs/figures.md#pinned-host-memory): device 0,
    // empty, carries the host figures.
    if let Some(h) = host.filter(|_| snap.devices().is_empty()) {
        let d = Device::new(0);
        let groups = Groups::new(snap, d, req.group_by, &mut info);
        let (mut report, timeline) =
            device_analysis(snap, d, &mut info, groups, Ask::of(&req, None));
        report.host = Some(HostFigures {
            only: true,
            ..h.at(None)
        });
        devices.push((report, timeline));
    }
    Placed { devices, unplaced }
}

/// `time_us` at the device's allocated peak: of its entry, or of the
/// trace's first entry when the peak is the state before it.
fn device_peak_time(snap: &Snapshot, report: &DeviceReport) -> Option<i64> {
    let trace = snap.trace(report.device);
    let at = report.peak_entry.allocated_peak.map_or(0, index);
    trace.get(at).and_then(|e| e.time())
}

/// The reports and timelines of a request that has no window (which
/// cannot fail).
fn reports_and_timelines(
    snap: &Snapshot,
    rules: &RuleSet,
    req: Request<'_>,
) -> Vec<(DeviceReport, Option<Timeline>)> {
    debug_assert!(req.window.is_none());
    analyze_request(snap, rules, req).unwrap_or_default()
}

/// The reports of a request that has no window.
fn reports(snap: &Snapshot, rules: &RuleSet, req: Request<'_>) -> Vec<DeviceReport> {
    reports_and_timelines(snap, rules, req)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// [`analyze`] inside `window` (docs/figures.md#windows): each device's figures are the
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
    let req = Request {
        timeline_points: max_points,
        window: Some(window),
        ..Request::top(top)
    };
    analyze_request(snap, rules, req)
}

/// [`analyze`], and each device's category timeline at about `max_points`
/// samples, from the same replay of each trace.
pub fn analyze_with_timelines(
    snap: &Snapshot,
    rules: &RuleSet,
    top: usize,
    max_points: usize,
) -> Vec<(DeviceReport, Timeline)> {
    let req = Request {
        timeline_points: Some(max_points),
        ..Request::top(top)
    };
    reports_and_timelines(snap, rules, req)
        .into_iter()
        .map(|(r, t)| (r, t.expect("a timeline was asked for")))
        .collect()
}

/// What one device's analysis is asked for besides the figures.
struct Ask<'w> {
    /// How many stack groups and sites to list.
    top: usize,
    timeline_points: Option<usize>,
    stacks_at: Option<PeakAt>,
    /// A window and its inclusive entry range on this device.
    window: Option<(&'w Window, (usize, usize))>,
    boundary: &'w Boundary,
}

impl<'w> Ask<'w> {
    /// What `req` asks of a device, where the window is `range` there.
    fn of(req: &Request<'w>, range: Option<(usize, usize)>) -> Ask<'w> {
        Ask {
            top: req.top,
            timeline_points: req.timeline_points,
            stacks_at: req.stacks_at,
            window: req.window.zip(range),
            boundary: req.iteration_boundary.unwrap_or(&Boundary::Default),
        }
    }
}

/// One replay of the device's trace, and what is derived from it: the
/// report (with where each peak falls), the group names, and the
/// timeline when asked for; with `stacks_at`, the stacks live at that
/// peak; with a window, the peaks inside it.
fn device_analysis(
    snap: &Snapshot,
    device: Device,
    info: &mut StackInfo<'_>,
    mut groups: Groups,
    ask: Ask<'_>,
) -> (DeviceReport, Option<Timeline>) {
    let Ask {
        top,
        timeline_points,
        stacks_at,
        window,
        boundary,
    } = ask;
    let trace = snap.trace(device);
    let segments: Vec<&Segment> = snap.segments_of(device).collect();
    let extras = replay::Extras {
        timeline_points,
        curves: false,
        window: window.map(|(_, range)| range),
    };
    let (mut r, attribution, structure) =
        replay_device(snap, device, &segments, info, &mut groups, extras, boundary);
    let time = structure.as_ref().map(time_figures);
    let categories = groups.categories(&r, info.rules());
    let peak_time_us = snap.has_time().then(|| peak_times(trace, &r.peak_entry));
    let dyn_upto = (r.figures.dynamic_peak > 0)
        .then_some(r.peak_entry.dynamic_peak)
        .flatten()
        .map(index);
    let alloc_upto = upto(r.allocated_peak_at_start, r.peak_entry.allocated_peak);
    let metas = AllocMeta::new(trace);
    let stacks_at_peak = stack_groups(snap, &metas, in_trace(r.live_after(trace, dyn_upto)), top);
    let sites_at_peak =
        sites_at_allocated_peak(r.live_after(trace, alloc_upto), alloc_upto, &r, info, top);
    // Every report says where its peaks fall (docs/figures.md#peak-phase): the
    // attribution above is the only pass this costs.
    let clock =
        (!trace.is_empty()).then(|| moment::Clock::new(trace, attribution, structure.as_ref()));
    let oom = clock
        .as_ref()
        .map_or_else(Vec::new, |c| c.ooms(snap, &segments, &r.ooms));
    let peak_phase = clock.as_ref().map(|c| c.peaks(&r.peak_entry));
    let stacks_at_moment =
        stacks_at.map(|at| moment_stacks(snap, device, &r, at, alloc_upto, &stacks_at_peak, top));
    let report = DeviceReport {
        device,
        figures: r.figures,
        categories,
        peak_entry: r.peak_entry,
        peak_time_us,
        trace_complete: r.complete,
        stacks_at_peak,
        sites_at_peak,
        time,
        peak_phase,
        stacks_at_moment,
        oom,
        warnings: warnings(&segments, &r),
        dump: trace
            .is_empty()
            .then(|| dump::dump_state(snap, &segments, top)),
        window: window.zip(r.window).map(window_report),
        environment: Some(environment::Fingerprint::of_snapshot(
            &snap.generation,
            snap.allocator_settings.as_ref(),
        )),
        pools: whole_trace_pools(snap, trace, &segments, &r, window.is_none()),
        spreads: BTreeMap::new(),
        host: None,
    };
    let timeline = device_timeline(snap, &mut r, &report, structure.as_ref(), groups.names());
    (report, timeline)
}

/// The pools' figures (docs/figures.md#pools), over the whole trace only: a
/// window's report has none.
fn whole_trace_pools(
    snap: &Snapshot,
    trace: Trace<'_>,
    segments: &[&Segment],
    r: &replay::DeviceReplay,
    whole: bool,
) -> Vec<PoolFigures> {
    if !whole {
        return Vec::new();
    }
    let at = |at_start: bool, entry: Option<u64>| entry.filter(|_| !at_start).map(index);
    let peaks = pools::DevicePeaks {
        allocated: at(r.allocated_peak_at_start, r.peak_entry.allocated_peak),
        reserved: at(r.reserved_peak_at_start, r.peak_entry.reserved_peak),
    };
    pools::device_pools(snap, trace, segments, peaks)
}

/// One replay of the device's trace into its groups, its annotation
/// attribution, and its time structure when it has annotations or time
/// rules (the replay then keeps the per-entry curves it is read from).
fn replay_device(
    snap: &Snapshot,
    device: Device,
    segments: &[&Segment],
    info: &mut StackInfo<'_>,
    groups: &mut Groups,
    extras: replay::Extras,
    boundary: &Boundary,
) -> (DeviceReplay, phases::Attribution, Option<DevicePhases>) {
    let ncat = groups.names().len();
    let timed = reads_curves(snap, device, info.rules());
    let extras = replay::Extras {
        curves: timed,
        ..extras
    };
    let trace = snap.trace(device);
    let mut r = replay::replay(
        trace,
        segments,
        ncat,
        &mut |o| groups.classify(o, info),
        extras,
    );
    let rules = info.rules();
    let attribution = phases::attribute(snap, device);
    let structure = r
        .curves
        .take()
        .map(|c| device_time(snap, device, &c, &attribution, boundary, &[], rules));
    (r, attribution, structure)
}

/// The last entry applied at a peak first reached at `entry` (`None`:
/// before the first entry, when the peak was there from the start).
fn upto(at_start: bool, entry: Option<u64>) -> Option<usize> {
    if at_start {
        None
    } else {
        entry.map(index)
    }
}

/// `time_us` at each peak entry. torch writes `time_us` as a non-negative
/// clock; a negative one keeps its two's-complement bits, as it always has.
fn peak_times(trace: Trace<'_>, at: &PeakEntry) -> PeakEntry {
    let time_at = |i: Option<u64>| {
        i.and_then(|i| trace.at(index(i)).time())
            .map(i64::cast_unsigned)
    };
    PeakEntry {
        dynamic_peak: time_at(at.dynamic_peak),
        allocated_peak: time_at(at.allocated_peak),
        reserved_peak: time_at(at.reserved_peak),
    }
}

/// The stack groups live at peak `at`: the dynamic peak's are those of
/// the report already; the other two count the memory from before
/// recording still live then.
fn moment_stacks(
    snap: &Snapshot,
    device: Device,
    r: &DeviceReplay,
    at: PeakAt,
    alloc_upto: Option<usize>,
    at_dynamic: &[StackGroup],
    top: usize,
) -> MomentStacks {
    let trace = snap.trace(device);
    let metas = AllocMeta::new(trace);
    let stacks = match at {
        PeakAt::DynamicPeak => at_dynamic.to_vec(),
        PeakAt::AllocatedPeak => {
            stack_groups(snap, &metas, live_with_pre(r, trace, alloc_upto), top)
        }
        PeakAt::ReservedPeak => {
            let upto = upto(r.reserved_peak_at_start, r.peak_entry.reserved_peak);
            stack_groups(snap, &metas, live_with_pre(r, trace, upto), top)
        }
    };
    MomentStacks { at, stacks }
}

/// Where a window lies, from its bounds as written, its entry range and
/// the replay's edges.
fn window_report(
    ((w, (from, to)), edges): ((&Window, (usize, usize)), observe::WindowEdges),
) -> WindowReport {
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
}

/// The device's timeline when the replay sampled one: its points, the
/// moments the page lists stacks at, the bands of its phases and
/// iterations, and the window's band.
fn device_timeline(
    snap: &Snapshot,
    r: &mut DeviceReplay,
    report: &DeviceReport,
    structure: Option<&DevicePhases>,
    names: &[String],
) -> Option<Timeline> {
    let trace = snap.trace(report.device);
    let fine = std::mem::take(&mut r.timeline_fine);
    let points = r.timeline.take()?;
    let bands = structure.map_or_else(Vec::new, |p| bands(trace, p));
    let time = |i: u64| trace.get(index(i)).and_then(|e| e.time());
    Some(Timeline {
        device: report.device,
        categories: names.to_vec(),
        points,
        moments: moments(snap, trace, r, report, &bands),
        bands,
        origin_time_us: trace.iter().find_map(|e| e.time()),
        fine,
        window: report.window.as_ref().map(|w| timeline::Band {
            iteration: false,
            name: format!("{}..{}", w.from, w.to),
            from_entry: w.from_entry,
            to_entry: w.to_entry,
            from_time_us: time(w.from_entry),
            to_time_us: time(w.to_entry),
        }),
    })
}

/// The phase spans and iterations of a device as bands, at most
/// [`MAX_BANDS`](timeline::MAX_BANDS), iterations first.
fn bands(trace: Trace<'_>, p: &DevicePhases) -> Vec<timeline::Band> {
    let time = |i: u64| trace.get(index(i)).and_then(|e| e.time());
    let band = |iteration: bool, name: String, from: u64, to: Option<u64>| {
        let to = to.unwrap_or(from);
        timeline::Band {
            iteration,
            name,
            from_entry: from,
            to_entry: to,
            from_time_us: time(from),
            to_time_us: time(to),
        }
    };
    let iterations = p.iterations.iter().flat_map(|it| &it.items);
    iterations
        .map(|i| band(true, i.index.to_string(), i.from_entry, i.to_entry))
        .chain(
            p.phases
                .iter()
                .map(|s| band(false, s.name.clone(), s.from_entry, s.to_entry)),
        )
        .filter(|b| index(b.from_entry) < trace.len())
        .take(timeline::MAX_BANDS)
        .collect()
}

/// The moments the page lists live allocations at: the three peaks, the
/// first OOMs, phase starts (at most [`timeline::PHASE_MOMENTS`], evenly
/// chosen) and an even sample of the trace, each with its largest stack
/// groups, from one sweep over the allocations' lifetimes.
fn moments(
    snap: &Snapshot,
    trace: Trace<'_>,
    r: &DeviceReplay,
    report: &DeviceReport,
    bands: &[timeline::Band],
) -> Vec<timeline::Moment> {
    if trace.is_empty() {
        return Vec::new();
    }
    let merged = wanted_moments(trace.len(), r, report, bands);
    let at: Vec<i64> = merged.iter().map(|w| w.0).collect();
    let (groups, totals) = live_groups(snap, trace, r, &at);
    merged
        .into_iter()
        .zip(groups)
        .zip(totals)
        .map(|(((entry, kinds), (g, meta_bytes)), allocated)| {
            let entry = u64::try_from(entry).ok();
            timeline::Moment {
                kinds,
                entry,
                time_us: entry.and_then(|i| trace.at(index(i)).time()),
                allocated,
                stacks: ranked_groups(
                    snap,
                    g,
                    timeline::MOMENT_STACKS,
                    Snapshot::stack_labels_folded,
                    &meta_bytes,
                ),
            }
        })
        .collect()
}

/// The moments the page lists, each entry once with every kind falling
/// there (`-1`: before the first entry).
fn wanted_moments(
    n: usize,
    r: &DeviceReplay,
    report: &DeviceReport,
    bands: &[timeline::Band],
) -> Vec<(i64, Vec<timeline::MomentKind>)> {
    use timeline::MomentKind;
    let mut wanted: Vec<(i64, MomentKind)> = Vec::new();
    let at_start = |flag: bool, i: Option<u64>| if flag { None } else { i };
    for (id, entry) in [
        (
            Figure::AllocatedPeak,
            at_start(r.allocated_peak_at_start, r.peak_entry.allocated_peak),
        ),
        (
            Figure::DynamicPeak,
            (r.figures.dynamic_peak > 0)
                .then_some(r.peak_entry.dynamic_peak)
                .flatten(),
        ),
        (
            Figure::ReservedPeak,
            at_start(r.reserved_peak_at_start, r.peak_entry.reserved_peak),
        ),
    ] {
        let at = entry.map_or(-1, position);
        wanted.push((at, MomentKind::Peak(id)));
    }
    wanted.extend(
        report
            .oom
            .iter()
            .map(|o| (position(o.entry), MomentKind::Oom)),
    );
    let phases: Vec<usize> = (0..bands.len()).filter(|&b| !bands[b].iteration).collect();
    let step = phases.len().div_ceil(timeline::PHASE_MOMENTS).max(1);
    wanted.extend(
        phases
            .iter()
            .step_by(step)
            .map(|&b| (position(bands[b].from_entry), MomentKind::PhaseStart(b))),
    );
    let k = timeline::SAMPLE_MOMENTS.min(n);
    wanted.extend((0..k).map(|j| {
        let at = (2 * j + 1) * n / (2 * k);
        (i64::try_from(at).unwrap_or(i64::MAX), MomentKind::Sample)
    }));
    // One moment per entry, with everything that falls there.
    wanted.sort_by_key(|w| w.0);
    let mut merged: Vec<(i64, Vec<MomentKind>)> = Vec::new();
    for (at, kind) in wanted {
        match merged.last_mut() {
            Some((last, kinds)) if *last == at => kinds.push(kind),
            _ => merged.push((at, vec![kind])),
        }
    }
    merged
}

/// Per moment of the page: the allocations live then grouped by stack
/// (stack -> bytes, count, first alloc index), and the bytes live.
fn live_groups(
    snap: &Snapshot,
    trace: Trace<'_>,
    r: &DeviceReplay,
    at: &[i64],
) -> (Vec<(Grouped, MetaBytes)>, Vec<u64>) {
    let mut groups: Vec<(Grouped, MetaBytes)> = vec![Default::default(); at.len()];
    let mut totals = vec![0u64; at.len()];
    let metas = AllocMeta::new(trace);
    let mut add = |k: usize, l: Live, pre: bool| {
        let key = group_key(snap, l.stack, pre);
        let (by_stack, by_meta) = &mut groups[k];
        let g = by_stack.entry(key).or_insert((0, 0, usize::MAX));
        g.0 += l.size;
        g.1 += 1;
        g.2 = g.2.min(l.index);
        totals[k] += l.size;
        if !metas.is_empty() {
            let meta = if pre {
                crate::snapshot::NO_META
            } else {
                metas.at(l.index)
            };
            *by_meta.entry(key).or_default().entry(meta).or_default() += l.size;
        }
    };
    r.live_at_each(trace, at, &mut |k, l| add(k, l, false));
    for p in &r.pre {
        for (k, &m) in at.iter().enumerate() {
            if p.freed_at
                .is_none_or(|f| m < 0 || i64::try_from(f).unwrap_or(i64::MAX) > m)
            {
                add(
                    k,
                    Live {
                        size: p.size,
                        stack: p.stack,
                        index: 0,
                    },
                    true,
                );
            }
        }
    }
    (groups, totals)
}

/// The figures budgets judge from a device's time structure.
fn time_figures(p: &DevicePhases) -> TimeFigures {
    let mut phases: BTreeMap<String, PhaseFigures> = BTreeMap::new();
    for s in &p.phases {
        let f = phases.entry(s.name.clone()).or_default();
        f.allocated_peak = f.allocated_peak.max(s.allocated_peak);
        f.dynamic_peak = f.dynamic_peak.max(s.dynamic_peak);
    }
    let it = p.iterations.as_ref();
    TimeFigures {
        iterations: it.map_or(0, |i| i.items.len() as u64),
        boundary: it.map(|i| i.boundary.clone()),
        steady_state_peak: it.and_then(|i| i.steady_state_peak),
        leak_per_iteration: it
            .and_then(|i| i.leak.as_ref())
            .map(|l| l.bytes_per_iteration),
        leak_residual: it.and_then(|i| i.leak.as_ref()).map(|l| l.residual),
        phases,
    }
}

/// Live allocations at the dynamic peak grouped by full stack (Mosaic's
/// listing), largest first; ties in allocation order.
fn stack_groups(
    snap: &Snapshot,
    metas: &AllocMeta,
    live: impl Iterator<Item = (Live, bool)>,
    top: usize,
) -> Vec<StackGroup> {
    // stack -> (bytes, count, first alloc index)
    let mut groups: Grouped = HashMap::new();
    let mut meta_bytes: MetaBytes = HashMap::new();
    for (l, pre) in live {
        let key = group_key(snap, l.stack, pre);
        let g = groups.entry(key).or_insert((0, 0, usize::MAX));
        g.0 += l.size;
        g.1 += 1;
        g.2 = g.2.min(l.index);
        if !metas.is_empty() {
            let meta = if pre {
                crate::snapshot::NO_META
            } else {
                metas.at(l.index)
            };
            *meta_bytes.entry(key).or_default().entry(meta).or_default() += l.size;
        }
    }
    ranked_groups(snap, groups, top, Snapshot::stack_labels, &meta_bytes)
}

/// What live memory is grouped by: its stack, and for a stack without
/// frames whether it was live before recording (`pre-trace`) or allocated
/// during it (`frameless`), which share the empty stack.
type GroupKey = (StackId, bool);

/// Per group, its live bytes by the allocations' user metadata string id
/// (docs/figures.md#user-metadata-groups; `NO_META` without); only for a
/// trace with metadata.
type MetaBytes = HashMap<GroupKey, HashMap<u32, u64>>;

/// Live memory by group: bytes, count and the first allocation's index.
type Grouped = HashMap<GroupKey, (u64, u64, usize)>;

/// The group of memory with `stack`, live before recording when `pre`.
fn group_key(snap: &Snapshot, stack: StackId, pre: bool) -> GroupKey {
    (stack, pre && snap.stack(stack).is_empty())
}

/// Allocations of the trace, none from before recording.
fn in_trace(live: impl Iterator<Item = Live>) -> impl Iterator<Item = (Live, bool)> {
    live.map(|l| (l, false))
}

/// Stack groups (stack -> bytes, count, first alloc index) largest first,
/// ties in allocation order, the first `top`.
fn ranked_groups(
    snap: &Snapshot,
    groups: Grouped,
    top: usize,
    labels: fn(&Snapshot, StackId) -> StackLabels,
    meta_bytes: &MetaBytes,
) -> Vec<StackGroup> {
    let mut v: Vec<(GroupKey, (u64, u64, usize))> = groups.into_iter().collect();
    // Memory from before recording shares index 0: the stack id (interning
    // order, fixed by the file) breaks the last ties, so output is stable.
    v.sort_by(|a, b| {
        b.1 .0
            .cmp(&a.1 .0)
            .then(a.1 .2.cmp(&b.1 .2))
            .then(a.0.cmp(&b.0))
    });
    v.into_iter()
        .take(top)
        .map(|((stack, pre), (bytes, count, _))| {
            let frames = labels(snap, stack);
            let no_frames = frames.is_empty().then_some(if pre {
                NoStory::PreTrace
            } else {
                NoStory::Frameless
            });
            StackGroup {
                bytes,
                count,
                frames,
                no_frames,
                user_metadata: meta_bytes
                    .get(&(stack, pre))
                    .map(|m| metadata::by_bytes(snap, m))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The allocations live after entry `upto` (before the first when `None`)
/// and what was live before recording and not yet freed then: everything
/// the allocated curve counts at that moment.
fn live_with_pre<'a>(
    r: &'a DeviceReplay,
    trace: Trace<'a>,
    upto: Option<usize>,
) -> impl Iterator<Item = (Live, bool)> + 'a {
    let pre = r.pre.iter().filter(move |p| match (p.freed_at, upto) {
        (None, _) => true,
        (Some(f), Some(u)) => f > u,
        (Some(_), None) => true,
    });
    in_trace(r.live_after(trace, upto)).chain(pre.map(|p| {
        let l = Live {
            size: p.size,
            stack: p.stack,
            index: 0,
        };
        (l, true)
    }))
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
    // A stack without frames names no site: its memory is `frameless`, or
    // `pre-trace` when it was live before recording (docs/figures.md#memory-with-no-story).
    let frameless = info.named_site(NoStory::Frameless.id().into(), None);
    let pre_trace = info.named_site(NoStory::PreTrace.id().into(), None);
    for l in live {
        let site = if info.frameless(l.stack) {
            frameless
        } else {
            info.site(l.stack)
        };
        add(site, l.size);
    }
    for p in &r.pre {
        let still_live = match (p.freed_at, upto) {
            (None, _) | (Some(_), None) => true,
            (Some(f), Some(u)) => f > u,
        };
        if still_live {
            let site = if info.frameless(p.stack) {
                pre_trace
            } else {
                info.site(p.stack)
            };
            add(site, p.size);
        }
    }
    let mut v: Vec<SiteBytes> = sites
        .into_iter()
        .map(|(id, (bytes, count))| SiteBytes {
            site: info.site_name(id).to_string(),
            bytes,
            count,
            recorded: info.site_file(id).map(str::to_string),
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

/// Allocated bytes per category over the trace of `device`, in about
/// `max_points` buckets of entries: each keeps its lowest and its highest
/// moment, so peaks and the dips between them survive the downsampling. To get the timelines together with
/// the rest of the analysis from one replay, use
/// [`analyze_with_timelines`].
pub fn timeline(snap: &Snapshot, device: Device, rules: &RuleSet, max_points: usize) -> Timeline {
    let mut info = StackInfo::new(snap, rules);
    let groups = Groups::new(snap, device, GroupBy::default(), &mut info);
    let ask = Ask {
        top: 0,
        timeline_points: Some(max_points),
        stacks_at: None,
        window: None,
        boundary: &Boundary::Default,
    };
    let (_, t) = device_analysis(snap, device, &mut info, groups, ask);
    t.expect("a timeline was asked for")
}

/// The time structure of every device (docs/figures.md#time-structure): annotation events with
/// the memory at each, phase spans, iterations and the leak fit, from one
/// replay of each trace; `substrings`, when given, keep only the annotation
/// events whose name contains one of them. Devices are those with a trace
/// or a segment, and those an annotation names. A device with no annotation
/// takes its phases from the `[phases]` stack rules of `rules` (NPU
/// snapshots: see `rule_phases`); where a device has annotations they give
/// its phases and the rules are not used (a warning says so).
pub fn phases_with_rules(
    snap: &Snapshot,
    boundary: &Boundary,
    substrings: &[String],
    rules: &RuleSet,
) -> Vec<DevicePhases> {
    time_structure(snap, boundary, substrings, rules)
}

/// A device's time structure from its curves: annotations give phases and
/// iterations; on a device without annotations the rules' `[phases]` give
/// its phases and `[iterations] boundary` its iterations.
fn device_time(
    snap: &Snapshot,
    device: Device,
    curves: &observe::Curves,
    attribution: &phases::Attribution,
    boundary: &Boundary,
    substrings: &[String],
    rules: &RuleSet,
) -> DevicePhases {
    let mut p = phases::device_phases(snap, device, curves, attribution, boundary, substrings);
    if !rules.has_time_rules() {
        return p;
    }
    if snap.annotations_of(device).next().is_some() {
        p.warnings.push(
            "the [phases] / [iterations] rules were not used: this device's phases come \
             from its annotations"
                .to_string(),
        );
        return p;
    }
    if rules.has_phases() {
        p.phases = rule_phases::rule_phase_spans(snap, device, rules, curves);
    }
    if p.iterations.is_none() {
        p.iterations = phases::stack_iterations(snap, device, rules, curves);
    }
    p
}

/// Whether the device's time structure reads the replay's per-entry
/// curves (16 bytes an entry): only annotations and time rules give a
/// device phases or iterations.
fn reads_curves(snap: &Snapshot, device: Device, rules: &RuleSet) -> bool {
    snap.annotations_of(device).next().is_some() || rules.has_time_rules()
}

fn time_structure(
    snap: &Snapshot,
    boundary: &Boundary,
    substrings: &[String],
    rules: &RuleSet,
) -> Vec<DevicePhases> {
    let mut devices = snap.devices();
    devices.extend(snap.annotations.iter().filter_map(|a| a.device));
    devices.sort_unstable();
    devices.dedup();
    devices
        .into_iter()
        .map(|d| {
            let segments: Vec<&Segment> = snap.segments_of(d).collect();
            let timed = reads_curves(snap, d, rules);
            let r = replay::replay(
                snap.trace(d),
                &segments,
                1,
                &mut |_| 0,
                replay::Extras {
                    timeline_points: None,
                    curves: timed,
                    window: None,
                },
            );
            let complete = r.complete;
            let curves = r.curves.unwrap_or_default();
            let attribution = phases::attribute(snap, d);
            let mut p = device_time(snap, d, &curves, &attribution, boundary, substrings, rules);
            p.trace_complete = complete;
            p
        })
        .collect()
}
