//! One device's trace replay (docs/figures.md#figures, #categories) in a
//! single pass: the figures, the entry where each peak is first reached,
//! per-category totals, each allocation's lifetime (kept by the
//! [`Allocator`]) and, for the observers that ask, the category timeline,
//! the per-entry curves and the window's edges.
//!
//! The memory live before recording (frees of addresses the replay never saw
//! allocated, blocks still allocated at the end that no alloc explains) is
//! only known once the trace is read. It adds the same constant to the
//! allocated curve and to each category's curve at every entry, so the pass
//! follows those curves relative to the start and adds the constants at the
//! end; a constant moves no argmax. The reserved curve likewise starts at
//! the end's total minus the trace's net segment growth.

use crate::snapshot::{Action, Segment, Trace, TraceEntry};

use super::allocator::{Allocator, Lifetimes, Live, Origin, PreLive, OPEN};
use super::figures::{Figures, PeakEntry};
use super::observe::{to_u64, Curves, Edges, Observer, State, WindowEdges};
use super::timeline::{Pin, Sampler, TimelinePoint};

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
    /// The timeline's finer level of allocated totals (`timeline::FINE`).
    pub(crate) timeline_fine: Vec<super::timeline::FinePoint>,
    /// The state after every entry, when the replay was asked for it.
    pub(crate) curves: Option<Curves>,
    /// Every `oom` entry (inside the window, when there is one) and the
    /// memory at it (for the OOM details).
    pub(crate) ooms: Vec<OomMoment>,
    /// The memory at the window's edges, when the replay had a window.
    pub(crate) window: Option<WindowEdges>,
    lifetimes: Lifetimes,
}

/// The allocated and reserved bytes at one `oom` entry (`index`): the
/// cached free bytes there are their difference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OomMoment {
    pub(crate) index: usize,
    pub(crate) allocated: u64,
    pub(crate) reserved: u64,
}

impl DeviceReplay {
    /// Every allocation live after each of `moments` (entry indices in
    /// ascending order, `-1` before the first entry): `f(k, live)` for each
    /// allocation live at `moments[k]` ([`Lifetimes::live_at_each`]).
    pub(crate) fn live_at_each(
        &self,
        trace: Trace<'_>,
        moments: &[i64],
        f: impl FnMut(usize, Live),
    ) {
        self.lifetimes.live_at_each(trace, moments, f);
    }

    /// The allocations live after entry `upto` (none when `None`).
    pub(crate) fn live_after<'a>(
        &'a self,
        trace: Trace<'a>,
        upto: Option<usize>,
    ) -> impl Iterator<Item = Live> + 'a {
        self.lifetimes.live_after(trace, upto)
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

