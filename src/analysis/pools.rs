//! Memory pools as a dimension of the figures (docs/figures.md#pools): which
//! pool each allocation and segment belongs to, each pool's allocated and
//! reserved peaks, what it holds at the device's peaks and its cached free
//! bytes, and the pool's name by the rule the docs give.
//!
//! A pass of its own over the trace, beside the device replay: it follows
//! the same alloc/free rules (docs/figures.md#figures), so the pools' bytes
//! at any entry add up to the device's. It runs only when the snapshot
//! names a pool other than the default one, so a snapshot without private
//! pools costs nothing and its summary does not change.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::addr::AddrMap;
use crate::snapshot::{Action, BlockState, Segment, StackId, Tables, Trace, TraceEntry};

/// The default pool's id: `(0, 0)`, also the pool of whatever names none.
const DEFAULT: (u64, u64) = (0, 0);

/// What made a pool, as far as the snapshot tells (docs/figures.md#pool-names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PoolKind {
    /// `(0, 0)`: the caching allocator's own pool.
    Default,
    /// A CUDA graph's private pool.
    CudaGraph,
    /// A pool of `torch.compile`'s cudagraph trees.
    CudagraphTree,
    /// A `torch.cuda.MemPool` (or another user-created pool).
    Mempool,
    /// A symmetric-memory pool (`torch.distributed._symmetric_memory`).
    Symmetric,
    /// An id of neither known shape, and no stack that tells.
    Pool,
    /// Memory no entry or dumped segment places in a pool: a segment made
    /// and freed during the trace by entries without `pool_id`.
    Unknown,
}

impl PoolKind {
    /// The kind as pool names begin with it.
    pub fn id(self) -> &'static str {
        match self {
            PoolKind::Default => "default",
            PoolKind::CudaGraph => "cuda-graph",
            PoolKind::CudagraphTree => "cudagraph-tree",
            PoolKind::Mempool => "mempool",
            PoolKind::Symmetric => "symmetric",
            PoolKind::Pool => "pool",
            PoolKind::Unknown => "unknown",
        }
    }
}

/// One pool's figures on one device (docs/figures.md#pool-figures), bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PoolFigures {
    /// `default`, `cuda-graph-1`, `mempool-2`…: what budgets name it by.
    pub name: String,
    pub kind: PoolKind,
    /// The `MempoolId_t` pair the snapshot gives; `None` for `unknown`.
    pub id: Option<(u64, u64)>,
    pub allocated_peak: u64,
    pub reserved_peak: u64,
    /// The pool's allocated bytes where the device's allocated peak is
    /// first reached.
    pub at_allocated_peak: u64,
    /// The pool's reserved bytes where the device's reserved peak is first
    /// reached.
    pub at_reserved_peak: u64,
    /// Reserved − allocated where the pool's own reserved peak is first
    /// reached.
    pub cached_free_at_reserved_peak: u64,
}

/// Where the device's peaks are first reached: the entry index, `None`
/// for the state before the first entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DevicePeaks {
    pub(crate) allocated: Option<usize>,
    pub(crate) reserved: Option<usize>,
}

/// The pools of one device, `default` first then by id; empty when the
/// device has no pool but the default one.
pub(crate) fn device_pools(
    snap: &Tables,
    trace: Trace<'_>,
    segments: &[&Segment],
    peaks: DevicePeaks,
) -> Vec<PoolFigures> {
    let Some(places) = Places::new(snap, trace, segments) else {
        return Vec::new();
    };
    let mut pass = Pass::new(places);
    pass.watch = peaks;
    for (i, e) in trace.iter().enumerate() {
        pass.step(snap, i, &e);
    }
    let kinds = pass.places.kinds(snap, trace, segments);
    pass.finish(segments, &kinds)
}

/// Which pool every address lies in: the pools' table, the dump's segments
/// by address and the segments the trace has made so far.
struct Places {
    ids: Vec<(u64, u64)>,
    /// The dump's segments: (start, end, pool), by start.
    dumped: Vec<(u64, u64, usize)>,
    /// Segments the trace made and has not freed: start → (end, pool).
    made: BTreeMap<u64, (u64, usize)>,
}

