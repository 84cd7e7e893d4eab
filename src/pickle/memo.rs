//! The pickle memo: what `BINGET` reads and `MEMOIZE`/`BINPUT` write.
//! A snapshot memoizes every trace-entry dict and many strings (4M slots
//! for 2M entries), so a dense slot is one packed `u64` rather than a
//! 16-byte `Option<Value>`: strings, containers and folded containers (all
//! Python ever memoizes) pack inline, anything else goes to a side table.

use std::collections::HashMap;

use super::value::Value;

const STR: u64 = 1;
const OBJ: u64 = 2;
const FOLDED: u64 = 3;
const BYTES: u64 = 4;
const WIDE: u64 = 5;

/// Dense slots are pre-faulted this many ahead (2 MB).
const PREFAULT_SLOTS: usize = 1 << 18;

#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Dense slots for the usual sequential indices (filled in order, so
    /// without holes)…
    dense: Vec<u64>,
    /// …values that do not pack (ints, floats, None: never written by
    /// Python's pickler, but legal)…
    wide: Vec<Value>,
    /// …and a map for sparse `BINPUT` indices, so a huge index costs nothing.
    sparse: HashMap<u32, Value>,
    /// Filled slots: the index the next `MEMOIZE` writes.
    len: u32,
    /// Times a filled slot was written again with another value (what a
    /// template learned from the memo holds while this stays the same).
    overwrites: u64,
}

#[inline(always)]
fn unpack(p: u64, wide: &[Value]) -> Option<Value> {
    let payload = (p >> 32) as u32;
    let tag = p & 0xff;
    match tag {
        STR => Some(Value::Str(payload)),
        OBJ => Some(Value::Obj(payload)),
        FOLDED => Some(Value::Folded(p.to_le_bytes()[1], payload)),
        BYTES => Some(Value::Bytes(payload)),
        WIDE => Some(wide[payload as usize]),
        _ => None,
    }
}

/// The packed form of a value that packs without the side table.
#[inline(always)]
fn pack_inline(v: Value) -> Option<u64> {
    Some(match v {
        Value::Str(s) => STR | u64::from(s) << 32,
        Value::Obj(id) => OBJ | u64::from(id) << 32,
        Value::Folded(tag, id) => FOLDED | u64::from(tag) << 8 | u64::from(id) << 32,
        Value::Bytes(b) => BYTES | u64::from(b) << 32,
        _ => return None,
    })
}

impl Memo {
    /// Room for `slots` dense slots (pages are touched only as they fill).
    pub(crate) fn with_capacity(slots: usize) -> Memo {
        Memo {
            dense: Vec::with_capacity(slots),
            ..Memo::default()
        }
    }

    /// Filled slots so far.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Slot `index` if it holds a string (the keys a snapshot reads all
    /// the time): one compare, so the common case never goes through the
    /// jump over every kind in [`Memo::get`].
    #[inline(always)]
    pub(crate) fn get_str(&self, index: u32) -> Option<u32> {
        let p = *self.dense.get(index as usize)?;
        (p & 0xff == STR).then_some((p >> 32) as u32)
    }

    #[inline(always)]
    pub(crate) fn get(&self, index: u32) -> Option<Value> {
        match self.dense.get(index as usize) {
            Some(&p) => unpack(p, &self.wide),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&index).copied(),
        }
    }

    fn pack(&mut self, v: Value) -> u64 {
        pack_inline(v).unwrap_or_else(|| {
            self.wide.push(v);
            WIDE | ((self.wide.len() - 1) as u64) << 32
        })
    }

    /// Store `v` in slot `index`.
    #[inline]
    pub(crate) fn put(&mut self, index: u32, v: Value) {
        // The usual case: the next slot, a string or a container.
        if index as usize == self.dense.len() && self.sparse.is_empty() {
            if let Some(p) = pack_inline(v) {
                self.push(p);
                return;
            }
        }
        self.put_any(index, v);
    }

    #[inline]
    fn push(&mut self, p: u64) {
        self.dense.push(p);
        self.len += 1;
        let n = self.dense.len();
        if n.is_multiple_of(PREFAULT_SLOTS) {
            crate::prefault::ahead(&self.dense, n + PREFAULT_SLOTS, n + 2 * PREFAULT_SLOTS);
        }
    }

    /// Times a filled slot was overwritten (by an opcode, not a patch).
    #[inline]
    pub(crate) fn overwrites(&self) -> u64 {
        self.overwrites
    }

    #[inline(never)]
    fn put_any(&mut self, index: u32, v: Value) {
        let i = index as usize;
        if i < self.dense.len() {
            // A filled slot, overwritten: the count stays.
            self.overwrites += 1;
            self.dense[i] = self.pack(v);
        } else if i == self.dense.len()
            && (self.sparse.is_empty() || !self.sparse.contains_key(&index))
        {
            let p = self.pack(v);
            self.push(p);
        } else if self.sparse.insert(index, v).is_none() {
            self.len += 1;
        } else {
            self.overwrites += 1;
        }
    }

    /// Every filled slot, by index (for tests comparing decodes).
    pub(crate) fn dump(&self) -> Vec<(u32, Value)> {
        let mut out: Vec<(u32, Value)> = (0..=u32::MAX)
            .take(self.dense.len())
            .filter_map(|i| Some((i, self.get(i)?)))
            .collect();
        out.extend(self.sparse.iter().map(|(&i, &v)| (i, v)));
        out.sort_by_key(|&(i, _)| i);
        out
    }

    /// Slot `index` now holds `new` where it held `old`.
    /// (The same container in its folded form: not an overwrite.)
    pub(crate) fn patch(&mut self, index: u32, old: Value, new: Value) {
        if self.get(index) == Some(old) {
            let before = self.overwrites;
            self.put(index, new);
            self.overwrites = before;
        }
    }
}
