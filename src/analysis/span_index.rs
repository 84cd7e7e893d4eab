//! The figures of any span of trace entries in time independent of its
//! length: a phase span's peaks and the bytes allocated in it.
//!
//! Annotation spans nest, and a file may open 40,000 of them around the
//! same entries: scanning each span would cost depth × entries. Here the
//! curves are cut into blocks of [`BLOCK`] entries; a sparse table over the
//! block maxima answers the whole blocks of a span in two lookups and at
//! most `2 × BLOCK` entries at its ends are scanned. Memory is about
//! `n / BLOCK × log2(n / BLOCK)` values per curve (8 MB for 2M entries).

use crate::snapshot::{Action, Trace};

use super::observe::Curves;

/// Entries per block.
const BLOCK: usize = 32;

/// Maxima of a curve over any range of whole blocks.
struct BlockMax {
    /// `levels[k][b]`: the maximum of blocks `b .. b + 2^k`.
    levels: Vec<Vec<i64>>,
}

impl BlockMax {
    fn new(values: &[i64]) -> BlockMax {
        let base: Vec<i64> = values
            .chunks(BLOCK)
            .map(|c| c.iter().copied().max().unwrap_or(i64::MIN))
            .collect();
        let mut levels = vec![base];
        let mut width = 1;
        while 2 * width <= levels[0].len() {
            let prev = levels.last().expect("level 0 exists");
            let next: Vec<i64> = (0..prev.len() - width)
                .map(|b| prev[b].max(prev[b + width]))
                .collect();
            levels.push(next);
            width *= 2;
        }
        BlockMax { levels }
    }

    /// The maximum of blocks `lo..hi` (`lo < hi`).
    fn blocks(&self, lo: usize, hi: usize) -> i64 {
        let k = (hi - lo).ilog2() as usize;
        self.levels[k][lo].max(self.levels[k][hi - (1 << k)])
    }

    /// The maximum of `values[from..to]` (`from < to`), `values` being the
    /// curve this was built from.
    fn range(&self, values: &[i64], from: usize, to: usize) -> i64 {
        let (lo, hi) = (from.div_ceil(BLOCK), to / BLOCK);
        let scan = |r: std::ops::Range<usize>| values[r].iter().copied().max().unwrap_or(i64::MIN);
        if lo >= hi {
            // Fewer than 2 × BLOCK entries.
            return scan(from..to);
        }
        scan(from..lo * BLOCK)
            .max(self.blocks(lo, hi))
            .max(scan(hi * BLOCK..to))
    }
}

/// A device's trace and curves, indexed for span figures.
pub(crate) struct SpanIndex<'a> {
    pub(crate) trace: Trace<'a>,
    pub(crate) curves: &'a Curves,
    allocated: BlockMax,
    dynamic: BlockMax,
    /// `alloc_before[b]`: bytes of the `alloc` entries before block `b`
    /// (wrapping, like the sum it replaces).
    alloc_before: Vec<u64>,
}

fn alloc_bytes(entries: Trace<'_>) -> u64 {
    entries
        .iter()
        .filter(|e| e.action() == Action::Alloc)
        .fold(0u64, |s, e| s.wrapping_add(e.size))
}

impl<'a> SpanIndex<'a> {
    pub(crate) fn new(trace: Trace<'a>, curves: &'a Curves) -> SpanIndex<'a> {
        let mut alloc_before = Vec::with_capacity(trace.len() / BLOCK + 2);
        let mut sum = 0u64;
        alloc_before.push(0);
        for c in trace.chunks(BLOCK) {
            sum = sum.wrapping_add(alloc_bytes(c));
            alloc_before.push(sum);
        }
        SpanIndex {
            trace,
            curves,
            allocated: BlockMax::new(&curves.allocated),
            dynamic: BlockMax::new(&curves.dynamic),
            alloc_before,
        }
    }

    /// Highest allocated and dynamic bytes over entries `from..to`, the
    /// state before `from` included.
    pub(crate) fn peaks(&self, from: usize, to: usize) -> (i64, i64) {
        let c = self.curves;
        let (mut a, mut d) = (c.allocated_after(from), c.dynamic_after(from));
        if from < to {
            a = a.max(self.allocated.range(&c.allocated, from, to));
            d = d.max(self.dynamic.range(&c.dynamic, from, to));
        }
        (a, d)
    }

    /// Bytes of the `alloc` entries in `from..to`.
    pub(crate) fn allocated_during(&self, from: usize, to: usize) -> u64 {
        let (lo, hi) = (from.div_ceil(BLOCK), to / BLOCK);
        if lo >= hi {
            return alloc_bytes(self.trace.slice(from..to.max(from)));
        }
        alloc_bytes(self.trace.slice(from..lo * BLOCK))
            .wrapping_add(self.alloc_before[hi].wrapping_sub(self.alloc_before[lo]))
            .wrapping_add(alloc_bytes(self.trace.slice(hi * BLOCK..to)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Entries, TraceEntry};
    use crate::snapshot::{NO_CONTEXT, NO_TIME};

    fn entry(action: Action, size: u64) -> TraceEntry {
        TraceEntry {
            addr: 0,
            size,
            time_us: NO_TIME,
            stack: crate::snapshot::StackId::default(),
            context: NO_CONTEXT,
            pool: crate::snapshot::NO_POOL,
            meta: crate::snapshot::NO_META,
            action: action.into(),
        }
    }

    #[test]
    fn every_span_agrees_with_a_plain_scan() {
        // A pseudo-random walk long enough for several levels of blocks.
        let n = 700;
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let trace: Vec<TraceEntry> = (0..n)
            .map(|_| {
                let a = if next() % 3 == 0 {
                    Action::FreeCompleted
                } else {
                    Action::Alloc
                };
                entry(a, next() % 1000)
            })
            .collect();
        let allocated: Vec<i64> = (0..n)
            .map(|_| i64::try_from(next() % 10_000).unwrap() - 5000)
            .collect();
        let dynamic: Vec<i64> = (0..n)
            .map(|_| i64::try_from(next() % 10_000).unwrap())
            .collect();
        let curves = Curves {
            allocated_start: 7,
            allocated,
            dynamic,
        };
        let packed = Entries::from(&trace[..]);
        let index = SpanIndex::new(packed.view(), &curves);
        for from in (0..=n).step_by(7) {
            for to in (from..=n).step_by(5) {
                let a = curves.allocated[from..to]
                    .iter()
                    .copied()
                    .fold(curves.allocated_after(from), i64::max);
                let d = curves.dynamic[from..to]
                    .iter()
                    .copied()
                    .fold(curves.dynamic_after(from), i64::max);
                assert_eq!(index.peaks(from, to), (a, d), "{from}..{to}");
                assert_eq!(
                    index.allocated_during(from, to),
                    trace[from..to]
                        .iter()
                        .filter(|e| e.action() == Action::Alloc)
                        .fold(0u64, |s, e| s.wrapping_add(e.size)),
                    "{from}..{to}"
                );
            }
        }
    }
}