/// Replay one device. `cat` gives the category (group) index, below
/// `ncat`, of an allocation or of memory live before recording;
/// `extras` asks for the category timeline and the per-entry curves.
pub(crate) fn replay(
    trace: Trace<'_>,
    segments: &[&Segment],
    ncat: usize,
    cat: &mut dyn FnMut(Origin<'_>) -> usize,
    extras: Extras,
) -> DeviceReplay {
    assert!(trace.len() < OPEN as usize, "trace too long to replay");
    let mut machine = Replayer::new(trace.len(), segments, ncat, extras);
    for (i, e) in trace.iter().enumerate() {
        machine.step(i, &e, cat);
    }
    machine.finish(segments, cat)
}

/// The views that watch a replay, each only when asked for.
struct Observers {
    sampler: Option<Sampler>,
    curves: Option<Curves>,
    edges: Option<Edges>,
}

impl Observer for Observers {
    #[inline]
    fn before(&mut self, i: usize, s: &State) {
        self.edges.before(i, s);
    }
    #[inline]
    fn peak(&mut self, which: Pin, i: usize, time: Option<i64>, s: &State) {
        self.sampler.peak(which, i, time, s);
    }
    #[inline]
    fn after(&mut self, i: usize, time: Option<i64>, s: &State) {
        self.sampler.after(i, time, s);
        self.curves.after(i, time, s);
        self.edges.after(i, time, s);
    }
}

/// The replay machine: steps the entries in order over the allocator's
/// bookkeeping, takes the peaks inside the window, counts, and shows every
/// state to its observers.
struct Replayer {
    len: usize,
    window: Option<(usize, usize)>,
    /// `window`, or every entry.
    from: usize,
    to: usize,
    state: State,
    memory: Allocator,
    peaks: Peaks,
    counts: Counts,
    /// (entry, allocated, reserved) at each OOM inside the window,
    /// relative to the start.
    oom_at: Vec<(usize, i128, i128)>,
    /// The cache's growth entries, for the fragmentation figures.
    growth: Growth,
    observers: Observers,
}

/// The counted entries inside the window and the order of their times.
#[derive(Default)]
struct Counts {
    allocs: u64,
    ooms: u64,
    entries: u64,
    last_time: Option<i64>,
    /// How many times `time_us` goes down from one timed entry to the next.
    time_backwards: usize,
}

impl Replayer {
    fn new(len: usize, segments: &[&Segment], ncat: usize, extras: Extras) -> Replayer {
        let (from, to) = extras.window.unwrap_or((0, usize::MAX));
        Replayer {
            len,
            window: extras.window,
            from,
            to,
            state: State::new(ncat),
            memory: Allocator::new(segments),
            peaks: Peaks::new(len, ncat),
            counts: Counts::default(),
            oom_at: Vec::new(),
            growth: Growth::default(),
            observers: Observers {
                sampler: extras.timeline_points.map(|p| Sampler::new(len, p, ncat)),
                curves: extras.curves.then(|| Curves::with_capacity(len)),
                edges: extras.window.map(Edges::new),
            },
        }
    }

    /// Applies entry `i`.
    #[inline]
    fn step(&mut self, i: usize, e: &TraceEntry, cat: &mut dyn FnMut(Origin<'_>) -> usize) {
        let inside = self.from <= i && i <= self.to;
        self.observers.before(i, &self.state);
        let time = e.time();
        self.counts.see(inside, e.action(), time);
        self.growth.see(inside, e, &self.state);
        let changed = self.memory.step(i, e, cat, &mut self.state);
        let s = &self.state;
        if inside && e.action() == Action::Oom {
            self.oom_at.push((i, s.allocated, s.reserved));
        }
        let pins = if !inside {
            // Outside the window: the state moves on, no peak is taken.
            Pins::default()
        } else if self.window.is_some() && i == self.from {
            self.peaks.restart(i, s)
        } else {
            self.peaks.take(i, changed, s)
        };
        if pins.0 != 0 {
            for which in pins.iter() {
                self.observers.peak(which, i, time, s);
            }
        }
        self.observers.after(i, time, s);
    }

    /// The constants (what was live before recording, the reserved start)
    /// added to what the pass followed relative to the start.
    fn finish(
        self,
        segments: &[&Segment],
        cat: &mut dyn FnMut(Origin<'_>) -> usize,
    ) -> DeviceReplay {
        let Replayer {
            len,
            window,
            state,
            memory,
            peaks,
            counts,
            oom_at,
            growth,
            observers,
            ..
        } = self;
        let complete = memory.complete();
        let (static_memory, pre, lifetimes) = memory.finish(segments);
        let mut pre_cats = vec![0i64; state.alloc_cats.len()];
        for p in &pre {
            pre_cats[cat(Origin::BeforeTrace(p.stack))] += p.size.cast_signed();
        }
        let initial: i128 = pre.iter().map(|p| i128::from(p.size)).sum();
        let end_reserved: i128 = segments.iter().map(|s| i128::from(s.total_size)).sum();
        let start_reserved = end_reserved - state.reserved;
        let Observers {
            mut sampler,
            mut curves,
            edges,
        } = observers;
        let timeline_fine = sampler
            .as_mut()
            .map_or_else(Vec::new, |s| s.take_fine(initial));
        if let Some(c) = &mut curves {
            c.shift(initial);
        }
        let peak_value = |p: &Peak, start: i128| to_u64(start + p.value);
        let figures = Figures {
            dynamic_peak: peak_value(&peaks.dynamic, 0),
            static_memory,
            overall_peak: peak_value(&peaks.dynamic, 0) + static_memory,
            allocated_peak: peak_value(&peaks.allocated, initial),
            reserved_peak: peak_value(&peaks.reserved, start_reserved),
            oom_events: counts.ooms,
            alloc_events: counts.allocs,
            trace_entries: counts.entries,
            cached_free_at_reserved_peak: to_u64(
                (start_reserved + peaks.reserved.value) - (initial + peaks.allocated_at_reserved),
            ),
            segment_allocs: growth.allocs,
            segment_frees: growth.frees,
            segment_allocs_with_free_cache: growth.covered(start_reserved - initial),
        };
        let at_start = |p: &Peak| window.is_none() && p.value == 0 && len > 0;
        DeviceReplay {
            figures,
            peak_entry: peaks.entries(),
            allocated_peak_at_start: at_start(&peaks.allocated),
            reserved_peak_at_start: at_start(&peaks.reserved),
            complete,
            pre,
            cats_at_allocated: shifted(&pre_cats, &peaks.cats_at_allocated),
            cats_at_dynamic: shifted(&vec![0; pre_cats.len()], &peaks.cats_at_dynamic),
            cat_peaks: shifted(&pre_cats, &peaks.cat_peaks),
            time_backwards: counts.time_backwards,
            timeline: sampler.map(|s| s.finish(&pre_cats, start_reserved)),
            timeline_fine,
            curves,
            ooms: oom_at
                .into_iter()
                .map(|(index, a, r)| OomMoment {
                    index,
                    allocated: to_u64(initial + a),
                    reserved: to_u64(start_reserved + r),
                })
                .collect(),
            window: edges.map(|e| e.finish(initial)),
            lifetimes,
        }
    }
}

impl Counts {
    /// An entry of `action` at `time`, counted when `inside` the window.
    #[inline]
    fn see(&mut self, inside: bool, action: Action, time: Option<i64>) {
        self.entries += u64::from(inside);
        self.allocs += u64::from(inside && action == Action::Alloc);
        self.ooms += u64::from(inside && action == Action::Oom);
        if let Some(t) = time {
            self.time_backwards += usize::from(self.last_time.is_some_and(|l| t < l));
            self.last_time = Some(t);
        }
    }
}

/// The cache's growth and shrink entries inside the window
/// (docs/figures.md#fragmentation). For each growth, the request it served
/// less the cached free bytes (reserved − allocated) before it, both
/// relative to the start: whether the cache covered the request is known
/// once the constants are, at the end.
#[derive(Default)]
struct Growth {
    allocs: u64,
    frees: u64,
    shortfalls: Vec<i128>,
    /// The growth entry just seen: the free cached bytes before it and its
    /// own size, until the next entry names the request.
    pending: Option<(i128, u64)>,
}

impl Growth {
    /// Entry `e`, seen with the state before it.
    #[inline]
    fn see(&mut self, inside: bool, e: &TraceEntry, before: &State) {
        if let Some((free, own)) = self.pending.take() {
            // The request is the `alloc` right after the growth; with none
            // there, the growth's own size.
            let request = if e.action() == Action::Alloc {
                e.size
            } else {
                own
            };
            self.shortfalls.push(i128::from(request) - free);
        }
        match e.action() {
            Action::SegmentAlloc | Action::SegmentMap if inside => {
                self.allocs += 1;
                self.pending = Some((before.reserved - before.allocated, e.size));
            }
            Action::SegmentFree | Action::SegmentUnmap if inside => self.frees += 1,
            _ => {}
        }
    }

    /// How many growths the cached free bytes covered, `offset` being the
    /// free cached bytes at the start (reserved − allocated there).
    fn covered(mut self, offset: i128) -> u64 {
        if let Some((free, own)) = self.pending.take() {
            self.shortfalls.push(i128::from(own) - free);
        }
        self.shortfalls.iter().filter(|&&s| s <= offset).count() as u64
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
    #[inline]
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

/// The three peaks, the categories at the dynamic and allocated ones, and
/// each category's own peak (all relative to the start but dynamic).
struct Peaks {
    dynamic: Peak,
    allocated: Peak,
    reserved: Peak,
    /// The allocated bytes (relative) where the reserved peak is first
    /// reached.
    allocated_at_reserved: i128,
    cats_at_dynamic: Vec<i64>,
    cats_at_allocated: Vec<i64>,
    cat_peaks: Vec<i64>,
}

/// The peaks an entry reached: a set of [`Pin`]s, one bit each.
#[derive(Debug, Clone, Copy, Default)]
struct Pins(u8);

impl Pins {
    /// `self`, with `which` when `reached`.
    #[inline]
    fn with(self, which: Pin, reached: bool) -> Pins {
        Pins(self.0 | u8::from(reached) << which as u8)
    }

    fn iter(self) -> impl Iterator<Item = Pin> {
        [Pin::Allocated, Pin::Dynamic, Pin::Reserved]
            .into_iter()
            .filter(move |&p| self.0 & 1 << p as u8 != 0)
    }
}

impl Peaks {
    fn new(len: usize, ncat: usize) -> Peaks {
        Peaks {
            dynamic: Peak::start(len),
            allocated: Peak::start(len),
            reserved: Peak::start(len),
            allocated_at_reserved: 0,
            cats_at_dynamic: vec![0; ncat],
            cats_at_allocated: vec![0; ncat],
            cat_peaks: vec![0; ncat],
        }
    }

    /// The window's first entry `i`: the state carried in, with this entry
    /// applied, is where every windowed maximum starts.
    fn restart(&mut self, i: usize, s: &State) -> Pins {
        self.dynamic.set(s.dynamic, i);
        self.allocated.set(s.allocated, i);
        self.reserved.set(s.reserved, i);
        self.allocated_at_reserved = s.allocated;
        self.cats_at_dynamic.copy_from_slice(&s.dyn_cats);
        self.cats_at_allocated.copy_from_slice(&s.alloc_cats);
        self.cat_peaks.copy_from_slice(&s.alloc_cats);
        Pins::default()
            .with(Pin::Allocated, true)
            .with(Pin::Dynamic, true)
            .with(Pin::Reserved, true)
    }

    /// Entry `i`, which changed category `changed`'s bytes (or only the
    /// reserved bytes, when `None`), left `s`: the peaks it raised.
    #[inline]
    fn take(&mut self, i: usize, changed: Option<usize>, s: &State) -> Pins {
        let Some(c) = changed else {
            let raised = self.reserved.update(s.reserved, i);
            if raised {
                self.allocated_at_reserved = s.allocated;
            }
            return Pins::default().with(Pin::Reserved, raised);
        };
        self.cat_peaks[c] = self.cat_peaks[c].max(s.alloc_cats[c]);
        let dynamic = self.dynamic.update(s.dynamic, i);
        if dynamic {
            self.cats_at_dynamic.copy_from_slice(&s.dyn_cats);
        }
        let allocated = self.allocated.update(s.allocated, i);
        if allocated {
            self.cats_at_allocated.copy_from_slice(&s.alloc_cats);
        }
        Pins::default()
            .with(Pin::Dynamic, dynamic)
            .with(Pin::Allocated, allocated)
    }

    /// The entry where each peak is first reached.
    fn entries(&self) -> PeakEntry {
        let entry = |p: &Peak| p.index.map(|i| i as u64);
        PeakEntry {
            dynamic_peak: entry(&self.dynamic),
            allocated_peak: entry(&self.allocated),
            reserved_peak: entry(&self.reserved),
        }
    }
}

/// `base + relative`, per category, clamped at zero.
fn shifted(base: &[i64], relative: &[i64]) -> Vec<u64> {
    base.iter()
        .zip(relative)
        .map(|(b, r)| (b + r).max(0).unsigned_abs())
        .collect()
}
