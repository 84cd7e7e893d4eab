//! The page's one JSON block: per device, the timeline's series on two x
//! axes (microseconds since the device's first timed entry where the trace
//! has usable time, and entries applied), the axis the page opens on
//! ([`XAxis`], docs/figures.md#the-pages-x-axis), the peak and OOM markers,
//! the bands, the window, the budgets and the moments with their folded
//! stacks. Names are stored raw: the page's script writes them as text,
//! never as markup.

use crate::vocab::{Device, NoStory};
use std::collections::HashMap;

use serde::Serialize;

use crate::analysis::{Band, DeviceReport, MomentKind, Timeline, TimelinePoint};
use crate::convert;
use crate::report::frames;

use super::overlay;

/// Every device of the page, in page order.
#[derive(Serialize)]
pub(super) struct PageData<'a> {
    /// The x axis asked for (`--x`): `auto`, `entries` or `time`.
    pub(super) x: &'static str,
    pub(super) devices: Vec<DeviceData<'a>>,
}

pub use crate::report::x_axis::XAxis;

/// `auto` takes entries when the rise to the allocated peak is shorter than
/// this share of the time axis.
pub(crate) const RISE_SHARE: f64 = 0.01;

/// ... or shorter than this share (about 43 of the plot's 864 pixels: the
/// rise squeezed into a few pixels) while the entries axis draws it wider.
pub(crate) const NARROW_RISE_SHARE: f64 = 0.05;

/// The axis `auto` opens on, from the rise's share of each axis: entries
/// when the rise would sit in a few pixels of the time axis.
fn auto_axis(time: f64, entries: f64) -> &'static str {
    if time < RISE_SHARE || (time < NARROW_RISE_SHARE && entries > time) {
        "entry"
    } else {
        "s"
    }
}

/// One device chart.
#[derive(Serialize)]
pub(super) struct DeviceData<'a> {
    snapshot: &'a str,
    device: Device,
    /// `"s"`: x is microseconds since `origin`; `"entry"`: entries applied
    /// (no usable time).
    axis: &'static str,
    /// The axis `auto` opens on: `"entry"` when the rise to the allocated
    /// peak takes under [`RISE_SHARE`] of the time axis, or under
    /// [`NARROW_RISE_SHARE`] of it and more of the entries axis; else `axis`.
    auto: &'static str,
    /// The rise's share of the time axis (`auto`'s reason), when timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    rise: Option<f64>,
    /// Its share of the entries axis, when timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    rise_entries: Option<f64>,
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
    /// The finer level of allocated totals, drawn when zoomed in (absent
    /// where the samples hold every entry already).
    #[serde(skip_serializing_if = "Option::is_none")]
    fine: Option<Fine>,
    /// Budget lines (`check --html`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) budgets: Vec<BudgetLine>,
}

/// The finer level: x on both axes and the allocated total.
#[derive(Serialize)]
struct Fine {
    x: Vec<i64>,
    e: Vec<i64>,
    v: Vec<u64>,
}

/// A budget drawn as a horizontal line, with the headroom in its label.
#[derive(Serialize)]
pub(super) struct BudgetLine {
    /// The check's id, e.g. `allocated-peak`.
    pub(super) check: String,
    pub(super) bytes: u64,
    /// Budget minus the current figure (negative: over by that much).
    pub(super) headroom: i64,
}

/// Another run's allocated and reserved bytes, drawn over a chart: its x
/// mapped onto this chart's on both axes, through the iterations and
/// phases both runs have where they share some, else its own extent
/// stretched onto this run's.
#[derive(Serialize)]
struct Overlay<'a> {
    snapshot: &'a str,
    /// How BASE's time x was mapped: `iteration`, `phase`, `iteration and
    /// phase`, or `extent` (stretched end to end).
    aligned: &'static str,
    /// The same for the entries axis.
    aligned_entries: &'static str,
    /// On the time axis (the chart's entries axis where it has no time).
    x: Vec<i64>,
    /// On the entries axis.
    e: Vec<i64>,
    allocated: Vec<u64>,
    reserved: Vec<u64>,
}

