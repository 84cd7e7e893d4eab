//! What the dump itself shows of a device whose snapshot holds no
//! allocation history (docs/figures.md#a-dump-without-history): with an
//! empty trace there is no peak to place, no OOM to count and no stack
//! that grew, but the segments and their blocks still say what was live,
//! what was reserved, and how the free cache lay.

use serde::{Deserialize, Serialize};

use crate::snapshot::{BlockState, Segment, Snapshot, StackLabels};
use crate::vocab::NoStory;

use super::fragmentation::largest_free_block_at_dump;

/// A device's memory at dump time, from its segments alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct DumpState {
    /// Σ `requested_size` of the `active_allocated` blocks (what
    /// `allocated-peak` counts without a trace).
    pub live: u64,
    /// How many blocks that is.
    pub live_blocks: u64,
    /// Σ `total_size` of the segments.
    pub reserved: u64,
    /// `reserved` − `live`: the bytes the allocator held cached and free.
    pub cached_free: u64,
    /// The longest stretch of reserved address space no active block
    /// covers (touching segments merged), as for an OOM's cause.
    pub largest_free_block: u64,
    /// The largest live blocks, largest first (ties by address).
    pub largest_live: Vec<LiveBlock>,
}

/// One live block of the dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct LiveBlock {
    /// Its `requested_size`.
    pub bytes: u64,
    pub address: u64,
    /// `name (file:line)`, innermost first.
    pub frames: StackLabels,
    /// `pre-trace` when it has no frames: live since before any recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_frames: Option<NoStory>,
}

/// The dump state of a device's `segments`, with its `top` largest live
/// blocks.
pub(crate) fn dump_state(snap: &Snapshot, segments: &[&Segment], top: usize) -> DumpState {
    let mut live: Vec<(u64, u64, crate::snapshot::StackId)> = segments
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| b.state == BlockState::ActiveAllocated)
        .map(|b| (b.requested_size, b.address, b.stack))
        .collect();
    let total: u64 = live.iter().map(|l| l.0).sum();
    let reserved: u64 = segments.iter().map(|s| s.total_size).sum();
    let live_blocks = live.len() as u64;
    live.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let largest_live = live
        .into_iter()
        .take(top)
        .map(|(bytes, address, stack)| {
            let frames = snap.stack_labels(stack);
            let no_frames = frames.is_empty().then_some(NoStory::PreTrace);
            LiveBlock {
                bytes,
                address,
                frames,
                no_frames,
            }
        })
        .collect();
    DumpState {
        live: total,
        live_blocks,
        reserved,
        cached_free: reserved.saturating_sub(total),
        largest_free_block: largest_free_block_at_dump(segments),
        largest_live,
    }
}
