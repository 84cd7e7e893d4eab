//! One device's trace replay (SPEC §3): the figures, the entry where each
//! peak is first reached, and per-category running totals (SPEC §4).
//!
//! Two passes over the trace: the first finds the memory that was live
//! before recording (frees of addresses the replay never saw allocated) and
//! which blocks the trace touches; the second replays everything at once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::snapshot::{Action, BlockState, Segment, StackId, TraceEntry};

use super::types::{Figures, PeakEntry};

/// Hasher for allocation addresses (multiples of 512): a splitmix64
/// finalizer, much cheaper than SipHash and well spread in the low bits.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map keyed by allocation address.
pub(crate) type AddrMap<V> = HashMap<u64, V, BuildHasherDefault<AddrHasher>>;

/// Memory live before recording started: freed during the trace
/// (`freed_at`) or still an `active_allocated` block at the end (`None`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreLive {
    pub freed_at: Option<usize>,
    pub size: u64,
    pub stack: StackId,
}

/// A live allocation in the replay: the latest `alloc` at its address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live {
    pub size: u64,
    pub stack: StackId,
    pub index: usize,
}

/// Everything the replay of one device finds.
#[derive(Debug, Clone)]
pub(crate) struct DeviceReplay {
    pub figures: Figures,
    pub peak_entry: PeakEntry,
    /// Whether the allocated peak is the state before the first entry.
    pub allocated_peak_at_start: bool,
    pub complete: bool,
    pub pre: Vec<PreLive>,
    pub cats_at_allocated: Vec<u64>,
    pub cats_at_dynamic: Vec<u64>,
    pub cat_peaks: Vec<u64>,
}

/// Tracks a running value's maximum and the first entry reaching it.
struct Peak {
    value: i128,
    index: Option<usize>,
}

impl Peak {
    fn start(value: i128, trace_len: usize) -> Peak {
        Peak {
            value,
            index: (trace_len > 0).then_some(0),
        }
    }
    /// Whether `v` after entry `i` is a new (strictly higher) peak.
    fn update(&mut self, v: i128, i: usize) -> bool {
        if v > self.value {
            self.value = v;
            self.index = Some(i);
            true
        } else {
            false
        }
    }
}

fn to_u64(v: i128) -> u64 {
    v.clamp(0, u64::MAX as i128) as u64
}

fn to_u64s(v: &[i64]) -> Vec<u64> {
    v.iter().map(|x| (*x).max(0) as u64).collect()
}