/// One category's bytes at every sample.
#[derive(Serialize)]
struct Series<'a> {
    name: &'a str,
    /// Its colour ([`super::palette`]), as the category table's swatch.
    color: String,
    bytes: Vec<u64>,
    /// 0 B at every sample: in the legend only (a custom category that
    /// matched nothing, as the terminal lists it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    empty: bool,
}

/// The order the chart stacks the categories in (indices into
/// `t.categories`), bottom first: memory live since before recording
/// (`pre-trace`), then each other layer that holds the same bytes at every
/// sample (static memory), then the rest in report order; so the bands that
/// grow are drawn over the ones that never do. Empty layers are left out,
/// except the custom categories in `custom`.
fn stacking(t: &Timeline, custom: &[String]) -> Vec<usize> {
    let layer = |k: usize| t.points.iter().map(move |p| p.bytes[k]);
    let mut order: Vec<(u8, usize)> = t
        .categories
        .iter()
        .enumerate()
        .filter(|(k, name)| layer(*k).any(|b| b > 0) || custom.contains(name))
        .map(|(k, name)| {
            let first = layer(k).next().unwrap_or(0);
            let rank = if name.as_str() == NoStory::PreTrace.id() {
                0
            } else if first > 0 && layer(k).all(|b| b == first) {
                1
            } else {
                2
            };
            (rank, k)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, k)| k).collect()
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
    /// On the entries axis.
    e: i64,
    /// Index into `moments`.
    moment: usize,
}

#[derive(Serialize)]
pub(super) struct BandData<'a> {
    pub(super) iteration: bool,
    pub(super) name: &'a str,
    pub(super) x0: i64,
    pub(super) x1: i64,
    /// On the entries axis.
    pub(super) e0: i64,
    pub(super) e1: i64,
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
    /// A group without frames: its name and what that means
    /// (docs/figures.md#memory-with-no-story).
    #[serde(skip_serializing_if = "Option::is_none")]
    no_frames: Option<[&'static str; 2]>,
}

/// Where entries are on the x axis.
pub(super) struct Axis {
    pub(super) origin: Option<i64>,
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
    pub(super) fn x(&self, entry: Option<u64>, time_us: Option<i64>) -> i64 {
        match (self.origin, entry) {
            (_, None) => 0,
            (Some(origin), Some(_)) => time_us.map_or(0, |t| (t - origin).max(0)),
            (None, Some(e)) => convert::position(e) + 1,
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
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a chart's moments are bounded (samples, peaks, phase edges) and so \
                      are the blocks listed at each: far fewer than 2^32 lines"
        )]
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

/// The chart's moments (each with its stacks' lines interned in `lines`)
/// and the peak and OOM markers at them.
fn moments(
    report: &DeviceReport,
    t: &Timeline,
    axis: &Axis,
    lines: &mut Lines,
) -> (Vec<MomentData>, Vec<Mark>) {
    let mut marks = Vec::new();
    let mut oom_at: HashMap<u64, u64> = report.oom.iter().map(|o| (o.entry, o.allocated)).collect();
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
                    e: ENTRIES.x(m.entry, None),
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
                entry: m.entry.map_or(-1, convert::position),
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
                        no_frames: s.no_frames.map(|n| [n.id(), n.meaning()]),
                    })
                    .collect(),
            }
        })
        .collect();
    (moments, marks)
}

