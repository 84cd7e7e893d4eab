//! The document of `memgate phases` (docs/figures.md#time-structure): per snapshot and device,
//! a summary per annotation name, then the annotation events with the
//! memory at each, the phase spans, and the iterations with their leak
//! fit. Each list is cut at [`LIST_LIMIT`] unless every item is asked for,
//! and says how many it left out.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::analysis::{AnnotationEvent, DevicePhases, Iterations, PhaseSpan};

/// How many items each list holds by default (`phases --all`: every one).
pub const LIST_LIMIT: usize = 20;

/// The spans of one annotation (or stack-rule phase) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct NameSummary {
    pub name: String,
    /// How many spans it has.
    pub spans: u64,
    /// The trace entries inside them, summed (a nested span counts in its
    /// own name and in the enclosing one's).
    pub entries: u64,
    /// The highest `allocated-peak` of its spans.
    pub largest_allocated_peak: u64,
}

/// One device's time structure as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PhasesDevice {
    pub device: crate::vocab::Device,
    /// Per name, most entries first; cut, it keeps the names with the most
    /// entries, the most spans and the highest peak in turn.
    pub summary: Vec<NameSummary>,
    pub summary_left_out: u64,
    pub annotations: Vec<AnnotationEvent>,
    pub annotations_left_out: u64,
    pub phases: Vec<PhaseSpan>,
    pub phases_left_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Iterations>,
    pub iterations_left_out: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// False when the trace started mid-run: the memory at each event is
    /// then a lower bound (written only when false).
    #[serde(skip_serializing_if = "is_complete")]
    pub trace_complete: bool,
}

fn is_complete(complete: &bool) -> bool {
    *complete
}

/// The first `limit` items (all with `None`) and how many are left out.
fn cut<T>(mut items: Vec<T>, limit: Option<usize>) -> (Vec<T>, u64) {
    let keep = limit.unwrap_or(items.len()).min(items.len());
    let left = (items.len() - keep) as u64;
    items.truncate(keep);
    (items, left)
}

/// The per-name summary of `spans`: the names with the most trace entries
/// inside their spans first, then by name.
pub fn summarize_spans(spans: &[PhaseSpan]) -> Vec<NameSummary> {
    let mut out: Vec<NameSummary> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for s in spans {
        let i = *at.entry(&s.name).or_insert_with(|| {
            out.push(NameSummary {
                name: s.name.clone(),
                spans: 0,
                entries: 0,
                largest_allocated_peak: 0,
            });
            out.len() - 1
        });
        let n = &mut out[i];
        n.spans += 1;
        n.entries += s.to_entry.map_or(0, |t| t + 1 - s.from_entry);
        n.largest_allocated_peak = n.largest_allocated_peak.max(s.allocated_peak);
    }
    out.sort_by(|a, b| b.entries.cmp(&a.entries).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The first `limit` names of `summary` (most entries first) as they would
/// be cut, except that the names are taken in turn from three rankings:
/// most entries, most spans, highest peak. A name with many short spans
/// (torch.compile's `pad_mm_benchmark`) or one heavy span is then listed
/// within the same number of lines; the kept names stay in `summary`'s order.
fn pick(summary: Vec<NameSummary>, limit: Option<usize>) -> (Vec<NameSummary>, u64) {
    let Some(limit) = limit.filter(|&l| l < summary.len()) else {
        return cut(summary, limit);
    };
    let by = |key: fn(&NameSummary) -> u64| {
        let mut order: Vec<usize> = (0..summary.len()).collect();
        // Stable: ties keep `summary`'s order (entries, then name).
        order.sort_by_key(|&i| std::cmp::Reverse(key(&summary[i])));
        order
    };
    let rankings = [
        (0..summary.len()).collect::<Vec<usize>>(),
        by(|n| n.spans),
        by(|n| n.largest_allocated_peak),
    ];
    let mut kept = vec![false; summary.len()];
    let mut next = [0usize; 3];
    let mut count = 0;
    while count < limit {
        for (ranking, at) in rankings.iter().zip(next.iter_mut()) {
            while *at < ranking.len() && kept[ranking[*at]] {
                *at += 1;
            }
            if count < limit && *at < ranking.len() {
                kept[ranking[*at]] = true;
                count += 1;
            }
        }
    }
    let left = (summary.len() - limit) as u64;
    let names = summary
        .into_iter()
        .zip(kept)
        .filter_map(|(n, k)| k.then_some(n))
        .collect();
    (names, left)
}

impl PhasesDevice {
    /// `d` with its summary, each list cut at `limit` (`None`: all).
    pub fn new(d: DevicePhases, limit: Option<usize>) -> PhasesDevice {
        let (summary, summary_left_out) = pick(summarize_spans(&d.phases), limit);
        let (annotations, annotations_left_out) = cut(d.annotations, limit);
        let (phases, phases_left_out) = cut(d.phases, limit);
        let mut iterations_left_out = 0;
        let iterations = d.iterations.map(|mut it| {
            let (items, left) = cut(std::mem::take(&mut it.items), limit);
            it.items = items;
            iterations_left_out = left;
            it
        });
        PhasesDevice {
            device: d.device,
            summary,
            summary_left_out,
            annotations,
            annotations_left_out,
            phases,
            phases_left_out,
            iterations,
            iterations_left_out,
            warnings: d.warnings,
            trace_complete: d.trace_complete,
        }
    }
}

/// One snapshot's time structure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhasedSnapshot {
    pub path: String,
    pub devices: Vec<PhasesDevice>,
    /// The loader's warnings: printed in text, not part of the JSON.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl PhasedSnapshot {
    /// The snapshot's devices, each list cut at `limit` (`None`: all).
    pub(crate) fn new(
        path: &Path,
        devices: Vec<DevicePhases>,
        warnings: Vec<String>,
        limit: Option<usize>,
    ) -> PhasedSnapshot {
        PhasedSnapshot {
            path: path.display().to_string(),
            devices: devices
                .into_iter()
                .map(|d| PhasesDevice::new(d, limit))
                .collect(),
            warnings,
        }
    }
}

/// `memgate phases`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhasesDocument {
    pub(crate) schema_version: u32,
    pub(crate) snapshots: Vec<PhasedSnapshot>,
}

