//! What the replay shows the views that watch it: the running state after
//! each entry ([`State`]) and the [`Observer`]s that keep part of it (the
//! timeline sampler, the per-entry curves the phases read, the window's
//! edges). Each observer sees the same calls in entry order and keeps only
//! what its view needs; none changes the state.

use super::timeline::{Pin, Sampler};

/// The memory after the entries applied so far. Dynamic (Mosaic) is
/// absolute; allocated (MemoryViz) and reserved are relative to the start,
/// per category too (the replay's module comment says why).
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) dynamic: i128,
    pub(crate) allocated: i128,
    pub(crate) reserved: i128,
    pub(crate) dyn_cats: Vec<i64>,
    pub(crate) alloc_cats: Vec<i64>,
}

impl State {
    pub(crate) fn new(ncat: usize) -> State {
        State {
            dynamic: 0,
            allocated: 0,
            reserved: 0,
            dyn_cats: vec![0; ncat],
            alloc_cats: vec![0; ncat],
        }
    }
}

/// A view fed by the replay, entry by entry.
pub(crate) trait Observer {
    /// Entry `i` is next; `s` is the state before it.
    fn before(&mut self, _i: usize, _s: &State) {}
    /// Entry `i` (at `time`) is, for now, where peak `which` is reached.
    fn peak(&mut self, _which: Pin, _i: usize, _time: Option<i64>, _s: &State) {}
    /// Entry `i` (at `time`) is applied; `s` is the state after it.
    fn after(&mut self, _i: usize, _time: Option<i64>, _s: &State) {}
}

impl<O: Observer> Observer for Option<O> {
    #[inline]
    fn before(&mut self, i: usize, s: &State) {
        if let Some(o) = self {
            o.before(i, s);
        }
    }
    #[inline]
    fn peak(&mut self, which: Pin, i: usize, time: Option<i64>, s: &State) {
        if let Some(o) = self {
            o.peak(which, i, time, s);
        }
    }
    #[inline]
    fn after(&mut self, i: usize, time: Option<i64>, s: &State) {
        if let Some(o) = self {
            o.after(i, time, s);
        }
    }
}

/// The category timeline: every state is offered, each peak pinned.
impl Observer for Sampler {
    #[inline]
    fn peak(&mut self, which: Pin, i: usize, time: Option<i64>, s: &State) {
        self.pin(which, i, time, &s.alloc_cats, s.reserved);
    }
    #[inline]
    fn after(&mut self, i: usize, time: Option<i64>, s: &State) {
        self.see(i, time, s.allocated, &s.alloc_cats, s.reserved);
    }
}

/// Clamped into an `i64`.
#[expect(
    clippy::cast_possible_truncation,
    reason = "clamped into the i64 range just before the cast"
)]
pub(crate) fn clamp_i64(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Clamped into a `u64`.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped into the u64 range just before the cast"
)]
pub(crate) fn to_u64(v: i128) -> u64 {
    v.clamp(0, u64::MAX as i128) as u64
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
    /// Room for a trace of `n` entries.
    pub(crate) fn with_capacity(n: usize) -> Curves {
        Curves {
            allocated_start: 0,
            allocated: Vec::with_capacity(n),
            dynamic: Vec::with_capacity(n),
        }
    }

    /// Allocated bytes once the first `p` entries are applied.
    pub(crate) fn allocated_after(&self, p: usize) -> i64 {
        p.checked_sub(1)
            .map_or(self.allocated_start, |i| self.allocated[i])
    }

    /// Dynamic bytes once the first `p` entries are applied.
    pub(crate) fn dynamic_after(&self, p: usize) -> i64 {
        p.checked_sub(1).map_or(0, |i| self.dynamic[i])
    }

    /// Adds `initial` (the bytes live before recording) to the allocated
    /// curve, which the pass followed relative to the start.
    pub(crate) fn shift(&mut self, initial: i128) {
        let start = clamp_i64(initial);
        self.allocated_start = start;
        for a in &mut self.allocated {
            *a = a.saturating_add(start);
        }
    }
}

impl Observer for Curves {
    #[inline]
    fn after(&mut self, _i: usize, _time: Option<i64>, s: &State) {
        self.allocated.push(clamp_i64(s.allocated));
        self.dynamic.push(clamp_i64(s.dynamic));
    }
}

/// The memory at a window's edges.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WindowEdges {
    /// Dynamic bytes before the window's first entry.
    pub(crate) dynamic_at_from: u64,
    pub(crate) dynamic_at_to: u64,
    pub(crate) allocated_at_to: u64,
}

/// Watches the entries `from..=to` of a window for [`WindowEdges`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edges {
    from: usize,
    to: usize,
    dynamic_at_from: u64,
    dynamic_at_to: u64,
    /// Relative to the start, like [`State::allocated`].
    allocated_at_to: i128,
}

impl Edges {
    pub(crate) fn new((from, to): (usize, usize)) -> Edges {
        Edges {
            from,
            to,
            dynamic_at_from: 0,
            dynamic_at_to: 0,
            allocated_at_to: 0,
        }
    }

    /// The edges, with `initial` (the bytes live before recording) added.
    pub(crate) fn finish(self, initial: i128) -> WindowEdges {
        WindowEdges {
            dynamic_at_from: self.dynamic_at_from,
            dynamic_at_to: self.dynamic_at_to,
            allocated_at_to: to_u64(initial + self.allocated_at_to),
        }
    }
}

impl Observer for Edges {
    #[inline]
    fn before(&mut self, i: usize, s: &State) {
        if i == self.from {
            self.dynamic_at_from = to_u64(s.dynamic);
        }
    }
    #[inline]
    fn after(&mut self, i: usize, _time: Option<i64>, s: &State) {
        if i == self.to {
            self.dynamic_at_to = to_u64(s.dynamic);
            self.allocated_at_to = s.allocated;
        }
    }
}