impl<'a> DeviceData<'a> {
    pub(super) fn new(path: &'a str, report: &'a DeviceReport, t: &'a Timeline) -> Self {
        let axis = Axis::of(t);
        let band = |b: &'a Band| BandData {
            iteration: b.iteration,
            name: &b.name,
            x0: axis.x(Some(b.from_entry), b.from_time_us),
            x1: axis.x(Some(b.to_entry), b.to_time_us),
            e0: ENTRIES.x(Some(b.from_entry), None),
            e1: ENTRIES.x(Some(b.to_entry), None),
        };
        let mut colours = super::palette::colours(&t.categories);
        let cats = stacking(t, &report.categories.custom)
            .into_iter()
            .map(|k| Series {
                name: &t.categories[k],
                color: std::mem::take(&mut colours[k]),
                bytes: t.points.iter().map(|p| p.bytes[k]).collect(),
                empty: t.points.iter().all(|p| p.bytes[k] == 0),
            })
            .collect();
        let mut lines = Lines::default();
        let (moments, marks) = moments(report, t, &axis, &mut lines);
        let rise = axis.origin.and_then(|_| rise_share(t));
        let rise_entries = rise.and_then(|_| rise_share_entries(t));
        DeviceData {
            snapshot: path,
            device: report.device,
            axis: axis.name(),
            auto: match rise {
                Some(time) => auto_axis(time, rise_entries.unwrap_or(0.0)),
                None => axis.name(),
            },
            rise,
            rise_entries,
            x: t.points
                .iter()
                .map(|p| axis.x(p.entry, p.time_us))
                .collect(),
            entry: t
                .points
                .iter()
                .map(|p| p.entry.map_or(-1, convert::position))
                .collect(),
            cats,
            reserved: t.points.iter().map(|p| p.reserved).collect(),
            marks,
            bands: t.bands.iter().map(band).collect(),
            window: t.window.as_ref().map(band),
            moments,
            lines: lines.lines,
            baseline: None,
            fine: (t.fine.len() > t.points.len()).then(|| Fine {
                x: t.fine
                    .iter()
                    .map(|p| axis.x(Some(p.entry), p.time_us))
                    .collect(),
                e: t.fine
                    .iter()
                    .map(|p| ENTRIES.x(Some(p.entry), None))
                    .collect(),
                v: t.fine.iter().map(|p| p.allocated).collect(),
            }),
            budgets: Vec::new(),
        }
    }

    /// The chart without its finer level (a page of many charts keeps
    /// within its size budget).
    pub(super) fn drop_fine(&mut self) {
        self.fine = None;
    }

    /// How the baseline drawn over the chart was placed, in words for the
    /// page's note (`None`: no baseline).
    pub(super) fn baseline_alignment(&self) -> Option<String> {
        let b = self.baseline.as_ref()?;
        let how = |aligned: &str| match aligned {
            "iteration" => {
                "its iterations stretched onto this run's (iteration k over iteration k)"
            }
            "phase" => {
                "its phases stretched onto this run's (the n-th span of a phase over the n-th)"
            }
            "iteration and phase" => {
                "its iterations and phases stretched onto this run's (iteration k over \
                 iteration k, the n-th span of a phase over the n-th)"
            }
            _ => "its own extent stretched onto this run's (start on start, end on end)",
        };
        Some(if b.aligned == b.aligned_entries {
            how(b.aligned).to_string()
        } else {
            format!(
                "on the time axis {}; on the entries axis {}",
                how(b.aligned),
                how(b.aligned_entries)
            )
        })
    }

    /// The chart with `base`'s allocated and reserved bytes drawn over it.
    /// On each axis, where both runs have iterations or phase spans in
    /// common, BASE's x is mapped onto NEW's through them (piecewise
    /// linear), so iteration k is drawn over iteration k and the n-th span
    /// of a phase over the n-th; else BASE's own extent is stretched onto
    /// NEW's, so a run of another length never squashes either. On the time
    /// axis a BASE without usable time is placed by its entries. `false`
    /// when BASE has nothing to draw.
    pub(super) fn with_baseline(&mut self, path: &'a str, base: &Timeline) -> bool {
        if base.points.is_empty() {
            return false;
        }
        let axis = Axis::of(base);
        let (time, aligned) = placed(base, &axis, &self.bands, false, self.x.last().copied());
        let (e, aligned_entries) = placed(
            base,
            &ENTRIES,
            &self.bands,
            true,
            self.entry.last().map(|&e| e + 1),
        );
        self.baseline = Some(Overlay {
            snapshot: path,
            aligned,
            aligned_entries,
            x: time,
            e,
            allocated: base.points.iter().map(|p| p.bytes.iter().sum()).collect(),
            reserved: base.points.iter().map(|p| p.reserved).collect(),
        });
        true
    }
}

