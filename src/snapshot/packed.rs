//! The trace entries of a snapshot, packed (issue 33): 20 bytes a record
//! instead of a [`TraceEntry`]'s 40, so a 2M-entry trace holds 40 MB, not
//! 80 MB, in a decode and in the MCP server's cache.
//!
//! A record is the action code (one byte), `addr` in 48 bits, `size` in
//! 32, `time_us` as a signed 32-bit offset from its block's base (one base
//! per 256 records), the stack id in 24 bits, and the index of the entry's
//! (`compile_context`, `user_metadata`, `pool_id`) triple among the
//! trace's distinct triples (torch ≥ 2.8 writes the same context on every
//! entry). Nearly every real entry fits: device addresses are 48-bit, a
//! trace interns far fewer than 16M stacks, 256 neighbouring entries lie
//! within 35 minutes, and only the rare allocation or segment of 4 GiB or
//! more does not. An entry that does not fit (that one, or a crafted
//! file's) is kept whole in a side table, and its record holds its index
//! there; reading it back gives the same entry.
//!
//! Reading is by position, as from a slice: [`Trace`] is a view of a range
//! of records, which every analysis pass reads.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use foldhash::fast::RandomState;

use super::entry::{ActionCode, StackId, TraceEntry, NO_META, NO_TIME};

/// Bytes a packed record takes.
const RECORD: usize = 20;
type Record = [u8; RECORD];

/// Records per time base.
const BLOCK_SHIFT: u32 = 8;
/// The action byte of a record kept whole in the side table.
const ESCAPED: u8 = u8::MAX;
/// The time offset of an entry without `time_us`.
const NO_OFFSET: i32 = i32::MIN;
const ADDR_BITS: u32 = 48;
const SIZE_BITS: u32 = 32;
const STACK_BITS: u32 = 24;

/// A (`compile_context`, `user_metadata`, `pool`) triple.
type Extra = (u32, u32, u16);

/// A trace's entries, packed; pushed in order and reordered in place by
/// [`Entries::set`].
#[derive(Default, Clone)]
pub struct Entries {
    records: Vec<Record>,
    /// Per block of `1 << BLOCK_SHIFT` records, the time offsets' base
    /// ([`NO_TIME`] until a timed entry is packed there).
    bases: Vec<i64>,
    /// The distinct triples, by index (at most `u16::MAX + 1`).
    extras: Vec<Extra>,
    extra_ids: HashMap<Extra, u16, RandomState>,
    /// Entries that do not fit a record, whole, each once…
    side: Vec<TraceEntry>,
    /// …by their index there: a crafted list that repeats an entry dict
    /// that does not fit a million times holds it once.
    side_ids: HashMap<TraceEntry, u32, RandomState>,
}

/// Written as the list of entries it holds, as a `Vec<TraceEntry>` was.
impl fmt::Debug for Entries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

impl Entries {
    /// Room for `n` records, reserved (pages are touched only as records
    /// are written).
    pub(crate) fn with_capacity(n: usize) -> Entries {
        Entries {
            records: Vec::with_capacity(n),
            bases: Vec::with_capacity(n >> BLOCK_SHIFT),
            ..Entries::default()
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Appends `e`.
    #[inline]
    pub(crate) fn push(&mut self, e: TraceEntry) {
        let i = self.records.len();
        if i.trailing_zeros() >= BLOCK_SHIFT {
            self.bases.push(NO_TIME);
        }
        let r = self.pack(i, e);
        self.records.push(r);
    }

    /// Replaces entry `i` (below [`Entries::len`]).
    pub(crate) fn set(&mut self, i: usize, e: TraceEntry) {
        let r = self.pack(i, e);
        self.records[i] = r;
    }

    /// Entry `i`, if there is one.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<TraceEntry> {
        self.records.get(i).map(|r| self.unpack(i, r))
    }

    /// Entry `i` of a position a view or its iterator checked.
    #[inline(always)]
    fn entry(&self, i: usize) -> TraceEntry {
        self.unpack(i, &self.records[i])
    }

    /// Every entry, in order, by value.
    pub(crate) fn iter(&self) -> Iter<'_> {
        self.view().iter()
    }