impl Places {
    /// `None` when every pool named is the default one.
    fn new(snap: &Tables, trace: Trace<'_>, segments: &[&Segment]) -> Option<Places> {
        let named = segments
            .iter()
            .filter_map(|s| s.pool_id)
            .chain(trace.iter().filter_map(|e| snap.entry_pool(&e)));
        let mut ids: Vec<(u64, u64)> = named.chain([DEFAULT]).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() == 1 {
            return None;
        }
        let index = |id: (u64, u64)| ids.binary_search(&id).unwrap_or(0);
        let mut dumped: Vec<(u64, u64, usize)> = segments
            .iter()
            .map(|s| {
                let end = s.address.saturating_add(s.total_size);
                (s.address, end, index(s.pool_id.unwrap_or(DEFAULT)))
            })
            .collect();
        dumped.sort_unstable();
        Some(Places {
            dumped,
            ids,
            made: BTreeMap::new(),
        })
    }

    /// The pool of the memory at `addr` that entry `e` names: its own
    /// `pool_id`, else the segment the trace made there, else the dump's
    /// segment there, else no pool it can tell: `unknown`
    /// (docs/figures.md#pool-of-an-allocation).
    fn pool_of(&self, snap: &Tables, e: &TraceEntry, addr: u64) -> usize {
        if let Some(id) = snap.entry_pool(e) {
            return self.ids.binary_search(&id).unwrap_or(0);
        }
        if let Some((_, &(end, pool))) = self.made.range(..=addr).next_back() {
            if addr < end {
                return pool;
            }
        }
        self.dumped_pool(addr).unwrap_or(self.ids.len())
    }

    /// A dumped segment's own pool (its `segment_pool_id`, else the
    /// default), whatever other segments overlap it.
    fn own(&self, s: &Segment) -> usize {
        let id = s.pool_id.unwrap_or(DEFAULT);
        self.ids.binary_search(&id).unwrap_or(0)
    }

    /// The pool of the dump's segment holding `addr`, if one does.
    fn dumped_pool(&self, addr: u64) -> Option<usize> {
        let i = self.dumped.partition_point(|s| s.0 <= addr);
        let (_, end, pool) = *self.dumped.get(i.checked_sub(1)?)?;
        (addr < end).then_some(pool)
    }

    /// A segment entry: the trace's segments follow it.
    fn segment(&mut self, e: &TraceEntry, pool: usize) {
        match e.action() {
            Action::SegmentAlloc | Action::SegmentMap => {
                self.made
                    .insert(e.addr, (e.addr.saturating_add(e.size), pool));
            }
            Action::SegmentFree => {
                self.made.remove(&e.addr);
            }
            _ => {}
        }
    }
}

/// One pool's running bytes (relative to the start) and peaks.
#[derive(Debug, Clone, Copy, Default)]
struct Running {
    allocated: i128,
    reserved: i128,
    allocated_peak: i128,
    reserved_peak: i128,
    /// Allocated bytes where `reserved_peak` is first reached.
    allocated_at_reserved: i128,
    at_device_allocated: i128,
    at_device_reserved: i128,
    /// Bytes live before recording: frees of allocations the trace never
    /// made, blocks the dump holds that no alloc explains.
    pre: i128,
    /// Whether any entry was placed in the pool (only `unknown` can have
    /// none and is then left out).
    touched: bool,
}

/// The pass over one device's trace.
struct Pass {
    places: Places,
    pools: Vec<Running>,
    /// The allocation open at each address: its size and pool.
    open: AddrMap<(u64, usize)>,
    watch: DevicePeaks,
}

impl Pass {
    fn new(places: Places) -> Pass {
        Pass {
            // The last is `unknown`.
            pools: vec![Running::default(); places.ids.len() + 1],
            places,
            open: AddrMap::default(),
            watch: DevicePeaks {
                allocated: None,
                reserved: None,
            },
        }
    }

