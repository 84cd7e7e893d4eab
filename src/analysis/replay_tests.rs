//! The one-pass replay against a plain model of docs/figures.md#figures, #categories: the state after
//! every entry computed from scratch, peaks taken as the first maximum, the
//! live set at each entry re-walked from the start.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::snapshot::{Action, Block, BlockState, Entries, Segment, StackId, TraceEntry, NO_TIME};

use super::allocator::Origin;
use super::replay::{replay, Extras};
use super::timeline::TimelinePoint;

const NCAT: usize = 3;

fn cat(stack: StackId) -> usize {
    stack.index() % NCAT
}

/// The state after some prefix of the trace, absolute.
#[derive(Clone)]
struct State {
    dynamic: i128,
    allocated: i128,
    reserved: i128,
    cats: Vec<i64>,
    dyn_cats: Vec<i64>,
    /// address -> alloc entry index
    live: BTreeMap<u64, usize>,
}

struct Model {
    /// `states[0]` is before the first entry, `states[i + 1]` after entry `i`.
    states: Vec<State>,
    static_memory: u64,
    pre_frees: usize,
    /// (freed at, size): what was live before recording.
    pre: Vec<(Option<usize>, u64)>,
}

#[expect(
    clippy::cast_possible_wrap,
    reason = "the independent test model: proptest generates sizes, counts and indices far below every type's limit"
)]
fn model(trace: &[TraceEntry], segments: &[&Segment]) -> Model {
    // What was live before recording needs the whole trace first.
    let mut live = BTreeMap::new();
    let mut pre = Vec::new();
    let mut pre_cats = vec![0i64; NCAT];
    for (i, e) in trace.iter().enumerate() {
        match e.action() {
            Action::Alloc => {
                live.insert(e.addr, i);
            }
            Action::FreeCompleted if live.remove(&e.addr).is_none() => {
                pre.push((Some(i), e.size));
                pre_cats[cat(e.stack)] += e.size as i64;
            }
            _ => {}
        }
    }
    let pre_frees = pre.len();
    let blocks = || {
        segments
            .iter()
            .flat_map(|s| &s.blocks)
            .filter(|b| b.state == BlockState::ActiveAllocated)
    };
    let mut static_memory = 0;
    for b in blocks() {
        if !live.contains_key(&b.address) {
            pre.push((None, b.requested_size));
            pre_cats[cat(b.stack)] += b.requested_size as i64;
        }
        if !trace.iter().any(|e| {
            e.addr == b.address
                && matches!(
                    e.action(),
                    Action::Alloc | Action::FreeCompleted | Action::FreeRequested
                )
        }) {
            static_memory += b.size;
        }
    }
    let growth: i128 = trace
        .iter()
        .map(|e| match e.action() {
            Action::SegmentAlloc | Action::SegmentMap => i128::from(e.size),
            Action::SegmentFree | Action::SegmentUnmap => -i128::from(e.size),
            _ => 0,
        })
        .sum();
    let end_reserved: i128 = segments.iter().map(|s| i128::from(s.total_size)).sum();
    let mut s = State {
        dynamic: 0,
        allocated: pre.iter().map(|p| i128::from(p.1)).sum(),
        reserved: end_reserved - growth,
        cats: pre_cats,
        dyn_cats: vec![0; NCAT],
        live: BTreeMap::new(),
    };
    let mut states = vec![s.clone()];
    for (i, e) in trace.iter().enumerate() {
        let size = e.size as i64;
        match e.action() {
            Action::Alloc => {
                s.live.insert(e.addr, i);
                s.dynamic += i128::from(e.size);
                s.allocated += i128::from(e.size);
                s.cats[cat(e.stack)] += size;
                s.dyn_cats[cat(e.stack)] += size;
            }
            Action::FreeCompleted => match s.live.remove(&e.addr) {
                Some(a) => {
                    let a = &trace[a];
                    s.dynamic -= i128::from(e.size);
                    s.allocated -= i128::from(a.size);
                    s.cats[cat(a.stack)] -= a.size as i64;
                    s.dyn_cats[cat(a.stack)] -= size;
                }
                None => {
                    s.allocated -= i128::from(e.size);
                    s.cats[cat(e.stack)] -= size;
                }
            },
            Action::SegmentAlloc | Action::SegmentMap => s.reserved += i128::from(e.size),
            Action::SegmentFree | Action::SegmentUnmap => s.reserved -= i128::from(e.size),
            _ => {}
        }
        states.push(s.clone());
    }
    Model {
        states,
        static_memory,
        pre_frees,
        pre,
    }
}

/// The first entry after which `value` reaches its maximum, when that
/// maximum is above the start; entry 0 otherwise (as the replay reports).
fn first_max(states: &[State], value: impl Fn(&State) -> i128) -> (i128, Option<usize>) {
    let start = value(&states[0]);
    let max = states.iter().map(&value).max().unwrap_or(start);
    let at = if max > start {
        states[1..].iter().position(|s| value(s) == max)
    } else {
        (states.len() > 1).then_some(0)
    };
    (max, at)
}