impl PhasesDocument {
    /// 2: the per-name `summary` and the cut lists (`*-left-out`).
    pub const SCHEMA_VERSION: u32 = 2;

    pub fn new(snapshots: Vec<PhasedSnapshot>) -> PhasesDocument {
        PhasesDocument {
            schema_version: Self::SCHEMA_VERSION,
            snapshots,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, from: u64, to: Option<u64>, peak: u64) -> PhaseSpan {
        PhaseSpan {
            name: name.into(),
            occurrence: 0,
            from_entry: from,
            to_entry: to,
            closed: true,
            allocated_peak: peak,
            dynamic_peak: peak,
            live_at_start: 0,
            live_at_end: 0,
            allocated_during: 0,
        }
    }

    #[test]
    fn the_summary_counts_spans_entries_and_the_largest_peak_per_name() {
        let spans = [
            span("b", 0, Some(9), 5),
            span("a", 2, Some(2), 7),
            span("b", 10, None, 9),
            span("b", 11, Some(12), 1),
        ];
        let s = summarize_spans(&spans);
        let got: Vec<(&str, u64, u64, u64)> = s
            .iter()
            .map(|n| {
                (
                    n.name.as_str(),
                    n.spans,
                    n.entries,
                    n.largest_allocated_peak,
                )
            })
            .collect();
        assert_eq!(got, [("b", 3, 12, 9), ("a", 1, 1, 7)]);
        let tie = summarize_spans(&[span("z", 0, Some(0), 1), span("y", 0, Some(0), 1)]);
        assert_eq!(tie[0].name, "y");
    }

    fn named(name: &str, spans: u64, entries: u64, peak: u64) -> NameSummary {
        NameSummary {
            name: name.into(),
            spans,
            entries,
            largest_allocated_peak: peak,
        }
    }

    #[test]
    fn a_cut_summary_keeps_the_most_frequent_and_the_heaviest_name_in_entries_order() {
        let summary = vec![
            named("long-a", 1, 90, 10),
            named("long-b", 1, 80, 10),
            named("long-c", 1, 70, 10),
            named("frequent", 50, 50, 10),
            named("heavy", 1, 1, 1 << 30),
        ];
        let (kept, left) = pick(summary.clone(), Some(3));
        let names: Vec<&str> = kept.iter().map(|n| n.name.as_str()).collect();
        assert_eq!((names, left), (vec!["long-a", "frequent", "heavy"], 2));
        let (all, left) = pick(summary.clone(), None);
        assert_eq!((all, left), (summary.clone(), 0));
        let (under, left) = pick(summary.clone(), Some(20));
        assert_eq!((under, left), (summary, 0));
    }

    #[test]
    fn each_list_is_cut_and_says_how_many_it_left_out() {
        assert_eq!(cut(vec![1, 2, 3], Some(2)), (vec![1, 2], 1));
        assert_eq!(cut(vec![1, 2, 3], None), (vec![1, 2, 3], 0));
        assert_eq!(cut(vec![1], Some(20)), (vec![1], 0));
    }
}
