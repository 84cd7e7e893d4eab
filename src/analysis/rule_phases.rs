//! Phases from stack rules (docs/figures.md#phases-from-stack-rules; the semantics are memgate's own), for
//! traces with no annotations, such as Ascend NPU snapshots (which have no
//! `time_us` either): the `[phases]` table of a rules file names each phase
//! by a regex, matched like the custom categories against the function and
//! file names of an allocation's frames.
//!
//! * An `alloc` whose stack matches a phase rule belongs to that phase; the
//!   first rule in file order wins. Other entries (frees, segment events,
//!   allocations matching no rule) never start or end a phase.
//! * A phase span is a maximal run of entries from an alloc of phase P up
//!   to the last entry before the next alloc of a different phase; the last
//!   span runs to the end of the trace (`closed: false`).
//! * Entries before the first matching alloc belong to no phase.
//! * Occurrences are counted per phase name, from 0; the figures of a span
//!   are those of an annotation span (`phases::phase_span`), and positions
//!   are entry indices.

use crate::snapshot::{Action, Device, Snapshot, StackId};

use super::observe::Curves;
use super::phases::{phase_span, PhaseSpan};
use super::rules::RuleSet;
use super::span_index::SpanIndex;

/// A stack's phase not yet looked up.
const UNSET: u32 = u32::MAX;
/// A stack matching no phase rule.
const NONE: u32 = u32::MAX - 1;

/// The phase spans of `device` by the `[phases]` rules of `rules`, with the
/// figures from the device's `curves`.
pub(crate) fn rule_phase_spans(
    snap: &Snapshot,
    device: Device,
    rules: &RuleSet,
    curves: &Curves,
) -> Vec<PhaseSpan> {
    let names: Vec<&str> = rules.phase_names().collect();
    let trace = snap.trace(device);
    // Phase of each stack, looked up once.
    let mut cache = vec![UNSET; snap.stack_count()];
    let mut phase_of = |stack: StackId| -> Option<usize> {
        let slot = &mut cache[stack.index()];
        if *slot == UNSET {
            let frames = super::stacks::rule_frames(snap, stack);
            let phase = rules.phase_of(&frames);
            // A phase index past the cache's range is looked up each time.
            *slot = phase.map_or(NONE, |p| {
                u32::try_from(p).ok().filter(|&p| p < NONE).unwrap_or(UNSET)
            });
            return phase;
        }
        (*slot != NONE).then_some(*slot as usize)
    };
    let index = SpanIndex::new(trace, curves);
    let mut occurrences = vec![0u64; names.len()];
    let mut spans = Vec::new();
    // The open span: (phase, its first entry).
    let mut open: Option<(usize, usize)> = None;
    let mut close = |phase: usize, from: usize, to: usize, closed: bool| {
        let occurrence = occurrences[phase];
        occurrences[phase] += 1;
        let name = names[phase].to_string();
        spans.push(phase_span(&index, name, occurrence, from..to, closed));
    };
    for (i, e) in trace.iter().enumerate() {
        if e.action() != Action::Alloc {
            continue;
        }
        let Some(p) = phase_of(e.stack) else {
            continue;
        };
        match open {
            Some((q, _)) if q == p => {}
            Some((q, from)) => {
                close(q, from, i, true);
                open = Some((p, i));
            }
            None => open = Some((p, i)),
        }
    }
    if let Some((q, from)) = open {
        close(q, from, trace.len(), false);
    }
    spans
}
