//! The page's one JSON block: per device, the timeline's series on one x
//! axis (microseconds since the device's first timed entry, or entries
//! applied where the trace has no usable time), the peak and OOM markers,
//! the bands, the window and the moments with their folded stacks. Names
//! are stored raw: the page's script writes them as text, never as markup.

use std::collections::HashMap;

use serde::Serialize;

use crate::analysis::{Band, DeviceReport, MomentKind, Timeline};
use crate::report::frames;

/// Every device of the page, in page order.
#[derive(Serialize)]
pub(super) struct PageData<'a> {
    pub(super) devices: Vec<DeviceData<'a>>,
}

/// One device chart.
#[derive(Serialize)]
pub(super) struct DeviceData<'a> {
    snapshot: &'a str,
    device: u32,
    /// `"s"`: x is microseconds since `origin`; `"entry"`: entries applied.
    axis: &'static str,
    x: Vec<i64>,
    /// The entry each sample is after (`-1`: before the first).
    entry: Vec<i64>,
    cats: Vec<Series<'a>>,
    reserved: Vec<u64>,
    marks: Vec<Mark>,
    bands: Vec<BandData<'a>>,
    window: Option<BandData<'a>>,
    moments: Vec<MomentData>,
    /// The stack lines the moments refer to by index.
    lines: Vec<String>,
    /// The baseline's totals on the same axis (`diff --html`).
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<Overlay<'a>>,
}

/// Another run's allocated and reserved bytes, drawn over a chart.
#[derive(Serialize)]
struct Overlay<'a> {
    snapshot: &'a str,
    /// `"iteration"` when BASE's x was mapped onto NEW's iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    aligned: Option<&'static str>,
    x: Vec<i64>,
    allocated: Vec<u64>,
    reserved: Vec<u64>,
}

/// One category's bytes at every sample.
#[derive(Serialize)]
struct Series<'a> {
    name: &'a str,
    /// Index into the page's palette (the category's place in the rules).
    color: usize,
    bytes: Vec<u64>,
}

/// A peak or OOM marker.
#[derive(Serialize)]
struct Mark {
    /// The figure id, or `oom`.
    figure: &'static str,
    /// The exact value as text (the JSON figure), and as a number to draw.
    bytes: String,
    y: u64,
    x: i64,
    /// Index into `moments`.
    moment: usize,
}

#[derive(Serialize)]
struct BandData<'a> {
    iteration: bool,
    name: &'a str,
    x0: i64,
    x1: i64,
}

#[derive(Serialize)]
struct MomentData {
    /// What falls here, e.g. `allocated-peak`, `oom`, `phase forward`.
    label: String,
    entry: i64,
    x: i64,
    allocated: u64,
    stacks: Vec<StackData>,
}

#[derive(Serialize)]
struct StackData {
    bytes: u64,
    count: u64,
    /// Indices into `lines`: Python frames first, C++ frames folded.
    lines: Vec<u32>,
}

/// Where entries are on the x axis.
struct Axis {
    origin: Option<i64>,
}

impl Axis {
    /// Seconds when every entry the chart places has a `time_us` and the
    /// samples' times do not go backwards; entries applied otherwise.
    fn of(t: &Timeline) -> Axis {
        let Some(origin) = t.origin_time_us else {
            return Axis { origin: None };
        };
        let timed = t
            .points
            .iter()
            .all(|p| p.entry.is_none() || p.time_us.is_some())
            && t.moments
                .iter()
                .all(|m| m.entry.is_none() || m.time_us.is_some())
            && t.bands
                .iter()
                .chain(&t.window)
                .all(|b| b.from_time_us.is_some() && b.to_time_us.is_some())
            && t.points
                .windows(2)
                .all(|w| w[0].time_us.unwrap_or(origin) <= w[1].time_us.unwrap_or(origin));
        Axis {
            origin: timed.then_some(origin),
        }
    }

