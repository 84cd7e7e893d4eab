//! One device's trace replay (docs/figures.md#figures, #categories) in a single pass: the figures, the
//! entry where each peak is first reached, per-category totals, each
//! allocation's lifetime (so the live set at any entry can be recovered
//! afterwards) and, when asked, the category timeline. The alloc/free
//! bookkeeping exists only here.
//!
//! The memory live before recording (frees of addresses the replay never saw
//! allocated, blocks still allocated at the end that no alloc explains) is
//! only known once the trace is read. It adds the same constant to the
//! allocated curve and to each category's curve at every entry, so the pass
//! follows those curves relative to the start and adds the constants at the
//! end; a constant moves no argmax. The reserved curve likewise starts at
//! the end's total minus the trace's net segment growth.

use crate::snapshot::{Action, BlockState, Segment, StackId, TraceEntry};

use super::addr::AddrMap;
use super::timeline::{Pin, Sampler, TimelinePoint};
use super::types::{Figures, PeakEntry};

/// Memory live before recording started: freed during the trace
/// (`freed_at`) or still an `active_allocated` block at the end (`None`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreLive {
    pub(crate) freed_at: Option<usize>,
    pub(crate) size: u64,
    pub(crate) stack: StackId,
}

/// A live allocation: the latest `alloc` at its address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live {
    pub(crate) size: u64,
    pub(crate) stack: StackId,
    pub(crate) index: usize,
}

/// Entries from an `alloc` up to the one that ended it: the `free_completed`
/// of its address, or a later `alloc` at the same address that replaced it.
/// Indices are `u32`: a trace of 2³² entries would need over 200 GiB of
/// `TraceEntry` values, far past what the loader accepts.
#[derive(Debug, Clone, Copy)]
struct Lifetime {
    alloc: u32,
    /// `OPEN`: still live after the last entry.
    end: u32,
}

const OPEN: u32 = u32::MAX;

/// An allocation the pass holds open at an address.
#[derive(Debug, Clone, Copy)]
struct Open {
    size: u64,
    category: u32,
    lifetime: u32,
}

/// What the replay asks the group (category) of: an allocation of the
/// trace, which a grouping may classify by its entry (annotation, compile
/// context) or by its stack, or memory live before recording (a free of an
/// address the trace never allocated, or a block still allocated at the end
/// that no alloc explains), known only by a stack. The same piece of memory
/// live before recording is asked about at its free and again at the end,
/// so a grouping must answer both alike.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin<'a> {
    Alloc(usize, &'a TraceEntry),
    BeforeTrace(StackId),
}

impl Origin<'_> {
    /// The call stack that made (or freed) the memory.
    pub(crate) fn stack(self) -> StackId {
        match self {
            Origin::Alloc(_, e) => e.stack,
            Origin::BeforeTrace(s) => s,
        }
    }
}

/// Everything the replay of one device finds.
#[derive(Debug, Clone)]
pub(crate) struct DeviceReplay {
    pub(crate) figures: Figures,
    pub(crate) peak_entry: PeakEntry,
    /// Whether the allocated peak is the state before the first entry.
    pub(crate) allocated_peak_at_start: bool,
    /// Whether the reserved peak is the state before the first entry.
    pub(crate) reserved_peak_at_start: bool,
    pub(crate) complete: bool,
    pub(crate) pre: Vec<PreLive>,
    pub(crate) cats_at_allocated: Vec<u64>,
    pub(crate) cats_at_dynamic: Vec<u64>,
    pub(crate) cat_peaks: Vec<u64>,
    /// How many times `time_us` goes down from one timed entry to the next.
    pub(crate) time_backwards: usize,
    /// The downsampled category timeline, when the replay was asked for one.
    pub(crate) timeline: Option<Vec<TimelinePoint>>,
    /// The state after every entry, when the replay was asked for it.
    pub(crate) curves: Option<Curves>,
    /// Every `oom` entry (inside the window, when there is one) and the
    /// memory at it (for the OOM details).
    pub(crate) ooms: Vec<OomMoment>,
    /// The memory at the window's edges, when the replay had a window.
    pub(crate) window: Option<WindowEdges>,
    lifetimes: Vec<Lifetime>,
}

/// The allocated and reserved bytes at one `oom` entry (`index`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OomMoment {
    pub(crate) index: usize,
    pub(crate) allocated: u64,
    pub(crate) reserved: u64,
}

