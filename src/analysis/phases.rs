//! When memory grew (docs/figures.md#time-structure): which annotation each trace entry belongs
//! to, the usage at each annotation event (Mosaic's "memory usage by
//! annotation stage"), the phase spans, and the iterations with their leak
//! fit. Everything here is computed from the snapshot's annotations and the
//! replay's per-entry [`Curves`]; nothing replays the trace again.
//!
//! Positions. Annotations are applied in list order, each before the first
//! entry whose `time_us` is at or after its own (Mosaic's attribution):
//! that entry is the annotation's `entry`, and the first entry of a phase
//! it starts. The usage at an annotation event follows Mosaic's
//! `get_memory_usage_by_annotation_stage`: the state once every leading
//! entry with `time_us` ≤ the event's is applied.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::snapshot::{Annotation, Device, Snapshot, StackId, Stage, Trace};

use super::observe::Curves;
use super::span_index::SpanIndex;

/// The group of entries outside every annotation (Mosaic's name for it).
pub const NO_ANNOTATION: &str = "";

/// One annotation event and the memory at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AnnotationEvent {
    /// Mosaic's key: `NAME_STAGE`, then `NAME_STAGE(1)`, `(2)`… for repeats.
    pub key: String,
    pub name: String,
    pub stage: String,
    pub time_us: i64,
    /// Seconds since the device's first timed entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_s: Option<f64>,
    /// The first entry at or after the event (the trace length when none).
    pub entry: u64,
    /// Mosaic's dynamic usage at the event.
    pub dynamic_usage: u64,
    /// Allocated bytes (MemoryViz) at the same moment.
    pub allocated: u64,
}

/// One START..END span of an annotation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PhaseSpan {
    pub name: String,
    /// Which START of this name it is, from 0.
    pub occurrence: u64,
    pub from_entry: u64,
    /// The last entry inside; `None` when the span holds no entry.
    pub to_entry: Option<u64>,
    /// False when nothing ended it: no END (annotation phases), no alloc
    /// of another phase (phases from stack rules). It then runs to the end
    /// of the trace.
    pub closed: bool,
    /// The highest allocated bytes from its start to its end (the state
    /// carried in counts: a phase holds at least what was live at its start).
    pub allocated_peak: u64,
    pub dynamic_peak: u64,
    pub live_at_start: u64,
    pub live_at_end: u64,
    /// Bytes of the allocations made inside it.
    pub allocated_during: u64,
}

/// One iteration: from one boundary to the next; the last to the END of
/// its annotation when the boundary's spans are the steps (see
/// `boundary_cuts`), else to the end of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Iteration {
    pub index: u64,
    pub from_entry: u64,
    pub to_entry: Option<u64>,
    pub allocated_peak: u64,
    pub live_at_start: u64,
}

/// Growth of the live bytes at each iteration's start: a least-squares line
/// over the iterations after the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Leak {
    /// The slope, rounded to whole bytes (negative: shrinking).
    pub bytes_per_iteration: i64,
    /// How many iterations the fit used.
    pub iterations: u64,
    /// Root-mean-square distance of the points from the line, in bytes.
    pub residual: u64,
}

/// The iterations of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Iterations {
    /// What starts an iteration, e.g. `ProfilerStep#*:START`.
    pub boundary: String,
    pub items: Vec<Iteration>,
    /// The highest allocated peak of the iterations after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state_peak: Option<u64>,
    /// Needs at least [`MIN_LEAK_POINTS`] iterations after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak: Option<Leak>,
}

/// The fewest iterations (after the first) a leak fit is made from.
pub const MIN_LEAK_POINTS: usize = 3;

/// The time structure of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DevicePhases {
    pub device: Device,
    pub annotations: Vec<AnnotationEvent>,
    pub phases: Vec<PhaseSpan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Iterations>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// False when the trace started mid-run: the memory at each event is
    /// then a lower bound (written only when false).
    #[serde(default = "complete", skip_serializing_if = "is_complete")]
    pub trace_complete: bool,
}