/// The entries axis (no time).
pub(super) const ENTRIES: Axis = Axis { origin: None };

/// BASE's samples placed on one of NEW's axes ([`overlay::place`]):
/// `entries`: the entries axis, else the time axis; `ours`: NEW's bands;
/// `extent`: NEW's last x.
fn placed(
    base: &Timeline,
    axis: &Axis,
    ours: &[BandData<'_>],
    entries: bool,
    extent: Option<i64>,
) -> (Vec<i64>, &'static str) {
    let own: Vec<i64> = base
        .points
        .iter()
        .map(|p| axis.x(p.entry, p.time_us))
        .collect();
    let theirs: Vec<overlay::Span<'_>> = base
        .bands
        .iter()
        .map(|b| overlay::Span {
            iteration: b.iteration,
            name: &b.name,
            x0: axis.x(Some(b.from_entry), b.from_time_us),
            x1: axis.x(Some(b.to_entry), b.to_time_us),
        })
        .collect();
    let ours: Vec<overlay::Span<'_>> = ours
        .iter()
        .map(|b| overlay::Span {
            iteration: b.iteration,
            name: b.name,
            x0: if entries { b.e0 } else { b.x0 },
            x1: if entries { b.e1 } else { b.x1 },
        })
        .collect();
    overlay::place(&own, &theirs, &ours, extent)
}

/// The allocated peak's rise: the peak's moment and the last sample before
/// it that is below half of it (halfway between the lowest sample before
/// the peak and the peak); `None` without a peak above the start.
fn rise(t: &Timeline) -> Option<(&crate::analysis::Moment, Option<&TimelinePoint>)> {
    let peak = t.moments.iter().find(|m| {
        m.kinds
            .contains(&MomentKind::Peak(crate::vocab::Figure::AllocatedPeak))
    })?;
    let at = peak.entry?;
    let total = |p: &TimelinePoint| p.bytes.iter().sum::<u64>();
    let before: Vec<_> = t
        .points
        .iter()
        .filter(|p| p.entry.is_none_or(|e| e < at))
        .collect();
    let low = before.iter().map(|p| total(p)).min()?;
    let half = low + peak.allocated.saturating_sub(low) / 2;
    Some((peak, before.into_iter().rev().find(|p| total(p) < half)))
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a share of an axis: microseconds and entries far below 2^52"
)]
fn share(part: i64, whole: i64) -> f64 {
    part.max(0) as f64 / whole.max(1) as f64
}

/// The allocated peak's [`rise`] as a share of the time axis: from that
/// sample's time to the peak's, over the span of the samples' times.
pub(crate) fn rise_share(t: &Timeline) -> Option<f64> {
    let (peak, from) = rise(t)?;
    let peak_time = peak.time_us?;
    let origin = t.origin_time_us?;
    let from = from.map_or(origin, |p| p.time_us.unwrap_or(origin));
    let end = t.points.iter().filter_map(|p| p.time_us).max()?;
    Some(share(peak_time - from, end - origin))
}