/// Replay one device. `cat` gives the category index of a stack.
pub(crate) fn replay(
    trace: &[TraceEntry],
    segments: &[&Segment],
    ncat: usize,
    cat: &mut dyn FnMut(StackId) -> usize,
) -> DeviceReplay {
    // ---- pass 1: pre-recording frees, touched blocks, counts
    let mut blocks: AddrMap<bool> = AddrMap::default();
    for s in segments {
        for b in &s.blocks {
            if b.state == BlockState::ActiveAllocated {
                blocks.insert(b.address, false);
            }
        }
    }
    let mut live: AddrMap<()> = AddrMap::default();
    let mut pre = Vec::new();
    let (mut allocs, mut ooms, mut reserved_delta) = (0u64, 0u64, 0i128);
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            Action::Alloc => {
                allocs += 1;
                live.insert(e.addr, ());
            }
            Action::FreeCompleted => {
                if live.remove(&e.addr).is_none() {
                    pre.push(PreLive {
                        freed_at: Some(i),
                        size: e.size,
                        stack: e.stack,
                    });
                }
            }
            Action::FreeRequested => {}
            Action::SegmentAlloc | Action::SegmentMap => reserved_delta += i128::from(e.size),
            Action::SegmentFree | Action::SegmentUnmap => reserved_delta -= i128::from(e.size),
            Action::Oom => ooms += 1,
            _ => continue,
        }
        if matches!(
            e.action,
            Action::Alloc | Action::FreeCompleted | Action::FreeRequested
        ) {
            if let Some(t) = blocks.get_mut(&e.addr) {
                *t = true;
            }
        }
    }
    let complete = pre.is_empty();
    let mut static_memory = 0u64;
    for s in segments {
        for b in &s.blocks {
            if b.state != BlockState::ActiveAllocated {
                continue;
            }
            if blocks.get(&b.address) == Some(&false) {
                static_memory += b.size;
            }
            if !live.contains_key(&b.address) {
                pre.push(PreLive {
                    freed_at: None,
                    size: b.requested_size,
                    stack: b.stack,
                });
            }
        }
    }
    drop(live);
    drop(blocks);

    // ---- pass 2: dynamic (Mosaic), allocated (MemoryViz), reserved
    let n = trace.len();
    let mut alloc_cats = vec![0i64; ncat];
    for p in &pre {
        alloc_cats[cat(p.stack)] += p.size as i64;
    }
    let initial: i128 = pre.iter().map(|p| i128::from(p.size)).sum();
    let end_reserved: i128 = segments.iter().map(|s| i128::from(s.total_size)).sum();
    let mut reserved = end_reserved - reserved_delta;
    let (mut dynamic, mut allocated) = (0i128, initial);
    let mut dyn_peak = Peak::start(0, n);
    let mut alloc_peak = Peak::start(initial, n);
    let mut res_peak = Peak::start(reserved, n);
    let mut dyn_cats = vec![0i64; ncat];
    let mut cats_at_dynamic = vec![0i64; ncat];
    let mut cats_at_allocated = alloc_cats.clone();
    let mut cat_peaks = alloc_cats.clone();
    let mut map: AddrMap<(u64, u32)> = AddrMap::default();
    for (i, e) in trace.iter().enumerate() {
        let changed = match e.action {
            Action::Alloc => {
                let c = cat(e.stack);
                map.insert(e.addr, (e.size, c as u32));
                dynamic += i128::from(e.size);
                allocated += i128::from(e.size);
                dyn_cats[c] += e.size as i64;
                alloc_cats[c] += e.size as i64;
                Some(c)
            }
            Action::FreeCompleted => match map.remove(&e.addr) {
                Some((size, c)) => {
                    let c = c as usize;
                    dynamic -= i128::from(e.size);
                    allocated -= i128::from(size);
                    dyn_cats[c] -= e.size as i64;
                    alloc_cats[c] -= size as i64;
                    Some(c)
                }
                None => {
                    let c = cat(e.stack);
                    allocated -= i128::from(e.size);
                    alloc_cats[c] -= e.size as i64;
                    Some(c)
                }
            },
            Action::SegmentAlloc | Action::SegmentMap => {
                reserved += i128::from(e.size);
                None
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                reserved -= i128::from(e.size);
                None
            }
            _ => None,
        };
        if let Some(c) = changed {
            cat_peaks[c] = cat_peaks[c].max(alloc_cats[c]);
            if dyn_peak.update(dynamic, i) {
                cats_at_dynamic.copy_from_slice(&dyn_cats);
            }
            if alloc_peak.update(allocated, i) {
                cats_at_allocated.copy_from_slice(&alloc_cats);
            }
        } else {
            res_peak.update(reserved, i);
        }
    }
    let allocated_peak_at_start = alloc_peak.value == initial && n > 0;
    let figures = Figures {
        dynamic_peak: to_u64(dyn_peak.value),
        static_memory,
        overall_peak: to_u64(dyn_peak.value) + static_memory,
        allocated_peak: to_u64(alloc_peak.value),
        reserved_peak: to_u64(res_peak.value),
        oom_events: ooms,
        alloc_events: allocs,
        trace_entries: n as u64,
    };
    DeviceReplay {
        figures,
        peak_entry: PeakEntry {
            dynamic_peak: dyn_peak.index.map(|i| i as u64),
            allocated_peak: alloc_peak.index.map(|i| i as u64),
            reserved_peak: res_peak.index.map(|i| i as u64),
        },
        allocated_peak_at_start,
        complete,
        pre,
        cats_at_allocated: to_u64s(&cats_at_allocated),
        cats_at_dynamic: to_u64s(&cats_at_dynamic),
        cat_peaks: to_u64s(&cat_peaks),
    }
}

/// The live allocations after entry `upto` (none when `None`), in the same
/// replay semantics as [`replay`]: an address maps to its latest `alloc`.
pub(crate) fn live_after(trace: &[TraceEntry], upto: Option<usize>) -> AddrMap<Live> {
    let mut map: AddrMap<Live> = AddrMap::default();
    let Some(last) = upto else { return map };
    for (i, e) in trace.iter().enumerate().take(last + 1) {
        match e.action {
            Action::Alloc => {
                map.insert(
                    e.addr,
                    Live {
                        size: e.size,
                        stack: e.stack,
                        index: i,
                    },
                );
            }
            Action::FreeCompleted => {
                map.remove(&e.addr);
            }
            _ => {}
        }
    }
    map
}