fn complete() -> bool {
    true
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_complete(c: &bool) -> bool {
    *c
}

/// Which annotation each entry belongs to, by index into `names` (0 is
/// [`NO_ANNOTATION`]), and the spans found on the way.
pub(crate) struct Attribution {
    pub(crate) names: Vec<String>,
    pub(crate) owner: Vec<u32>,
    /// Where each of the device's annotation events falls (see
    /// [`positions`]), in list order.
    positions: Vec<usize>,
    spans: Vec<RawSpan>,
    unmatched_ends: usize,
}

impl Attribution {
    /// The annotation entry `i` belongs to (`""` outside every one).
    pub(crate) fn name_at(&self, i: usize) -> &str {
        let id = self.owner.get(i).copied().unwrap_or(0);
        &self.names[id as usize]
    }
}

/// A span by entry positions: entries `from..to`.
struct RawSpan {
    name: u32,
    occurrence: u64,
    from: usize,
    to: usize,
    closed: bool,
}

/// Where each annotation event falls: the first entry at or after its time.
/// Annotations are taken in list order; one earlier than its predecessor
/// waits behind it (as Mosaic consumes them).
fn positions(trace: Trace<'_>, anns: &[&Annotation]) -> Vec<usize> {
    let mut out = Vec::with_capacity(anns.len());
    let mut i = 0;
    for a in anns {
        while i < trace.len() && trace.at(i).time().is_none_or(|t| t < a.time_us) {
            i += 1;
        }
        out.push(i);
    }
    out
}

/// Attribute every entry of `device` to the innermost annotation open at
/// it: an END closes the most recent open START of its name (an END with
/// none open is ignored and counted); a START never closed stays open to
/// the end.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a name id is one per distinct string id (a u32) after the empty name at 0, \
              so at most u32::MAX"
)]
pub(crate) fn attribute(snap: &Snapshot, device: Device) -> Attribution {
    let trace = snap.trace(device);
    let anns: Vec<&Annotation> = snap.annotations_of(device).collect();
    if anns.is_empty() {
        // Every entry belongs to "": nothing to walk.
        return Attribution {
            names: vec![NO_ANNOTATION.to_string()],
            owner: Vec::new(),
            positions: Vec::new(),
            spans: Vec::new(),
            unmatched_ends: 0,
        };
    }
    let at = positions(trace, &anns);
    let mut names = vec![NO_ANNOTATION.to_string()];
    let mut ids: HashMap<u32, u32> = HashMap::new();
    let mut occurrences: HashMap<u32, u64> = HashMap::new();
    // Open STARTs in order: (name id, occurrence, from entry, still open).
    // An END closes one in place (no shifting) and `by_name` finds it, so
    // each event costs O(1) however deep the nesting; closed ones are
    // dropped from the top when they get there.
    let mut open: Vec<(u32, u64, usize, bool)> = Vec::new();
    let mut by_name: Vec<Vec<usize>> = vec![Vec::new()];
    let mut spans = Vec::new();
    let mut unmatched_ends = 0;
    let mut owner = Vec::with_capacity(if anns.is_empty() { 0 } else { trace.len() });
    let mut next = 0;
    for i in 0..=trace.len() {
        while next < anns.len() && at[next] == i {
            let a = anns[next];
            next += 1;
            let id = *ids.entry(a.name).or_insert_with(|| {
                names.push(snap.str(a.name).to_string());
                by_name.push(Vec::new());
                (names.len() - 1) as u32
            });
            match a.stage {
                Stage::Start => {
                    let k = occurrences.entry(id).or_insert(0);
                    by_name[id as usize].push(open.len());
                    open.push((id, *k, i, true));
                    *k += 1;
                }
                Stage::End => match by_name[id as usize].pop() {
                    Some(j) => {
                        let (name, occurrence, from, _) = open[j];
                        open[j].3 = false;
                        while open.last().is_some_and(|o| !o.3) {
                            open.pop();
                        }
                        spans.push(RawSpan {
                            name,
                            occurrence,
                            from,
                            to: i,
                            closed: true,
                        });
                    }
                    None => unmatched_ends += 1,
                },
                Stage::Other => {}
            }
        }
        if i < trace.len() && !anns.is_empty() {
            owner.push(open.last().map_or(0, |o| o.0));
        }
    }
    for (name, occurrence, from, _) in open.into_iter().filter(|o| o.3) {
        spans.push(RawSpan {
            name,
            occurrence,
            from,
            to: trace.len(),
            closed: false,
        });
    }
    spans.sort_by_key(|s| (s.from, s.to));
    Attribution {
        names,
        owner,
        positions: at,
        spans,
        unmatched_ends,
    }
}