    /// Every entry, in order.
    pub(crate) fn view(&self) -> Trace<'_> {
        self.range(0..self.records.len())
    }

    /// Entries `range`; panics outside [`Entries::len`], as a slice would.
    pub(crate) fn range(&self, range: Range<usize>) -> Trace<'_> {
        assert!(
            range.start <= range.end && range.end <= self.records.len(),
            "trace range {range:?} out of {}",
            self.records.len()
        );
        Trace {
            entries: self,
            start: range.start,
            end: range.end,
        }
    }

    /// The bytes its tables hold on the heap, reserved room included (the
    /// MCP cache's weight).
    #[cfg(feature = "mcp")]
    pub(crate) fn heap_bytes(&self) -> u64 {
        let bytes = |n: usize, each: usize| n.saturating_mul(each) as u64;
        [
            bytes(self.records.capacity(), RECORD),
            bytes(self.bases.capacity(), 8),
            bytes(self.extras.capacity(), std::mem::size_of::<Extra>()),
            // A map slot is its key, its value and a control byte.
            bytes(self.extra_ids.capacity(), std::mem::size_of::<Extra>() + 3),
            bytes(self.side.capacity(), std::mem::size_of::<TraceEntry>()),
            bytes(
                self.side_ids.capacity(),
                std::mem::size_of::<TraceEntry>() + 5,
            ),
        ]
        .into_iter()
        .fold(0, u64::saturating_add)
    }

    /// Ask for the records' pages from `from` to `to` ahead of use
    /// ([`crate::prefault`]).
    pub(crate) fn prefault(&self, from: usize, to: usize) {
        crate::prefault::ahead(&self.records, from, to);
    }

    fn pack(&mut self, i: usize, e: TraceEntry) -> Record {
        match self.fit(i, &e) {
            Some(r) => r,
            None => self.escape(e),
        }
    }

    /// The record of `e` at position `i`, if every field fits.
    #[inline]
    fn fit(&mut self, i: usize, e: &TraceEntry) -> Option<Record> {
        let action = u8::try_from(e.action.raw())
            .ok()
            .filter(|&a| a != ESCAPED)?;
        if e.addr >> ADDR_BITS != 0 || e.size >> SIZE_BITS != 0 || e.stack.raw() >> STACK_BITS != 0
        {
            return None;
        }
        let offset = self.offset(i >> BLOCK_SHIFT, e.time_us)?;
        let extra = self.extra((e.context, e.meta, e.pool))?;
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&(u64::from(action) | e.addr << 8).to_le_bytes());
        // Byte 7 is past the 48-bit address, so zero: `size` starts there.
        r[7..11].copy_from_slice(&e.size.to_le_bytes()[..4]);
        r[11..15].copy_from_slice(&offset.to_le_bytes());
        r[15..18].copy_from_slice(&e.stack.raw().to_le_bytes()[..3]);
        r[18..20].copy_from_slice(&extra.to_le_bytes());
        Some(r)
    }

    /// `time` as an offset from block `b`'s base, setting the base at the
    /// block's first timed entry.
    #[inline]
    fn offset(&mut self, b: usize, time: i64) -> Option<i32> {
        if time == NO_TIME {
            return Some(NO_OFFSET);
        }
        let base = &mut self.bases[b];
        if *base == NO_TIME {
            *base = time;
        }
        i32::try_from(time.checked_sub(*base)?)
            .ok()
            .filter(|&o| o != NO_OFFSET)
    }

    /// The index of a triple, adding it while there is room.
    #[inline]
    fn extra(&mut self, x: Extra) -> Option<u16> {
        if self.extras.last() == Some(&x) {
            return u16::try_from(self.extras.len() - 1).ok();
        }
        if let Some(&k) = self.extra_ids.get(&x) {
            return Some(k);
        }
        let k = u16::try_from(self.extras.len()).ok()?;
        self.extras.push(x);
        self.extra_ids.insert(x, k);
        Some(k)
    }

    /// A record that points at `e` kept whole.
    #[cold]
    fn escape(&mut self, e: TraceEntry) -> Record {
        let k = match self.side_ids.get(&e) {
            Some(&k) => k,
            None => {
                // At most one side entry per push or set: never past `u32`
                // ids, since the collector refuses more than `u32::MAX`
                // entries.
                let k = u32::try_from(self.side.len()).unwrap_or(u32::MAX);
                self.side.push(e);
                self.side_ids.insert(e, k);
                k
            }
        };
        let mut r = [0u8; RECORD];
        r[0] = ESCAPED;
        r[1..5].copy_from_slice(&k.to_le_bytes());
        r
    }

    #[inline(always)]
    fn unpack(&self, i: usize, r: &Record) -> TraceEntry {
        if r[0] == ESCAPED {
            return self.escaped(r);
        }
        let word = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().expect("8 bytes"));
        let quad = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
        let head = word(0);
        let offset = quad(11).cast_signed();
        // Read with `get`, never indexing: a pass that uses no time or no
        // triple then compiles to no load of them (every record's index and
        // block were checked when it was packed).
        let extra = usize::from(u16::from_le_bytes([r[18], r[19]]));
        let (context, meta, pool) = self.extras.get(extra).copied().unwrap_or_default();
        let base = self
            .bases
            .get(i >> BLOCK_SHIFT)
            .copied()
            .unwrap_or_default();
        TraceEntry {
            addr: (head >> 8) & ((1 << ADDR_BITS) - 1),
            size: u64::from(quad(7)),
            time_us: if offset == NO_OFFSET {
                NO_TIME
            } else {
                base.wrapping_add(i64::from(offset))
            },
            stack: StackId::from_raw(quad(15) & ((1 << STACK_BITS) - 1)),
            context,
            meta,
            pool,
            action: ActionCode::from_raw(u16::from(r[0])),
        }
    }

    #[cold]
    fn escaped(&self, r: &Record) -> TraceEntry {
        let k = u32::from_le_bytes([r[1], r[2], r[3], r[4]]);
        self.side[k as usize]
    }
}