    /// Applies entry `i` as the device replay's allocator does.
    fn step(&mut self, snap: &Tables, i: usize, e: &TraceEntry) {
        let changed = match e.action() {
            Action::Alloc => {
                let pool = self.places.pool_of(snap, e, e.addr);
                self.open.insert(e.addr, (e.size, pool));
                self.pools[pool].allocated += i128::from(e.size);
                Some(pool)
            }
            Action::FreeCompleted => {
                let (size, pool) = match self.open.remove(&e.addr) {
                    Some(open) => open,
                    None => {
                        let pool = self.places.pool_of(snap, e, e.addr);
                        self.pools[pool].pre += i128::from(e.size);
                        (e.size, pool)
                    }
                };
                self.pools[pool].allocated -= i128::from(size);
                Some(pool)
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                let pool = self.places.pool_of(snap, e, e.addr);
                self.places.segment(e, pool);
                self.pools[pool].reserved += i128::from(e.size);
                Some(pool)
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                let pool = self.places.pool_of(snap, e, e.addr);
                self.places.segment(e, pool);
                self.pools[pool].reserved -= i128::from(e.size);
                Some(pool)
            }
            _ => None,
        };
        if let Some(pool) = changed {
            let p = &mut self.pools[pool];
            p.touched = true;
            p.allocated_peak = p.allocated_peak.max(p.allocated);
            if p.reserved > p.reserved_peak {
                p.reserved_peak = p.reserved;
                p.allocated_at_reserved = p.allocated;
            }
        }
        if self.watch.allocated == Some(i) {
            self.pools
                .iter_mut()
                .for_each(|p| p.at_device_allocated = p.allocated);
        }
        if self.watch.reserved == Some(i) {
            self.pools
                .iter_mut()
                .for_each(|p| p.at_device_reserved = p.reserved);
        }
    }

    /// Adds the constants (memory live before recording, the reserved
    /// bytes at the start) to what the pass followed.
    fn finish(mut self, segments: &[&Segment], kinds: &[PoolKind]) -> Vec<PoolFigures> {
        // Every dumped segment is in its pool's table: none is `unknown`.
        let mut end_reserved = vec![0i128; self.pools.len()];
        for s in segments {
            let pool = self.places.own(s);
            end_reserved[pool] += i128::from(s.total_size);
            for b in &s.blocks {
                if b.state == BlockState::ActiveAllocated && !self.open.contains_key(&b.address) {
                    self.pools[pool].pre += i128::from(b.requested_size);
                }
            }
        }
        let names = names(&self.places.ids, kinds);
        let bytes = |v: i128| u64::try_from(v.max(0)).unwrap_or(u64::MAX);
        let unknown = self.places.ids.len();
        (self.pools.iter().zip(end_reserved).enumerate())
            .filter(|(k, (p, _))| *k < unknown || p.touched)
            .map(|(k, (p, end))| {
                let start = end - p.reserved;
                PoolFigures {
                    name: names.get(k).map_or_else(|| "unknown".into(), Clone::clone),
                    kind: kinds.get(k).copied().unwrap_or(PoolKind::Unknown),
                    id: self.places.ids.get(k).copied(),
                    allocated_peak: bytes(p.pre + p.allocated_peak),
                    reserved_peak: bytes(start + p.reserved_peak),
                    at_allocated_peak: bytes(p.pre + p.at_device_allocated),
                    at_reserved_peak: bytes(start + p.at_device_reserved),
                    cached_free_at_reserved_peak: bytes(
                        (start + p.reserved_peak) - (p.pre + p.allocated_at_reserved),
                    ),
                }
            })
            .collect()
    }
}

/// What a stack's frames say about the pool it allocated from
/// (docs/figures.md#pool-names): the most telling frame wins.
fn stack_kind(snap: &Tables, stack: StackId) -> Option<PoolKind> {
    let mut best = None;
    for &f in snap.stack(stack) {
        let file = snap.frame_file(f).replace('\\', "/");
        let kind = if file.ends_with("cudagraph_trees.py") {
            PoolKind::CudagraphTree
        } else if file.contains("_symmetric_memory") {
            PoolKind::Symmetric
        } else if file.ends_with("torch/cuda/graphs.py") {
            PoolKind::CudaGraph
        } else {
            continue;
        };
        best = best.max(Some(kind));
    }
    best
}