    fn name(&self) -> &'static str {
        if self.origin.is_some() {
            "s"
        } else {
            "entry"
        }
    }

    /// The x of the state after `entry` (`None`: before the first).
    fn x(&self, entry: Option<u64>, time_us: Option<i64>) -> i64 {
        match (self.origin, entry) {
            (_, None) => 0,
            (Some(origin), Some(_)) => time_us.map_or(0, |t| (t - origin).max(0)),
            (None, Some(e)) => e as i64 + 1,
        }
    }
}

/// Interns stack lines so a frame shared by many stacks is stored once.
#[derive(Default)]
struct Lines {
    index: HashMap<String, u32>,
    lines: Vec<String>,
}

impl Lines {
    fn id(&mut self, line: String) -> u32 {
        if let Some(&i) = self.index.get(&line) {
            return i;
        }
        let i = self.lines.len() as u32;
        self.lines.push(line.clone());
        self.index.insert(line, i);
        i
    }
}

fn moment_label(kind: MomentKind, bands: &[Band]) -> String {
    match kind {
        MomentKind::Peak(f) => f.id().to_string(),
        MomentKind::Oom => "oom".to_string(),
        MomentKind::PhaseStart(b) => format!("{} starts", bands[b].name),
        MomentKind::Sample => "sample".to_string(),
    }
}

impl<'a> DeviceData<'a> {
    pub(super) fn new(path: &'a str, report: &'a DeviceReport, t: &'a Timeline) -> Self {
        let axis = Axis::of(t);
        let band = |b: &'a Band| BandData {
            iteration: b.iteration,
            name: &b.name,
            x0: axis.x(Some(b.from_entry), b.from_time_us),
            x1: axis.x(Some(b.to_entry), b.to_time_us),
        };
        let cats = t
            .categories
            .iter()
            .enumerate()
            .filter(|(k, _)| t.points.iter().any(|p| p.bytes[*k] > 0))
            .map(|(k, name)| Series {
                name,
                color: k,
                bytes: t.points.iter().map(|p| p.bytes[k]).collect(),
            })
            .collect();
        let mut lines = Lines::default();
        let mut marks = Vec::new();
        let mut oom_at: HashMap<u64, u64> =
            report.oom.iter().map(|o| (o.entry, o.allocated)).collect();
        let moments = t
            .moments
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let x = axis.x(m.entry, m.time_us);
                for kind in &m.kinds {
                    let (figure, value) = match *kind {
                        MomentKind::Peak(f) => (f.id(), f.value(report).unwrap_or(0)),
                        MomentKind::Oom => {
                            let at = m.entry.and_then(|e| oom_at.remove(&e));
                            ("oom", at.unwrap_or(m.allocated))
                        }
                        _ => continue,
                    };
                    marks.push(Mark {
                        figure,
                        bytes: value.to_string(),
                        y: value,
                        x,
                        moment: k,
                    });
                }
                MomentData {
                    label: m
                        .kinds
                        .iter()
                        .map(|k| moment_label(*k, &t.bands))
                        .collect::<Vec<_>>()
                        .join(", "),
                    entry: m.entry.map_or(-1, |e| e as i64),
                    x,
                    allocated: m.allocated,
                    stacks: m
                        .stacks
                        .iter()
                        .map(|s| StackData {
                            bytes: s.bytes,
                            count: s.count,
                            lines: frames::folded(&s.frames)
                                .into_iter()
                                .map(|l| lines.id(l))
                                .collect(),
                        })
                        .collect(),
                }
            })
            .collect();
        DeviceData {
            snapshot: path,
            device: report.device,
            axis: axis.name(),
            x: t.points
                .iter()
                .map(|p| axis.x(p.entry, p.time_us))
                .collect(),
            entry: t
                .points
                .iter()
                .map(|p| p.entry.map_or(-1, |e| e as i64))
                .collect(),
            cats,
            reserved: t.points.iter().map(|p| p.reserved).collect(),
            marks,
            bands: t.bands.iter().map(band).collect(),
            window: t.window.as_ref().map(band),
            moments,
            lines: lines.lines,
            baseline: None,
        }
    }

    /// Whether the baseline drawn over the chart was aligned by iteration.
    pub(super) fn baseline_aligned(&self) -> bool {
        self.baseline.as_ref().is_some_and(|b| b.aligned.is_some())
    }

    /// The chart with `base`'s allocated and reserved bytes drawn over it;
    /// unchanged (and `false`) when the two cannot share an axis (one is
    /// timed, the other is not). Where both runs have iterations, BASE's
    /// x is mapped onto NEW's iteration by iteration (piecewise linear), so
    /// iteration k is drawn over iteration k.
    pub(super) fn with_baseline(&mut self, path: &'a str, base: &Timeline) -> bool {
        let axis = Axis::of(base);
        if axis.name() != self.axis {
            return false;
        }
        let own: Vec<i64> = base
            .points
            .iter()
            .map(|p| axis.x(p.entry, p.time_us))
            .collect();
        let theirs: Vec<(i64, i64)> = base
            .bands
            .iter()
            .filter(|b| b.iteration)
            .map(|b| {
                (
                    axis.x(Some(b.from_entry), b.from_time_us),
                    axis.x(Some(b.to_entry), b.to_time_us),
                )
            })
            .collect();
        let ours: Vec<(i64, i64)> = self
            .bands
            .iter()
            .filter(|b| b.iteration)
            .map(|b| (b.x0, b.x1))
            .collect();
        let knots = iteration_knots(&theirs, &ours);
        self.baseline = Some(Overlay {
            snapshot: path,
            aligned: knots.as_ref().map(|_| "iteration"),
            x: match &knots {
                Some(k) => own.iter().map(|&x| map_through(k, x)).collect(),
                None => own,
            },
            allocated: base.points.iter().map(|p| p.bytes.iter().sum()).collect(),
            reserved: base.points.iter().map(|p| p.reserved).collect(),
        });
        true
    }
}

