//! The alloc/free bookkeeping of a replay, and only here: the allocation
//! open at each address, every allocation's lifetime (so the live set at
//! any entry can be recovered afterwards) and the memory live before
//! recording.

use crate::snapshot::{Action, BlockState, Segment, StackId, Trace, TraceEntry};

use super::addr::AddrMap;
use super::observe::State;

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

pub(crate) const OPEN: u32 = u32::MAX;

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

/// Every allocation's lifetime, in the order of their `alloc` entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lifetimes(Vec<Lifetime>);

impl Lifetimes {
    /// Every allocation live after each of `moments` (entry indices in
    /// ascending order, `-1` before the first entry), in one sweep over the
    /// lifetimes: `f(k, live)` for each allocation live at `moments[k]`.
    /// Costs one pass plus the live sets' sizes, where asking
    /// [`Lifetimes::live_after`] per moment would walk the lifetimes
    /// once each.
    pub(crate) fn live_at_each(
        &self,
        trace: Trace<'_>,
        moments: &[i64],
        mut f: impl FnMut(usize, Live),
    ) {
        debug_assert!(moments.is_sorted());
        for l in &self.0 {
            let alloc = i64::from(l.alloc);
            let first = moments.partition_point(|&m| m < alloc);
            let end = i64::from(l.end);
            let e = trace.at(l.alloc as usize);
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
    pub(crate) fn live_after<'a>(
        &'a self,
        trace: Trace<'a>,
        upto: Option<usize>,
    ) -> impl Iterator<Item = Live> + 'a {
        let upto = upto.map_or(-1, |u| i64::try_from(u).unwrap_or(i64::MAX));
        self.0
            .iter()
            .take_while(move |l| i64::from(l.alloc) <= upto)
            .filter(move |l| i64::from(l.end) > upto)
            .map(move |l| {
                let e = trace.at(l.alloc as usize);
                Live {
                    size: e.size,
                    stack: e.stack,
                    index: l.alloc as usize,
                }
            })
    }
}

/// The alloc/free bookkeeping: the allocation open at each address, every
/// allocation's lifetime, and the memory live before recording.
pub(crate) struct Allocator {
    open: AddrMap<Open>,
    lifetimes: Vec<Lifetime>,
    /// Blocks allocated at the end, and whether any entry touches them.
    touched: AddrMap<bool>,
    pre: Vec<PreLive>,
}

impl Allocator {
    pub(crate) fn new(segments: &[&Segment]) -> Allocator {
        let mut touched = AddrMap::default();
        for b in segments.iter().flat_map(|s| &s.blocks) {
            if b.state == BlockState::ActiveAllocated {
                touched.insert(b.address, false);
            }
        }
        Allocator {
            open: AddrMap::default(),
            lifetimes: Vec::new(),
            touched,
            pre: Vec::new(),
        }
    }

    /// Whether every free so far was of an allocation the trace made.
    pub(crate) fn complete(&self) -> bool {
        self.pre.is_empty()
    }

    #[inline]
    fn touch(&mut self, addr: u64) {
        if let Some(t) = self.touched.get_mut(&addr) {
            *t = true;
        }
    }

    /// Applies entry `i` to `s`: the category whose bytes it changed, if
    /// any.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entry indices and lifetimes are below 2^32 (snapshot::build refuses a file \
                  with more trace entries) and category indices are the rule set's few"
    )]
    pub(crate) fn step(
        &mut self,
        i: usize,
        e: &TraceEntry,
        cat: &mut dyn FnMut(Origin<'_>) -> usize,
        s: &mut State,
    ) -> Option<usize> {
        match e.action() {
            Action::Alloc => {
                self.touch(e.addr);
                let c = cat(Origin::Alloc(i, e));
                let opened = Open {
                    size: e.size,
                    category: c as u32,
                    lifetime: self.lifetimes.len() as u32,
                };
                self.lifetimes.push(Lifetime {
                    alloc: i as u32,
                    end: OPEN,
                });
                if let Some(replaced) = self.open.insert(e.addr, opened) {
                    self.lifetimes[replaced.lifetime as usize].end = i as u32;
                }
                s.dynamic += i128::from(e.size);
                s.allocated += i128::from(e.size);
                // Exact: snapshot::build refuses a file whose sizes add up
                // past 2^62 bytes, so every size is below i64::MAX.
                s.dyn_cats[c] += e.size.cast_signed();
                s.alloc_cats[c] += e.size.cast_signed();
                Some(c)
            }
            Action::FreeCompleted => {
                self.touch(e.addr);
                let c = match self.open.remove(&e.addr) {
                    Some(o) => {
                        self.lifetimes[o.lifetime as usize].end = i as u32;
                        let c = o.category as usize;
                        s.dynamic -= i128::from(e.size);
                        s.dyn_cats[c] -= e.size.cast_signed();
                        (c, o.size)
                    }
                    None => {
                        self.pre.push(PreLive {
                            freed_at: Some(i),
                            size: e.size,
                            stack: e.stack,
                        });
                        (cat(Origin::BeforeTrace(e.stack)), e.size)
                    }
                };
                s.allocated -= i128::from(c.1);
                s.alloc_cats[c.0] -= c.1.cast_signed();
                Some(c.0)
            }
            Action::FreeRequested => {
                self.touch(e.addr);
                None
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                s.reserved += i128::from(e.size);
                None
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                s.reserved -= i128::from(e.size);
                None
            }
            _ => None,
        }
    }

    /// The static memory (blocks allocated at the end that no entry
    /// touches), every piece of memory live before recording, and the
    /// lifetimes.
    pub(crate) fn finish(mut self, segments: &[&Segment]) -> (u64, Vec<PreLive>, Lifetimes) {
        let mut static_memory = 0u64;
        for b in segments.iter().flat_map(|s| &s.blocks) {
            if b.state != BlockState::ActiveAllocated {
                continue;
            }
            if self.touched.get(&b.address) == Some(&false) {
                static_memory += b.size;
            }
            if !self.open.contains_key(&b.address) {
                self.pre.push(PreLive {
                    freed_at: None,
                    size: b.requested_size,
                    stack: b.stack,
                });
            }
        }
        (static_memory, self.pre, Lifetimes(self.lifetimes))
    }
}