#[expect(
    clippy::cast_sign_loss,
    reason = "the independent test model: proptest generates sizes, counts and indices far below every type's limit"
)]
fn clamp(v: &[i64]) -> Vec<u64> {
    v.iter().map(|x| (*x).max(0) as u64).collect()
}

fn entry(action: u8, slot: u64, size: u64, stack: u32, time: Option<i64>) -> TraceEntry {
    let action = match action {
        0..=3 => Action::Alloc,
        4..=6 => Action::FreeCompleted,
        7 => Action::FreeRequested,
        8 => Action::SegmentAlloc,
        9 => Action::SegmentFree,
        10 => Action::Oom,
        _ => Action::Snapshot,
    };
    TraceEntry {
        addr: slot * 512,
        size,
        context: crate::snapshot::NO_CONTEXT,
        pool: crate::snapshot::NO_POOL,
        meta: crate::snapshot::NO_META,
        time_us: time.unwrap_or(NO_TIME),
        stack: StackId::from_raw(stack),
        action: action.into(),
    }
}

fn segment(blocks: Vec<(u64, u64, bool, u32)>) -> Segment {
    Segment {
        device: crate::vocab::Device::new(0),
        address: 0,
        total_size: blocks.iter().map(|b| b.1).sum(),
        allocated_size: 0,
        active_size: 0,
        requested_size: None,
        stream: 0,
        segment_type: "large".into(),
        pool_id: None,
        is_expandable: false,
        stack: StackId::default(),
        blocks: blocks
            .into_iter()
            .map(|(slot, size, active, stack)| Block {
                address: slot * 512,
                size,
                requested_size: size.saturating_sub(3),
                state: if active {
                    BlockState::ActiveAllocated
                } else {
                    BlockState::Inactive
                },
                stack: StackId::from_raw(stack),
            })
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    #[expect(
        clippy::cast_possible_truncation, clippy::cast_possible_wrap, clippy::cast_sign_loss,
        reason = "the independent test model: proptest generates sizes, counts and indices far below every type's limit"
    )]
    fn the_one_pass_replay_agrees_with_the_state_after_every_entry(
        raw in prop::collection::vec(
            (0u8..12, 0u64..8, 1u64..5000, 0u32..7, prop::option::of(0i64..100)),
            0..60,
        ),
        blocks in prop::collection::vec((0u64..12, 1u64..5000, any::<bool>(), 0u32..7), 0..6),
        points in 1usize..9,
    ) {
        let trace: Vec<TraceEntry> =
            raw.into_iter().map(|(a, s, z, k, t)| entry(a, s, z, k, t)).collect();
        let seg = segment(blocks);
        let segments = [&seg];
        let packed = Entries::from(&trace[..]);
        let r = replay(packed.view(), &segments, NCAT, &mut |o: Origin<'_>| cat(o.stack()), Extras { timeline_points: Some(points), curves: false, window: None });
        let m = model(&trace, &segments);
        let f = &r.figures;

        let (dyn_max, dyn_at) = first_max(&m.states, |s| s.dynamic);
        let (alloc_max, alloc_at) = first_max(&m.states, |s| s.allocated);
        let (res_max, res_at) = first_max(&m.states, |s| s.reserved);
        prop_assert_eq!(f.dynamic_peak, dyn_max.max(0) as u64);
        prop_assert_eq!(f.allocated_peak, alloc_max.max(0) as u64);
        prop_assert_eq!(f.reserved_peak, res_max.max(0) as u64);
        prop_assert_eq!(f.static_memory, m.static_memory);
        prop_assert_eq!(f.overall_peak, f.dynamic_peak + m.static_memory);
        let count = |a: Action| trace.iter().filter(|e| e.action() == a).count() as u64;
        prop_assert_eq!(f.alloc_events, count(Action::Alloc));
        prop_assert_eq!(f.oom_events, count(Action::Oom));
        prop_assert_eq!(f.trace_entries, trace.len() as u64);
        prop_assert_eq!(r.peak_entry.dynamic_peak, dyn_at.map(|i| i as u64));
        prop_assert_eq!(r.peak_entry.allocated_peak, alloc_at.map(|i| i as u64));
        prop_assert_eq!(r.peak_entry.reserved_peak, res_at.map(|i| i as u64));
        prop_assert_eq!(r.complete, m.pre_frees == 0);
        let mut pre: Vec<(Option<usize>, u64)> = r.pre.iter().map(|p| (p.freed_at, p.size)).collect();
        let mut want_pre = m.pre.clone();
        pre.sort_unstable();
        want_pre.sort_unstable();
        prop_assert_eq!(pre, want_pre);

        let after = |i: Option<usize>| &m.states[i.map_or(0, |i| i + 1)];
        let at_alloc = if r.allocated_peak_at_start { None } else { alloc_at };
        prop_assert_eq!(&r.cats_at_allocated, &clamp(&after(at_alloc).cats));
        prop_assert_eq!(&r.cats_at_dynamic, &clamp(&after(dyn_at).dyn_cats));
        for c in 0..NCAT {
            let own = m.states.iter().map(|s| s.cats[c]).max().unwrap_or(0);
            prop_assert_eq!(r.cat_peaks[c], own.max(0) as u64);
        }

        // The live set after every entry, recovered from the lifetimes.
        for upto in std::iter::once(None).chain((0..trace.len()).map(Some)) {
            let mut got: Vec<usize> = r.live_after(packed.view(), upto).map(|l| l.index).collect();
            got.sort_unstable();
            let want: Vec<usize> = after(upto).live.values().copied().collect::<Vec<_>>();
            let mut want = if upto.is_none() { Vec::new() } else { want };
            want.sort_unstable();
            prop_assert_eq!(got, want, "after {:?}", upto);
        }

        // The same live sets from one sweep over every moment at once.
        let moments: Vec<i64> = (-1..trace.len() as i64).collect();
        let mut swept: Vec<Vec<usize>> = vec![Vec::new(); moments.len()];
        r.live_at_each(packed.view(), &moments, |k, l| swept[k].push(l.index));
        for (k, &m) in moments.iter().enumerate() {
            let upto = usize::try_from(m).ok();
            let mut want: Vec<usize> = r.live_after(packed.view(), upto).map(|l| l.index).collect();
            want.sort_unstable();
            swept[k].sort_unstable();
            prop_assert_eq!(&swept[k], &want, "swept after {:?}", upto);
        }

        // The timeline: per bucket, the first entry with the bucket's highest
        // total and the first with its lowest, and the first entry reaching
        // each peak above the start.
        let bucket = trace.len().div_ceil(points).max(1);
        let mut entries: Vec<usize> = Vec::new();
        for (b, chunk) in m.states[1..].chunks(bucket).enumerate() {
            let best = chunk.iter().map(|s| s.allocated).max().unwrap();
            let low = chunk.iter().map(|s| s.allocated).min().unwrap();
            entries.push(b * bucket + chunk.iter().position(|s| s.allocated == best).unwrap());
            entries.push(b * bucket + chunk.iter().position(|s| s.allocated == low).unwrap());
        }
        let curves: [fn(&State) -> i128; 3] = [|s| s.allocated, |s| s.dynamic, |s| s.reserved];
        for curve in curves {
            let top = m.states[1..].iter().map(curve).max();
            if let Some(top) = top.filter(|&t| t > curve(&m.states[0])) {
                entries.push(m.states[1..].iter().position(|s| curve(s) == top).unwrap());
            }
        }
        entries.sort_unstable();
        entries.dedup();
        let point = |entry: Option<usize>, s: &State| TimelinePoint {
            entry: entry.map(|i| i as u64),
            time_us: entry.and_then(|i| trace[i].time()),
            bytes: clamp(&s.cats),
            reserved: s.reserved.max(0) as u64,
        };
        let mut want = vec![point(None, &m.states[0])];
        want.extend(entries.iter().map(|&i| point(Some(i), &m.states[i + 1])));
        prop_assert_eq!(r.timeline.as_ref(), Some(&want));

        // The finer level: per bucket of `bucket / FINE` entries (none when
        // the samples' buckets are single entries), the first entry with
        // the lowest total and the first with the highest, in entry order.
        let mut fine = Vec::new();
        if bucket > 1 {
            let small = bucket.div_ceil(crate::analysis::timeline::FINE);
            for (b, chunk) in m.states[1..].chunks(small).enumerate() {
                let at = |v: i128| b * small + chunk.iter().position(|s| s.allocated == v).unwrap();
                let lo = at(chunk.iter().map(|s| s.allocated).min().unwrap());
                let hi = at(chunk.iter().map(|s| s.allocated).max().unwrap());
                let mut both = vec![lo, hi];
                both.sort_unstable();
                both.dedup();
                fine.extend(both.into_iter().map(|i| crate::analysis::FinePoint {
                    entry: i as u64,
                    time_us: trace[i].time(),
                    allocated: m.states[i + 1].allocated.max(0) as u64,
                }));
            }
        }
        prop_assert_eq!(&r.timeline_fine, &fine);
    }
}

#[test]
fn time_going_backwards_is_counted_between_timed_entries_only() {
    let times = [Some(5), None, Some(3), Some(3), Some(9), None, Some(1)];
    let trace: Vec<TraceEntry> = times.iter().map(|t| entry(11, 0, 1, 0, *t)).collect();
    let r = replay(
        Entries::from(&trace[..]).view(),
        &[],
        NCAT,
        &mut |o: Origin<'_>| cat(o.stack()),
        Extras::default(),
    );
    assert_eq!(r.time_backwards, 2);
    assert!(r.timeline.is_none());
}