/// How iterations are found: annotation names starting with a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boundary {
    /// `ProfilerStep#`, else `Optimizer.zero_grad`, else `Optimizer.step`.
    Default,
    /// START events of annotations whose name starts with this.
    Prefix(String),
}

/// The default boundaries, in order of preference.
const DEFAULT_BOUNDARIES: [&str; 3] = ["ProfilerStep#", "Optimizer.zero_grad", "Optimizer.step"];

/// The time structure of `device` (docs/figures.md#time-structure). `curves` come from the
/// device's replay and `att` is its [`attribute`]; `substrings`, when not
/// empty, keep only the annotation events whose name contains one of them
/// (the phases and iterations still use every annotation).
pub(crate) fn device_phases(
    snap: &Snapshot,
    device: Device,
    curves: &Curves,
    att: &Attribution,
    boundary: &Boundary,
    substrings: &[String],
) -> DevicePhases {
    let trace = snap.trace(device);
    let anns: Vec<&Annotation> = snap.annotations_of(device).collect();
    let at = &att.positions;
    let first_time = trace.iter().find_map(|e| e.time());
    let rel = |t: i64| first_time.map(|f| (t - f) as f64 / 1e6);
    let u = |v: i64| v.max(0).unsigned_abs();

    // Usage at each event: every leading entry with time ≤ the event's.
    let mut annotations = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut applied = 0;
    for (a, &entry) in anns.iter().zip(at) {
        let name = snap.str(a.name);
        if !substrings.is_empty() && !substrings.iter().any(|s| name.contains(s.as_str())) {
            continue;
        }
        while applied < trace.len() && trace.at(applied).time().is_none_or(|t| t <= a.time_us) {
            applied += 1;
        }
        let stage = snap.str(a.stage_name);
        let base = format!("{name}_{stage}");
        let n = seen.entry(base.clone()).or_insert(0);
        let key = if *n == 0 {
            base
        } else {
            format!("{base}({n})")
        };
        *n += 1;
        annotations.push(AnnotationEvent {
            key,
            name: name.to_string(),
            stage: stage.to_string(),
            time_us: a.time_us,
            rel_s: rel(a.time_us),
            entry: entry as u64,
            dynamic_usage: u(curves.dynamic_after(applied)),
            allocated: u(curves.allocated_after(applied)),
        });
    }

    let index = SpanIndex::new(trace, curves);
    let phases: Vec<PhaseSpan> = att
        .spans
        .iter()
        .map(|s| {
            let name = att.names[s.name as usize].clone();
            phase_span(&index, name, s.occurrence, s.from..s.to, s.closed)
        })
        .collect();

    let mut warnings = Vec::new();
    if att.unmatched_ends > 0 {
        warnings.push(format!(
            "{} END annotation(s) without an open START of the same name were ignored",
            att.unmatched_ends
        ));
    }
    let unclosed = phases.iter().filter(|p| !p.closed).count();
    if unclosed > 0 {
        warnings.push(format!(
            "{unclosed} START annotation(s) never ended; their phases run to the end of the trace"
        ));
    }
    DevicePhases {
        device,
        annotations,
        iterations: iterations(snap, &anns, at, att, curves, boundary),
        phases,
        warnings,
        trace_complete: true,
    }
}

/// The figures of the span of entries `at` (from the device's curves),
/// as a [`PhaseSpan`], in time independent of the span's length.
pub(crate) fn phase_span(
    index: &SpanIndex<'_>,
    name: String,
    occurrence: u64,
    at: std::ops::Range<usize>,
    closed: bool,
) -> PhaseSpan {
    let u = |v: i64| v.max(0).unsigned_abs();
    let (from, to) = (at.start, at.end);
    let curves = index.curves;
    let (alloc_peak, dyn_peak) = index.peaks(from, to);
    PhaseSpan {
        name,
        occurrence,
        from_entry: from as u64,
        to_entry: (to > from).then(|| (to - 1) as u64),
        closed,
        allocated_peak: u(alloc_peak),
        dynamic_peak: u(dyn_peak),
        live_at_start: u(curves.allocated_after(from)),
        live_at_end: u(curves.allocated_after(to)),
        allocated_during: index.allocated_during(from, to),
    }
}