/// Matching points (base x, new x) at each iteration's start and end, for
/// the iterations both runs have; `None` when either has none or the points
/// do not rise on both sides (overlapping spans).
fn iteration_knots(base: &[(i64, i64)], new: &[(i64, i64)]) -> Option<Vec<(i64, i64)>> {
    let knots: Vec<(i64, i64)> = base
        .iter()
        .zip(new)
        .flat_map(|(b, n)| [(b.0, n.0), (b.1, n.1)])
        .collect();
    let rising = knots
        .windows(2)
        .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1);
    (!knots.is_empty() && rising).then_some(knots)
}

/// `x` on BASE's axis mapped onto NEW's through `knots`: linear between
/// two knots, shifted by the nearest knot's offset outside them.
fn map_through(knots: &[(i64, i64)], x: i64) -> i64 {
    let k = knots.partition_point(|&(b, _)| b <= x);
    if k == 0 {
        return x - knots[0].0 + knots[0].1;
    }
    if k == knots.len() {
        let (b, n) = knots[k - 1];
        return x - b + n;
    }
    let ((b0, n0), (b1, n1)) = (knots[k - 1], knots[k]);
    if b1 == b0 {
        return n0;
    }
    n0 + ((x - b0) as i128 * (n1 - n0) as i128 / (b1 - b0) as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_iterations_land_on_the_new_runs_iterations() {
        // BASE: iterations 0..10, 10..30; NEW: 0..20, 20..30.
        let knots = iteration_knots(&[(0, 10), (10, 30)], &[(0, 20), (20, 30)]).unwrap();
        assert_eq!(map_through(&knots, 0), 0);
        assert_eq!(map_through(&knots, 5), 10);
        assert_eq!(map_through(&knots, 10), 20);
        assert_eq!(map_through(&knots, 20), 25);
        assert_eq!(map_through(&knots, 30), 30);
        assert_eq!(map_through(&knots, 35), 35, "after the last: shifted");
        assert_eq!(map_through(&knots, -4), -4, "before the first: shifted");
    }

    #[test]
    fn no_alignment_without_iterations_on_both_sides_or_with_overlaps() {
        assert!(iteration_knots(&[], &[(0, 1)]).is_none());
        assert!(iteration_knots(&[(0, 10), (5, 20)], &[(0, 10), (10, 20)]).is_none());
    }
}