impl DeviceReplay {
    /// Every allocation live after each of `moments` (entry indices in
    /// ascending order, `-1` before the first entry), in one sweep over the
    /// lifetimes: `f(k, live)` for each allocation live at `moments[k]`.
    /// Costs one pass plus the live sets' sizes, where asking
    /// [`DeviceReplay::live_after`] per moment would walk the lifetimes
    /// once each.
    pub(crate) fn live_at_each(
        &self,
        trace: &[TraceEntry],
        moments: &[i64],
        mut f: impl FnMut(usize, Live),
    ) {
        debug_assert!(moments.is_sorted());
        for l in &self.lifetimes {
            let alloc = i64::from(l.alloc);
            let first = moments.partition_point(|&m| m < alloc);
            let end = i64::from(l.end);
            let e = &trace[l.alloc as usize];
            for (k, _) in moments[first..]
                .iter()
                .enumerate()
                .take_while(|(_, &m)| m < end)
            {
                f(
                    first + k,
                    Live {
                        size: e.size,
                        stack: e.stack,
                        index: l.alloc as usize,
                    },
                );
            }
        }
    }

    /// The allocations live after entry `upto` (none when `None`): each
    /// address holds its latest `alloc` until a `free_completed` removes it.
    #[expect(
        clippy::cast_possible_wrap,
        reason = "issue 20 item 8: cast audit pending in this module"
    )]
    pub(crate) fn live_after<'a>(
        &'a self,
        trace: &'a [TraceEntry],
        upto: Option<usize>,
    ) -> impl Iterator<Item = Live> + 'a {
        let upto = upto.map_or(-1, |u| u as i64);
        self.lifetimes
            .iter()
            .take_while(move |l| i64::from(l.alloc) <= upto)
            .filter(move |l| i64::from(l.end) > upto)
            .map(move |l| {
                let e = &trace[l.alloc as usize];
                Live {
                    size: e.size,
                    stack: e.stack,
                    index: l.alloc as usize,
                }
            })
    }
}

/// What a replay produces besides the figures, on request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extras {
    /// The category timeline at about this many samples.
    pub(crate) timeline_points: Option<usize>,
    /// The allocated and dynamic bytes after every entry ([`Curves`]).
    pub(crate) curves: bool,
    /// Only entries `from..=to` count: the peaks are maxima over the
    /// states after them (the state before `from` is carried in), and the
    /// counts count them.
    pub(crate) window: Option<(usize, usize)>,
}

/// The memory at a window's edges.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WindowEdges {
    /// Dynamic bytes before the window's first entry.
    pub(crate) dynamic_at_from: u64,
    pub(crate) dynamic_at_to: u64,
    pub(crate) allocated_at_to: u64,
}

/// The allocated (MemoryViz) and dynamic (Mosaic) bytes after each entry:
/// 16 bytes per entry, kept only for the time-structure views (phases,
/// iterations), which take maxima over spans of entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Curves {
    /// Allocated bytes before the first entry (live before recording).
    pub(crate) allocated_start: i64,
    pub(crate) allocated: Vec<i64>,
    pub(crate) dynamic: Vec<i64>,
}

impl Curves {
    /// Allocated bytes once the first `p` entries are applied.
    pub(crate) fn allocated_after(&self, p: usize) -> i64 {
        p.checked_sub(1)
            .map_or(self.allocated_start, |i| self.allocated[i])
    }

    /// Dynamic bytes once the first `p` entries are applied.
    pub(crate) fn dynamic_after(&self, p: usize) -> i64 {
        p.checked_sub(1).map_or(0, |i| self.dynamic[i])
    }
}

/// Tracks a running value's maximum and the first entry reaching it.
struct Peak {
    value: i128,
    index: Option<usize>,
}

impl Peak {
    fn start(trace_len: usize) -> Peak {
        Peak {
            value: 0,
            index: (trace_len > 0).then_some(0),
        }
    }
    /// `v` after entry `i`, whatever came before (a window's first entry).
    fn set(&mut self, v: i128, i: usize) {
        self.value = v;
        self.index = Some(i);
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

#[expect(
    clippy::cast_possible_truncation,
    reason = "issue 20 item 8: cast audit pending in this module"
)]
fn clamp_i64(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "issue 20 item 8: cast audit pending in this module"
)]
fn to_u64(v: i128) -> u64 {
    v.clamp(0, u64::MAX as i128) as u64
}

/// `base + relative`, per category, clamped at zero.
#[expect(
    clippy::cast_sign_loss,
    reason = "issue 20 item 8: cast audit pending in this module"
)]
fn shifted(base: &[i64], relative: &[i64]) -> Vec<u64> {
    base.iter()
        .zip(relative)
        .map(|(b, r)| (b + r).max(0) as u64)
        .collect()
}