/// Highest allocated and dynamic bytes over entries `from..to`, the state
/// before `from` included.
fn span_peaks(curves: &Curves, from: usize, to: usize) -> (i64, i64) {
    let a = curves.allocated[from..to]
        .iter()
        .copied()
        .fold(curves.allocated_after(from), i64::max);
    let d = curves.dynamic[from..to]
        .iter()
        .copied()
        .fold(curves.dynamic_after(from), i64::max);
    (a, d)
}

/// The boundary's label, the first entry of each iteration, in order, and
/// where the last iteration ends (exclusive) when the boundary spans the steps;
/// `None` when the boundary picks no START event.
fn boundary_cuts(
    snap: &Snapshot,
    anns: &[&Annotation],
    at: &[usize],
    att: &Attribution,
    boundary: &Boundary,
) -> Option<(String, Vec<usize>, Option<usize>)> {
    // Each boundary START: (its first entry, its name).
    let starts = |prefix: &str| -> Vec<(usize, &str)> {
        anns.iter()
            .zip(at)
            .filter(|(a, _)| a.stage == Stage::Start && snap.str(a.name).starts_with(prefix))
            .map(|(a, &p)| (p, snap.str(a.name)))
            .collect()
    };
    let (label, mut starts) = match boundary {
        Boundary::Prefix(p) => (p.clone(), starts(p)),
        Boundary::Default => DEFAULT_BOUNDARIES
            .iter()
            .map(|p| (p.to_string(), starts(p)))
            .find(|(_, c)| !c.is_empty())?,
    };
    starts.dedup_by_key(|s| s.0);
    if starts.is_empty() {
        return None;
    }
    // Where each boundary START's own span ends (the END the attribution
    // paired it with; spans are sorted by their first entry).
    let ends: Vec<Option<usize>> = starts
        .iter()
        .map(|&(from, name)| {
            let first = att.spans.partition_point(|s| s.from < from);
            att.spans[first..]
                .iter()
                .take_while(|s| s.from == from)
                .filter(|s| s.closed && att.names[s.name as usize] == name)
                .map(|s| s.to)
                .max()
        })
        .collect();
    let cuts: Vec<usize> = starts.iter().map(|s| s.0).collect();
    // The last iteration ends at its END when the boundary's spans are the
    // iterations: `ProfilerStep#` (the profiler's whole step), or any
    // boundary whose every earlier span reaches the next START. Then what
    // follows the loop (evaluation, a checkpoint, the dump) is in no
    // iteration. A boundary that marks a moment inside the step
    // (`Optimizer.zero_grad`, `Optimizer.step`) says nothing of where the
    // last step ends: it runs to the end of the trace, as does one without
    // an END (never a figure cut short).
    let spans_steps = label == "ProfilerStep#"
        || (cuts.len() > 1
            && ends
                .iter()
                .zip(&cuts[1..])
                .all(|(end, &next)| end.is_some_and(|e| e >= next)));
    let end = ends.last().copied().flatten().filter(|_| spans_steps);
    Some((format!("{label}*:START"), cuts, end))
}

/// The index of the iteration entry `i` falls in, given the first entry of
/// each iteration (ascending); `None` before the first one.
pub(crate) fn iteration_of(starts: &[usize], i: usize) -> Option<u64> {
    starts
        .partition_point(|&s| s <= i)
        .checked_sub(1)
        .map(|k| k as u64)
}

/// The iterations, from the START events the boundary picks; `None` when
/// it picks none.
fn iterations(
    snap: &Snapshot,
    anns: &[&Annotation],
    at: &[usize],
    att: &Attribution,
    curves: &Curves,
    boundary: &Boundary,
) -> Option<Iterations> {
    let (label, cuts, end) = boundary_cuts(snap, anns, at, att, boundary)?;
    iterations_from(label, cuts, end, curves)
}

