//! The cached memory at an OOM (docs/figures.md#oom-cause): the largest
//! free block, found by undoing the trace from the dump's segments and
//! blocks back to each OOM, and the cause the OOM's figures tell.
//!
//! The forward replay knows how many bytes are live, not where: the dump
//! says where every block lies at its end, and each trace entry after an
//! OOM is undone (an `alloc` frees its address again, a `free_completed`
//! occupies it, a segment growth is taken back, a segment release is put
//! back), the way MemoryViz draws its allocator state history.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::snapshot::{Action, BlockState, Segment, Trace, TraceEntry};

/// Why an OOM happened, as its figures tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum OomCause {
    /// The free cached bytes were fewer than the request (and the device
    /// reported fewer free too): the memory was in use.
    Capacity,
    /// The free cached bytes covered the request but no free block did.
    Fragmentation,
    /// A free block, or the device's own free memory, would have covered
    /// the request: the snapshot does not say why it failed (another pool
    /// or stream, rounding, memory outside the allocator).
    Unexplained,
}

impl OomCause {
    /// The rule of docs/figures.md#oom-cause.
    pub fn of(requested: u64, cached_free: u64, largest_free: u64, device_free: u64) -> OomCause {
        if largest_free >= requested || device_free >= requested {
            OomCause::Unexplained
        } else if cached_free >= requested {
            OomCause::Fragmentation
        } else {
            OomCause::Capacity
        }
    }

    pub fn id(self) -> &'static str {
        self.into()
    }
}

/// Address ranges, `start → end`, kept apart from each other.
type Ranges = BTreeMap<u64, u64>;

/// The largest free block at each entry of `at` (ascending indices into
/// `trace`): the longest stretch of the reserved ranges (touching ranges
/// merged) that no allocation covers, in the state after that entry.
pub(crate) fn largest_free_blocks(
    trace: Trace<'_>,
    segments: &[&Segment],
    at: &[usize],
) -> Vec<u64> {
    let (mut reserved, mut occupied) = at_dump(segments);
    let mut out = vec![0; at.len()];
    let mut next = trace.len();
    for (k, &i) in at.iter().enumerate().rev() {
        for e in trace.slice(i + 1..next).iter().rev() {
            undo(&e, &mut reserved, &mut occupied);
        }
        next = i + 1;
        out[k] = largest_gap(&reserved, &occupied);
    }
    out
}

/// The largest free block of the dump itself (for a snapshot without
/// history, the only moment it shows).
pub(crate) fn largest_free_block_at_dump(segments: &[&Segment]) -> u64 {
    let (reserved, occupied) = at_dump(segments);
    largest_gap(&reserved, &occupied)
}

/// The reserved ranges (touching ones merged) and the occupied blocks of
/// the dump.
fn at_dump(segments: &[&Segment]) -> (Ranges, Ranges) {
    let mut reserved = Ranges::new();
    let mut occupied = Ranges::new();
    for s in segments {
        add(
            &mut reserved,
            s.address,
            s.address.saturating_add(s.total_size),
        );
        for b in &s.blocks {
            if matches!(
                b.state,
                BlockState::ActiveAllocated | BlockState::ActivePendingFree
            ) {
                occupied.insert(b.address, b.address.saturating_add(b.size));
            }
        }
    }
    (reserved, occupied)
}

/// Takes entry `e` back.
fn undo(e: &TraceEntry, reserved: &mut Ranges, occupied: &mut Ranges) {
    let end = e.addr.saturating_add(e.size);
    match e.action() {
        Action::Alloc => {
            occupied.remove(&e.addr);
        }
        Action::FreeCompleted => {
            occupied.insert(e.addr, end);
        }
        Action::SegmentAlloc | Action::SegmentMap => remove(reserved, e.addr, end),
        Action::SegmentFree | Action::SegmentUnmap => add(reserved, e.addr, end),
        _ => {}
    }
}

/// Adds `[a, b)`, merged with every range it overlaps or touches.
fn add(set: &mut Ranges, mut a: u64, mut b: u64) {
    if a >= b {
        return;
    }
    if let Some((&s, &e)) = set.range(..=a).next_back() {
        if e >= a {
            a = s;
            b = b.max(e);
            set.remove(&s);
        }
    }
    while let Some((&s, &e)) = set.range(a..=b).next() {
        b = b.max(e);
        set.remove(&s);
    }
    set.insert(a, b);
}

/// Takes `[a, b)` out of the ranges, splitting those it cuts.
fn remove(set: &mut Ranges, a: u64, b: u64) {
    if a >= b {
        return;
    }
    if let Some((&s, &e)) = set.range(..a).next_back() {
        if e > a {
            set.insert(s, a);
            if e > b {
                set.insert(b, e);
            }
        }
    }
    let inside: Vec<(u64, u64)> = set.range(a..b).map(|(&s, &e)| (s, e)).collect();
    for (s, e) in inside {
        set.remove(&s);
        if e > b {
            set.insert(b, e);
        }
    }
}

/// The longest stretch of `reserved` outside every `occupied` range.
fn largest_gap(reserved: &Ranges, occupied: &Ranges) -> u64 {
    let mut best = 0;
    for (&a, &b) in reserved {
        let mut cursor = a;
        // An allocation that starts before the range may reach into it.
        if let Some((_, &e)) = occupied.range(..a).next_back() {
            cursor = cursor.max(e.min(b));
        }
        for (&s, &e) in occupied.range(a..b) {
            best = best.max(s.saturating_sub(cursor));
            cursor = cursor.max(e.min(b));
        }
        best = best.max(b - cursor);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(v: &[(u64, u64)]) -> Ranges {
        v.iter().copied().collect()
    }

    #[test]
    fn adding_merges_touching_and_overlapping_ranges() {
        let mut r = ranges(&[(0, 10), (20, 30)]);
        add(&mut r, 10, 20);
        assert_eq!(r, ranges(&[(0, 30)]));
        add(&mut r, 40, 50);
        add(&mut r, 45, 60);
        assert_eq!(r, ranges(&[(0, 30), (40, 60)]));
    }

    #[test]
    fn removing_splits_the_ranges_it_cuts() {
        let mut r = ranges(&[(0, 30), (40, 60)]);
        remove(&mut r, 10, 45);
        assert_eq!(r, ranges(&[(0, 10), (45, 60)]));
        remove(&mut r, 50, 55);
        assert_eq!(r, ranges(&[(0, 10), (45, 50), (55, 60)]));
        remove(&mut r, 0, 100);
        assert!(r.is_empty());
    }

    #[test]
    fn the_largest_gap_is_the_longest_stretch_no_allocation_covers() {
        let reserved = ranges(&[(0, 100), (200, 230)]);
        let occupied = ranges(&[(10, 20), (50, 95), (190, 205)]);
        // 20..50 in the first range; 205..230 in the second.
        assert_eq!(largest_gap(&reserved, &occupied), 30);
        assert_eq!(largest_gap(&reserved, &Ranges::new()), 100);
    }

    #[test]
    fn the_cause_tells_capacity_from_fragmentation() {
        assert_eq!(OomCause::of(100, 50, 10, 0), OomCause::Capacity);
        assert_eq!(OomCause::of(100, 150, 60, 0), OomCause::Fragmentation);
        assert_eq!(OomCause::of(100, 150, 100, 0), OomCause::Unexplained);
        assert_eq!(OomCause::of(100, 0, 0, 200), OomCause::Unexplained);
    }
}