impl FromIterator<TraceEntry> for Entries {
    fn from_iter<I: IntoIterator<Item = TraceEntry>>(iter: I) -> Entries {
        let mut out = Entries::default();
        for e in iter {
            out.push(e);
        }
        out
    }
}

impl From<&[TraceEntry]> for Entries {
    fn from(entries: &[TraceEntry]) -> Entries {
        entries.iter().copied().collect()
    }
}

/// A range of a snapshot's trace entries, read by position as a slice of
/// [`TraceEntry`] would be (entries are given by value).
#[derive(Clone, Copy)]
pub struct Trace<'a> {
    entries: &'a Entries,
    start: usize,
    end: usize,
}

impl fmt::Debug for Trace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Trace<'a> {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Entry `i` of the view, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<TraceEntry> {
        (i < self.len()).then(|| self.entries.entry(self.start + i))
    }

    /// Entry `i` of the view; panics past its end, as indexing a slice does.
    #[inline]
    #[track_caller]
    pub fn at(&self, i: usize) -> TraceEntry {
        match self.get(i) {
            Some(e) => e,
            None => panic!("trace entry {i} out of {}", self.len()),
        }
    }

    pub fn first(&self) -> Option<TraceEntry> {
        self.get(0)
    }

    pub fn last(&self) -> Option<TraceEntry> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Entries `r` of the view; panics outside it, as slicing does.
    #[track_caller]
    pub fn slice(&self, r: Range<usize>) -> Trace<'a> {
        assert!(
            r.start <= r.end && r.end <= self.len(),
            "trace range {r:?} out of {}",
            self.len()
        );
        Trace {
            entries: self.entries,
            start: self.start + r.start,
            end: self.start + r.end,
        }
    }

    pub fn iter(&self) -> Iter<'a> {
        Iter {
            entries: self.entries,
            range: self.start..self.end,
        }
    }

    /// The view in consecutive views of `n` entries (the last shorter), as
    /// a slice's `chunks`.
    pub fn chunks(&self, n: usize) -> impl Iterator<Item = Trace<'a>> + 'a {
        assert!(n > 0, "chunks of no entries");
        let this = *self;
        (0..self.len())
            .step_by(n)
            .map(move |from| this.slice(from..(from + n).min(this.len())))
    }

    /// False when no entry of the whole trace has `user_metadata` (every
    /// snapshot before torch 2.10): known without reading an entry.
    pub(crate) fn may_have_meta(&self) -> bool {
        self.entries
            .extras
            .iter()
            .any(|&(_, meta, _)| meta != NO_META)
            || self.entries.side.iter().any(|e| e.meta != NO_META)
    }

    /// The entries copied out, for tests and small views.
    pub fn to_vec(&self) -> Vec<TraceEntry> {
        self.iter().collect()
    }
}

impl<'a> IntoIterator for Trace<'a> {
    type Item = TraceEntry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Trace<'a> {
    type Item = TraceEntry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The entries of a [`Trace`], by value, in order.
#[derive(Clone)]
pub struct Iter<'a> {
    entries: &'a Entries,
    range: Range<usize>,
}

impl Iterator for Iter<'_> {
    type Item = TraceEntry;

    #[inline]
    fn next(&mut self) -> Option<TraceEntry> {
        self.range.next().map(|i| self.entries.entry(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }

    #[inline]
    fn nth(&mut self, n: usize) -> Option<TraceEntry> {
        self.range.nth(n).map(|i| self.entries.entry(i))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<TraceEntry> {
        self.range.next_back().map(|i| self.entries.entry(i))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
#[path = "packed_tests.rs"]
mod tests;
