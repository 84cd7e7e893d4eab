//! Bounds on what one snapshot's names can cost, whatever the file does.
//!
//! A pickle can share one 100 kB string through its memo (or `DUP`) among
//! any number of frames at two bytes each. So that no report grows with
//! that sharing:
//!
//! * every string longer than [`MAX_STRING_BYTES`] is cut when the
//!   snapshot is built, ending in a marker that gives its length
//!   ([`cut_long`]);
//! * a frame's `name (file:line)` label and a stack's list of labels are
//!   made once and shared (`Arc`) by every stack group, OOM and moment
//!   that lists them;
//! * the frames of every stack listed in a JSON-bound report (once per
//!   listing, and once when its labels are first made) are counted against
//!   [`MAX_REPORTED_FRAME_BYTES`] per use of a snapshot (a command, or one
//!   MCP call on a cached snapshot): past it a stack is listed as one
//!   marker line and [`Listed::overflow`] says so, which the commands turn
//!   into a one-line error (exit 2).

#[cfg(feature = "mcp")]
use std::mem::{size_of, size_of_val};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Strings longer than this (in bytes) are cut.
pub const MAX_STRING_BYTES: usize = 512;

/// Bytes of frame labels (plus [`FRAME_OVERHEAD`] each) that the stack
/// lists of one snapshot's reports may hold: a real snapshot lists a few
/// MB (8 devices × 40 stacks × 100 frames).
pub const MAX_REPORTED_FRAME_BYTES: u64 = 64 << 20;

/// What each listed frame costs beyond its label in a JSON report
/// (quotes, comma, indentation).
const FRAME_OVERHEAD: u64 = 16;

/// `s` itself when short, else its first [`MAX_STRING_BYTES`] bytes (cut
/// at a character boundary) and `…[cut: N bytes]`.
pub(crate) fn cut_long(s: Box<str>) -> Box<str> {
    if s.len() <= MAX_STRING_BYTES {
        return s;
    }
    let mut end = MAX_STRING_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[cut: {} bytes]", &s[..end], s.len()).into_boxed_str()
}

/// A stack's labels, innermost first, shared.
pub type StackLabels = Arc<[Arc<str>]>;

/// The labels made so far, kept with the snapshot's tables.
#[derive(Debug, Default)]
pub(crate) struct Labels {
    frames: Vec<OnceLock<Arc<str>>>,
    stacks: Vec<OnceLock<StackLabels>>,
    /// What listing each stack once costs.
    costs: Vec<OnceLock<u64>>,
}

impl Labels {
    pub(crate) fn new(frames: usize, stacks: usize) -> Labels {
        Labels {
            frames: (0..frames).map(|_| OnceLock::new()).collect(),
            stacks: (0..stacks).map(|_| OnceLock::new()).collect(),
            costs: (0..stacks).map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn frame(&self, id: usize, make: impl FnOnce() -> String) -> Arc<str> {
        self.frames[id]
            .get_or_init(|| Arc::from(make().into_boxed_str()))
            .clone()
    }

    /// What listing stack `id` costs, from its frames' labels.
    pub(crate) fn cost(&self, id: usize, labels: impl FnOnce() -> u64) -> u64 {
        *self.costs[id].get_or_init(labels)
    }

    /// Stack `id`'s labels, if made.
    pub(crate) fn made(&self, id: usize) -> Option<StackLabels> {
        self.stacks[id].get().cloned()
    }

    /// Stack `id`'s labels, made by `make` the first time.
    pub(crate) fn stack(&self, id: usize, make: impl FnOnce() -> Vec<Arc<str>>) -> StackLabels {
        self.stacks[id].get_or_init(|| Arc::from(make())).clone()
    }

    #[cfg(feature = "mcp")]
    /// The most heap the labels can hold once every one is made: their
    /// slots, each frame's label once (`frame_labels`, counted by the
    /// caller from the tables) and a shared list per stack with a slot per
    /// frame (`stack_frames` in all): what a cache counts before any is made.
    pub(crate) fn most_bytes(&self, frame_labels: u64, stack_frames: u64) -> u64 {
        let slots = size_of_val(&self.frames[..]) + size_of_val(&self.stacks[..]);
        let slots = (slots + size_of_val(&self.costs[..])) as u64;
        let lists = (self.stacks.len() as u64).saturating_mul(16 + ALLOCATION);
        let in_lists = stack_frames.saturating_mul(size_of::<Arc<str>>() as u64);
        [slots, frame_labels, lists, in_lists]
            .into_iter()
            .fold(0, u64::saturating_add)
    }
}

#[cfg(feature = "mcp")]
/// What one heap allocation costs beyond its bytes (the allocator's header
/// and rounding), as the cache counts it.
pub(crate) const ALLOCATION: u64 = 16;

/// The frame bytes one use of a snapshot has listed.
#[derive(Debug, Default)]
pub(crate) struct Listed(AtomicU64);

impl Listed {
    /// Count `cost` bytes; false once the budget is spent.
    pub(crate) fn count(&self, cost: u64) -> bool {
        let before = self.0.fetch_add(cost, Ordering::Relaxed);
        before.saturating_add(cost) <= MAX_REPORTED_FRAME_BYTES
    }

    /// The bytes counted, when past [`MAX_REPORTED_FRAME_BYTES`].
    pub(crate) fn overflow(&self) -> Option<u64> {
        let n = self.0.load(Ordering::Relaxed);
        (n > MAX_REPORTED_FRAME_BYTES).then_some(n)
    }
}

/// The one line listed in place of a stack once the budget is spent.
pub(crate) const OVER_BUDGET: &str =
    "… frames not listed: this snapshot's stacks exceed memgate's report limit";

/// What one listed frame of `label` costs.
pub(crate) fn frame_cost(label: &str) -> u64 {
    label.len() as u64 + FRAME_OVERHEAD
}