/// Iterations starting at entries `cuts` (ascending), each to the next;
/// the last to `end` (exclusive) when given, else to the end of the
/// trace; `None` without any.
fn iterations_from(
    boundary: String,
    mut cuts: Vec<usize>,
    end: Option<usize>,
    curves: &Curves,
) -> Option<Iterations> {
    cuts.dedup();
    let &last = cuts.last()?;
    let n = curves.allocated.len();
    let end = end.unwrap_or(n).clamp(last, n);
    let items: Vec<Iteration> = cuts
        .iter()
        .enumerate()
        .map(|(k, &from)| {
            let to = cuts.get(k + 1).copied().unwrap_or(end);
            Iteration {
                index: k as u64,
                from_entry: from as u64,
                to_entry: (to > from).then(|| (to - 1) as u64),
                allocated_peak: span_peaks(curves, from, to).0.max(0).unsigned_abs(),
                live_at_start: curves.allocated_after(from).max(0).unsigned_abs(),
            }
        })
        .collect();
    let steady_state_peak = items.iter().skip(1).map(|i| i.allocated_peak).max();
    let points: Vec<u64> = items.iter().skip(1).map(|i| i.live_at_start).collect();
    Some(Iterations {
        boundary,
        leak: leak_fit(&points),
        items,
        steady_state_peak,
    })
}

/// Iterations of a trace without annotations (NPU) from the rules'
/// `[iterations] boundary` regex: one starts at the first alloc of each
/// run of allocs whose stack matches it (a run ends at an alloc that does
/// not; frees and segment events neither start nor end one).
pub(crate) fn stack_iterations(
    snap: &Snapshot,
    device: Device,
    rules: &super::rules::RuleSet,
    curves: &Curves,
) -> Option<Iterations> {
    let rx = rules.iteration_stack()?;
    let mut cache: HashMap<StackId, bool> = HashMap::new();
    let mut matches = |stack: StackId| {
        *cache.entry(stack).or_insert_with(|| {
            super::stacks::rule_frames(snap, stack)
                .iter()
                .any(|(n, f)| rx.is_match(n) || rx.is_match(f))
        })
    };
    let mut cuts = Vec::new();
    let mut in_run = false;
    for (i, e) in snap.trace(device).iter().enumerate() {
        if e.action() != crate::snapshot::Action::Alloc {
            continue;
        }
        let m = matches(e.stack);
        if m && !in_run {
            cuts.push(i);
        }
        in_run = m;
    }
    // No event ends a stack-rule iteration: the last runs to the end.
    iterations_from(format!("stack /{}/", rx.as_str()), cuts, None, curves)
}

/// Least-squares slope of `ys` over 0, 1, 2…, and the RMS residual.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-integer `as` saturates (NaN gives 0): the rounding a fit's slope and \
              residual want"
)]
pub(crate) fn leak_fit(ys: &[u64]) -> Option<Leak> {
    if ys.len() < MIN_LEAK_POINTS {
        return None;
    }
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().map(|&y| y as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, &y) in ys.iter().enumerate() {
        let dx = x as f64 - mean_x;
        sxy += dx * (y as f64 - mean_y);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let sq: f64 = ys
        .iter()
        .enumerate()
        .map(|(x, &y)| {
            let r = y as f64 - (intercept + slope * x as f64);
            r * r
        })
        .sum();
    Some(Leak {
        bytes_per_iteration: slope.round() as i64,
        iterations: ys.len() as u64,
        residual: (sq / n).sqrt().round() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_leak_is_its_slope_with_no_residual() {
        let l = leak_fit(&[100, 150, 200, 250]).unwrap();
        assert_eq!(
            (l.bytes_per_iteration, l.iterations, l.residual),
            (50, 4, 0)
        );
    }

    #[test]
    fn a_flat_series_has_no_leak_and_noise_shows_in_the_residual() {
        let l = leak_fit(&[100, 100, 100]).unwrap();
        assert_eq!((l.bytes_per_iteration, l.residual), (0, 0));
        // y = 0, 10, 0, 10: the line 2 + 2x, residuals -2, 6, -6, 2,
        // RMS √20 ≈ 4.47.
        let l = leak_fit(&[0, 10, 0, 10]).unwrap();
        assert_eq!((l.bytes_per_iteration, l.residual), (2, 4));
    }

    #[test]
    fn an_entry_belongs_to_the_last_iteration_started_at_or_before_it() {
        let starts = [3, 10];
        assert_eq!(iteration_of(&starts, 0), None);
        assert_eq!(iteration_of(&starts, 3), Some(0));
        assert_eq!(iteration_of(&starts, 9), Some(0));
        assert_eq!(iteration_of(&starts, 10), Some(1));
        assert_eq!(iteration_of(&[], 5), None);
    }

    #[test]
    fn fewer_than_three_points_are_not_fitted() {
        assert_eq!(leak_fit(&[1, 2]), None);
        assert_eq!(leak_fit(&[]), None);
    }
}