impl Places {
    /// Each pool's kind: the default pool's; else what the allocating
    /// stacks of its segments, blocks and entries tell; else the id's
    /// shape (docs/figures.md#pool-names).
    fn kinds(&self, snap: &Tables, trace: Trace<'_>, segments: &[&Segment]) -> Vec<PoolKind> {
        // One more for `unknown`, whose kind no stack changes.
        let mut told: Vec<Option<PoolKind>> = vec![None; self.ids.len() + 1];
        let mut seen: HashMap<StackId, Option<PoolKind>> = HashMap::new();
        let mut tell = |pool: usize, stack: StackId| {
            if pool == 0 && self.ids[0] == DEFAULT {
                return;
            }
            let kind = *seen.entry(stack).or_insert_with(|| stack_kind(snap, stack));
            told[pool] = told[pool].max(kind);
        };
        for s in segments {
            let pool = self.own(s);
            tell(pool, s.stack);
            s.blocks.iter().for_each(|b| tell(pool, b.stack));
        }
        let mut replay = Places {
            ids: self.ids.clone(),
            dumped: self.dumped.clone(),
            made: BTreeMap::new(),
        };
        for e in trace {
            if matches!(
                e.action(),
                Action::Alloc | Action::SegmentAlloc | Action::SegmentMap
            ) {
                let pool = replay.pool_of(snap, &e, e.addr);
                replay.segment(&e, pool);
                tell(pool, e.stack);
            } else if e.action() == Action::SegmentFree {
                replay.segment(&e, 0);
            }
        }
        told.pop();
        (self.ids.iter().zip(told))
            .map(|(&id, told)| match (id, told) {
                (DEFAULT, _) => PoolKind::Default,
                (_, Some(kind)) => kind,
                ((_, 0), None) => PoolKind::CudaGraph,
                ((0, _), None) => PoolKind::Mempool,
                _ => PoolKind::Pool,
            })
            .collect()
    }
}

/// The pools' names: `default`, else the kind and the id's non-zero half
/// (`cuda-graph-1` for `(1, 0)`, `mempool-2` for `(0, 2)`), both halves
/// when both are non-zero or when two pools would share a name.
fn names(ids: &[(u64, u64)], kinds: &[PoolKind]) -> Vec<String> {
    let short = |&(a, b): &(u64, u64), kind: PoolKind| match (a, b) {
        (0, 0) => kind.id().to_string(),
        (0, n) | (n, 0) => format!("{}-{n}", kind.id()),
        (a, b) => format!("{}-{a}-{b}", kind.id()),
    };
    let first: Vec<String> = ids.iter().zip(kinds).map(|(i, &k)| short(i, k)).collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for n in &first {
        *uses.entry(n.as_str()).or_default() += 1;
    }
    (ids.iter().zip(kinds).enumerate())
        .map(|(k, (&(a, b), kind))| {
            if uses[first[k].as_str()] > 1 {
                format!("{}-{a}-{b}", kind.id())
            } else {
                first[k].clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{names, PoolKind};

    #[test]
    fn a_pool_is_named_by_its_kind_and_the_ids_non_zero_half() {
        let ids = [(0, 0), (0, 2), (1, 0), (3, 4)];
        let kinds = [
            PoolKind::Default,
            PoolKind::Mempool,
            PoolKind::CudaGraph,
            PoolKind::Pool,
        ];
        assert_eq!(
            names(&ids, &kinds),
            ["default", "mempool-2", "cuda-graph-1", "pool-3-4"]
        );
    }

    #[test]
    fn two_pools_that_would_share_a_name_are_named_by_both_halves() {
        // A cudagraph tree of (0, 1) and a graph capture's (1, 0) both
        // recognised as cudagraph trees by their stacks.
        let ids = [(0, 0), (0, 1), (1, 0)];
        let kinds = [
            PoolKind::Default,
            PoolKind::CudagraphTree,
            PoolKind::CudagraphTree,
        ];
        assert_eq!(
            names(&ids, &kinds),
            ["default", "cudagraph-tree-0-1", "cudagraph-tree-1-0"]
        );
    }
}