/// The same rise as a share of the entries axis.
fn rise_share_entries(t: &Timeline) -> Option<f64> {
    let (peak, from) = rise(t)?;
    let x = |e: Option<u64>| ENTRIES.x(e, None);
    let end = t.points.iter().map(|p| x(p.entry)).max()?;
    Some(share(x(peak.entry) - from.map_or(0, |p| x(p.entry)), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(entry: Option<u64>, time_us: Option<i64>, bytes: u64) -> TimelinePoint {
        TimelinePoint {
            entry,
            time_us,
            bytes: vec![bytes],
            reserved: 0,
        }
    }

    /// A run of 100 s at 1 GiB, then a rise to 9 GiB: from 2 GiB at
    /// +99.96 s over 5 GiB (half: 1 + 8 / 2) at +99.98 s to the peak at
    /// +100 s.
    fn compiled() -> Timeline {
        const G: u64 = 1 << 30;
        let s = 1_000_000;
        Timeline {
            categories: vec!["a".into()],
            points: vec![
                point(None, None, 0),
                point(Some(0), Some(7 * s), G),
                point(Some(500), Some(7 * s + 99_960_000), 2 * G),
                point(Some(600), Some(7 * s + 99_980_000), 6 * G),
                point(Some(700), Some(7 * s + 100_000_000), 9 * G),
            ],
            moments: vec![crate::analysis::Moment {
                kinds: vec![MomentKind::Peak(crate::vocab::Figure::AllocatedPeak)],
                entry: Some(700),
                time_us: Some(7 * s + 100_000_000),
                allocated: 9 * G,
                stacks: Vec::new(),
            }],
            origin_time_us: Some(7 * s),
            ..Timeline::default()
        }
    }

    #[test]
    fn the_rise_runs_from_the_last_sample_below_half_to_the_peak() {
        // The lowest before the peak is the empty start (0), so half is
        // 4.5 GiB: the last sample below it is 2 GiB at +99.96 s; the rise
        // is 0.04 s of 100 s.
        let share = rise_share(&compiled()).unwrap();
        assert!((share - 0.0004).abs() < 1e-9, "{share}");
        assert!(share < RISE_SHARE);
        let mut slow = compiled();
        slow.points[2].time_us = Some(7_000_000 + 50_000_000);
        let share = rise_share(&slow).unwrap();
        assert!((share - 0.5).abs() < 1e-9, "{share}");
        slow.moments.clear();
        assert_eq!(rise_share(&slow), None, "no allocated peak, no rise");
    }

    #[test]
    fn auto_takes_entries_when_the_rise_would_sit_in_a_few_pixels_of_the_time_axis() {
        assert_eq!(auto_axis(0.004, 0.001), "entry", "under 1%: entries");
        assert_eq!(auto_axis(0.03, 0.08), "entry", "under 5%, wider on entries");
        assert_eq!(
            auto_axis(0.03, 0.02),
            "s",
            "under 5%, but narrower on entries"
        );
        assert_eq!(auto_axis(0.06, 0.5), "s", "wide enough on time");
        // The compiled run: entries 500..700 of 701 (from x 501 to 701).
        let share = rise_share_entries(&compiled()).unwrap();
        assert!((share - 200.0 / 701.0).abs() < 1e-9, "{share}");
    }

    fn layers(names: &[&str], rows: &[&[u64]]) -> Timeline {
        Timeline {
            categories: names.iter().map(|n| (*n).to_string()).collect(),
            points: rows
                .iter()
                .map(|r| TimelinePoint {
                    entry: None,
                    time_us: None,
                    bytes: r.to_vec(),
                    reserved: 0,
                })
                .collect(),
            ..Timeline::default()
        }
    }

    #[test]
    fn pre_trace_then_the_layers_that_never_change_are_stacked_first_and_empty_custom_ones_kept() {
        // activation grows, parameter is static, pre-trace shrinks (freed
        // during the trace), other and mine are empty, mine is custom.
        let t = layers(
            &["activation", "parameter", "other", "mine", "pre-trace"],
            &[&[0, 5, 0, 0, 9], &[3, 5, 0, 0, 9], &[7, 5, 0, 0, 4]],
        );
        assert_eq!(stacking(&t, &["mine".to_string()]), [4, 1, 0, 3]);
        assert_eq!(stacking(&t, &[]), [4, 1, 0]);
    }

    #[test]
    fn a_baseline_of_another_length_is_stretched_from_its_own_extent() {
        // BASE runs 0..100 s on entries 0..700; NEW is 1 s long on 50 entries.
        let base = compiled();
        let (x, how) = placed(&base, &Axis::of(&base), &[], false, Some(1_000_000));
        assert_eq!(how, "extent");
        assert_eq!(x, [0, 0, 999_600, 999_800, 1_000_000]);
        let (e, how) = placed(&base, &ENTRIES, &[], true, Some(50));
        assert_eq!(how, "extent");
        // Entries 0, 500, 600, 700 are at x 1, 501, 601, 701 of 701.
        assert_eq!(e, [0, 0, 35, 42, 50]);
    }
}