/// Replay one device. `cat` gives the category (group) index, below
/// `ncat`, of an allocation or of memory live before recording;
/// `extras` asks for the category timeline and the per-entry curves.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "issue 20 item 8: cast audit pending in this module"
)]
pub(crate) fn replay(
    trace: &[TraceEntry],
    segments: &[&Segment],
    ncat: usize,
    cat: &mut dyn FnMut(Origin<'_>) -> usize,
    extras: Extras,
) -> DeviceReplay {
    assert!(trace.len() < OPEN as usize, "trace too long to replay");
    let n = trace.len();
    // Blocks allocated at the end, and whether any entry touches them.
    let mut touched: AddrMap<bool> = AddrMap::default();
    for s in segments {
        for b in &s.blocks {
            if b.state == BlockState::ActiveAllocated {
                touched.insert(b.address, false);
            }
        }
    }
    let mut touch = |addr: u64| {
        if let Some(t) = touched.get_mut(&addr) {
            *t = true;
        }
    };
    let mut open: AddrMap<Open> = AddrMap::default();
    let mut lifetimes: Vec<Lifetime> = Vec::new();
    let mut pre = Vec::new();
    let (mut allocs, mut ooms) = (0u64, 0u64);
    // (entry, allocated, reserved) at each OOM, relative to the start.
    let mut oom_at: Vec<(usize, i128, i128)> = Vec::new();
    // Dynamic (Mosaic) is absolute; allocated (MemoryViz) and reserved are
    // relative to the start (see the module comment).
    let (mut dynamic, mut allocated, mut reserved) = (0i128, 0i128, 0i128);
    let mut dyn_peak = Peak::start(n);
    let mut alloc_peak = Peak::start(n);
    let mut res_peak = Peak::start(n);
    let mut dyn_cats = vec![0i64; ncat];
    let mut alloc_cats = vec![0i64; ncat];
    let mut cats_at_dynamic = vec![0i64; ncat];
    let mut cats_at_allocated = vec![0i64; ncat];
    let mut cat_peaks = vec![0i64; ncat];
    let mut sampler = extras.timeline_points.map(|p| Sampler::new(n, p, ncat));
    let mut curves = extras.curves.then(|| Curves {
        allocated_start: 0,
        allocated: Vec::with_capacity(n),
        dynamic: Vec::with_capacity(n),
    });
    let (mut last_time, mut time_backwards) = (i64::MIN, 0usize);
    let (from, to) = extras.window.unwrap_or((0, usize::MAX));
    let mut edges = extras.window.map(|_| WindowEdges::default());
    let mut counted = 0u64;
    // Relative to the start, like `allocated`; shifted at the end.
    let mut allocated_at_to = 0i128;
    for (i, e) in trace.iter().enumerate() {
        let inside = from <= i && i <= to;
        if let (Some(w), true) = (&mut edges, i == from) {
            w.dynamic_at_from = to_u64(dynamic);
        }
        counted += u64::from(inside);
        let time = e.time();
        if let Some(t) = time {
            time_backwards += usize::from(t < last_time);
            last_time = t;
        }
        let changed = match e.action {
            Action::Alloc => {
                touch(e.addr);
                allocs += u64::from(inside);
                let c = cat(Origin::Alloc(i, e));
                let id = lifetimes.len() as u32;
                lifetimes.push(Lifetime {
                    alloc: i as u32,
                    end: OPEN,
                });
                let opened = Open {
                    size: e.size,
                    category: c as u32,
                    lifetime: id,
                };
                if let Some(replaced) = open.insert(e.addr, opened) {
                    lifetimes[replaced.lifetime as usize].end = i as u32;
                }
                dynamic += i128::from(e.size);
                allocated += i128::from(e.size);
                dyn_cats[c] += e.size as i64;
                alloc_cats[c] += e.size as i64;
                Some(c)
            }
            Action::FreeCompleted => {
                touch(e.addr);
                match open.remove(&e.addr) {
                    Some(o) => {
                        lifetimes[o.lifetime as usize].end = i as u32;
                        let c = o.category as usize;
                        dynamic -= i128::from(e.size);
                        allocated -= i128::from(o.size);
                        dyn_cats[c] -= e.size as i64;
                        alloc_cats[c] -= o.size as i64;
                        Some(c)
                    }
                    None => {
                        pre.push(PreLive {
                            freed_at: Some(i),
                            size: e.size,
                            stack: e.stack,
                        });
                        let c = cat(Origin::BeforeTrace(e.stack));
                        allocated -= i128::from(e.size);
                        alloc_cats[c] -= e.size as i64;
                        Some(c)
                    }
                }
            }
            Action::FreeRequested => {
                touch(e.addr);
                None
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                reserved += i128::from(e.size);
                None
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                reserved -= i128::from(e.size);
                None
            }
            Action::Oom => {
                ooms += u64::from(inside);
                if inside {
                    oom_at.push((i, allocated, reserved));
                }
                None
            }
            _ => None,
        };
        if !inside {
            // Outside the window: the state moves on, no peak is taken.
        } else if extras.window.is_some() && i == from {
            // The window's first entry: the state carried in, with this
            // entry applied, is where every windowed maximum starts.
            dyn_peak.set(dynamic, i);
            alloc_peak.set(allocated, i);
            res_peak.set(reserved, i);
            cats_at_dynamic.copy_from_slice(&dyn_cats);
            cats_at_allocated.copy_from_slice(&alloc_cats);
            cat_peaks.copy_from_slice(&alloc_cats);
            if let Some(s) = &mut sampler {
                for pin in [Pin::Allocated, Pin::Dynamic, Pin::Reserved] {
                    s.pin(pin, i, time, &alloc_cats, reserved);
                }
            }
        } else if let Some(c) = changed {
            cat_peaks[c] = cat_peaks[c].max(alloc_cats[c]);
            if dyn_peak.update(dynamic, i) {
                cats_at_dynamic.copy_from_slice(&dyn_cats);
                if let Some(s) = &mut sampler {
                    s.pin(Pin::Dynamic, i, time, &alloc_cats, reserved);
                }
            }
            if alloc_peak.update(allocated, i) {
                cats_at_allocated.copy_from_slice(&alloc_cats);
                if let Some(s) = &mut sampler {
                    s.pin(Pin::Allocated, i, time, &alloc_cats, reserved);
                }
            }
        } else if res_peak.update(reserved, i) {
            if let Some(s) = &mut sampler {
                s.pin(Pin::Reserved, i, time, &alloc_cats, reserved);
            }
        }
        if let Some(s) = &mut sampler {
            s.see(i, time, allocated, &alloc_cats, reserved);
        }
        if let Some(c) = &mut curves {
            c.allocated.push(clamp_i64(allocated));
            c.dynamic.push(clamp_i64(dynamic));
        }
        if let (Some(w), true) = (&mut edges, i == to) {
            w.dynamic_at_to = to_u64(dynamic);
            allocated_at_to = allocated;
        }
    }
    let complete = pre.is_empty();
    let mut static_memory = 0u64;
    for s in segments {
        for b in &s.blocks {
            if b.state != BlockState::ActiveAllocated {
                continue;
            }
            if touched.get(&b.address) == Some(&false) {
                static_memory += b.size;
            }
            if !open.contains_key(&b.address) {
                pre.push(PreLive {
                    freed_at: None,
                    size: b.requested_size,
                    stack: b.stack,
                });
            }
        }
    }
    drop(open);
    drop(touched);

    // The constants: what was live before recording, and the reserved start.
    let mut pre_cats = vec![0i64; ncat];
    for p in &pre {
        pre_cats[cat(Origin::BeforeTrace(p.stack))] += p.size as i64;
    }
    let initial: i128 = pre.iter().map(|p| i128::from(p.size)).sum();
    let end_reserved: i128 = segments.iter().map(|s| i128::from(s.total_size)).sum();
    let start_reserved = end_reserved - reserved;
    if let Some(c) = &mut curves {
        let start = clamp_i64(initial);
        c.allocated_start = start;
        for a in &mut c.allocated {
            *a = a.saturating_add(start);
        }
    }
    if let Some(w) = &mut edges {
        w.allocated_at_to = to_u64(initial + allocated_at_to);
    }
    let figures = Figures {
        dynamic_peak: to_u64(dyn_peak.value),
        static_memory,
        overall_peak: to_u64(dyn_peak.value) + static_memory,
        allocated_peak: to_u64(initial + alloc_peak.value),
        reserved_peak: to_u64(start_reserved + res_peak.value),
        oom_events: ooms,
        alloc_events: allocs,
        trace_entries: counted,
    };
    DeviceReplay {
        figures,
        peak_entry: PeakEntry {
            dynamic_peak: dyn_peak.index.map(|i| i as u64),
            allocated_peak: alloc_peak.index.map(|i| i as u64),
            reserved_peak: res_peak.index.map(|i| i as u64),
        },
        allocated_peak_at_start: extras.window.is_none() && alloc_peak.value == 0 && n > 0,
        reserved_peak_at_start: extras.window.is_none() && res_peak.value == 0 && n > 0,
        complete,
        pre,
        cats_at_allocated: shifted(&pre_cats, &cats_at_allocated),
        cats_at_dynamic: shifted(&vec![0; ncat], &cats_at_dynamic),
        cat_peaks: shifted(&pre_cats, &cat_peaks),
        time_backwards,
        timeline: sampler.map(|s| s.finish(&pre_cats, start_reserved)),
        curves,
        ooms: oom_at
            .into_iter()
            .map(|(index, a, r)| OomMoment {
                index,
                allocated: to_u64(initial + a),
                reserved: to_u64(start_reserved + r),
            })
            .collect(),
        window: edges,
        lifetimes,
    }
}
