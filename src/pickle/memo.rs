//! The pickle memo: what `BINGET` reads and `MEMOIZE`/`BINPUT` write.
//! A snapshot memoizes every trace-entry dict and many strings (4M slots
//! for 2M entries), so a dense slot is one packed `u32` rather than a
//! 16-byte `Option<Value>`: strings, containers and folded containers (all
//! Python ever memoizes) pack inline below 2^29, anything else goes to a
//! side table.

use std::collections::HashMap;

use super::value::Value;

/// A dense slot: the kind in the low [`KIND_BITS`] bits, the payload (a
/// string, container or folded index, or an index into `wide`) above.
type Slot = u32;
const KIND_BITS: u32 = 3;
const KIND_MASK: Slot = (1 << KIND_BITS) - 1;
/// The largest payload a slot holds; larger ones go to `wide`.
const PAYLOAD_MAX: u32 = u32::MAX >> KIND_BITS;
const STR: Slot = 1;
const OBJ: Slot = 2;
const BYTES: Slot = 3;
/// In `wide`, at the payload; at `PAYLOAD_MAX`, in `far` by slot index.
const WIDE: Slot = 4;
/// `FOLDED + tag` for the folded tags 1 to 3 (a folder's few kinds of
/// record); other tags go to `wide`.
const FOLDED: Slot = 4;
const FOLDED_TAGS: u8 = 3;
/// Values `wide` holds before `far` takes the rest (a few in tests, so
/// both ways are taken).
#[cfg(not(test))]
const WIDE_MAX: u32 = PAYLOAD_MAX;
#[cfg(test)]
const WIDE_MAX: u32 = 4;

/// Dense slots are pre-faulted this many ahead (2 MB).
const PREFAULT_SLOTS: usize = 1 << 19;

#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Dense slots for the usual sequential indices (filled in order, so
    /// without holes), four bytes each (37 MB → 19 MB for torch's 2M-entry
    /// trace, issue 33)…
    dense: Vec<Slot>,
    /// …values that do not pack (ints, floats, None: never written by
    /// Python's pickler, but legal)…
    wide: Vec<Value>,
    /// …and a map for sparse `BINPUT` indices, so a huge index costs nothing…
    sparse: HashMap<u32, Value>,
    /// …and dense slots past `PAYLOAD_MAX` wide values, by index.
    far: HashMap<u32, Value>,
    /// Filled slots: the index the next `MEMOIZE` writes.
    len: u32,
    /// Times a filled slot was written again with another value (what a
    /// template learned from the memo holds while this stays the same).
    overwrites: u64,
}

#[inline(always)]
fn unpack(p: Slot, wide: &[Value]) -> Option<Value> {
    let payload = p >> KIND_BITS;
    match p & KIND_MASK {
        STR => Some(Value::Str(payload)),
        OBJ => Some(Value::Obj(payload)),
        BYTES => Some(Value::Bytes(payload)),
        WIDE => wide.get(payload as usize).copied(),
        // FOLDED + 1 ..= FOLDED + FOLDED_TAGS (the mask keeps it below 8).
        k if k > FOLDED => u8::try_from(k - FOLDED)
            .ok()
            .map(|t| Value::Folded(t, payload)),
        _ => None,
    }
}

/// The packed form of a value that packs without the side table.
#[inline(always)]
fn pack_inline(v: Value) -> Option<Slot> {
    let (kind, payload) = match v {
        Value::Str(s) => (STR, s),
        Value::Obj(id) => (OBJ, id),
        Value::Bytes(b) => (BYTES, b),
        Value::Folded(tag, id) if (1..=FOLDED_TAGS).contains(&tag) => {
            (FOLDED + Slot::from(tag), id)
        }
        _ => return None,
    };
    (payload <= PAYLOAD_MAX).then_some(kind | payload << KIND_BITS)
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
        (p & KIND_MASK == STR).then_some(p >> KIND_BITS)
    }

    #[inline(always)]
    pub(crate) fn get(&self, index: u32) -> Option<Value> {
        match self.dense.get(index as usize) {
            Some(&p) if p == WIDE | PAYLOAD_MAX << KIND_BITS => self.far.get(&index).copied(),
            Some(&p) => unpack(p, &self.wide),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&index).copied(),
        }
    }

    /// `v` packed for slot `index`, through `wide` (or `far`) if need be.
    fn pack(&mut self, index: u32, v: Value) -> Slot {
        if let Some(p) = pack_inline(v) {
            return p;
        }
        match u32::try_from(self.wide.len()) {
            Ok(w) if w < WIDE_MAX => {
                self.wide.push(v);
                WIDE | w << KIND_BITS
            }
            _ => {
                self.far.insert(index, v);
                WIDE | PAYLOAD_MAX << KIND_BITS
            }
        }
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
    fn push(&mut self, p: Slot) {
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
            self.dense[i] = self.pack(index, v);
        } else if i == self.dense.len()
            && (self.sparse.is_empty() || !self.sparse.contains_key(&index))
        {
            let p = self.pack(index, v);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_reads_back_from_the_slot_it_was_put_in() {
        let big = PAYLOAD_MAX + 1;
        let values = [
            Value::Str(0),
            Value::Str(PAYLOAD_MAX),
            Value::Str(big),
            Value::Obj(7),
            Value::Obj(u32::MAX),
            Value::Bytes(3),
            Value::Folded(1, 5),
            Value::Folded(3, PAYLOAD_MAX),
            Value::Folded(3, big),
            Value::Folded(4, 9),
            Value::Folded(0, 9),
            Value::Int(-1),
            Value::None,
            Value::Float(0.5),
        ];
        // Eight values do not pack: four go to `wide`, four to `far`.
        let mut m = Memo::default();
        for (i, &v) in values.iter().enumerate() {
            m.put(u32::try_from(i).unwrap(), v);
        }
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(m.get(u32::try_from(i).unwrap()), Some(v), "slot {i}");
        }
        assert_eq!(m.get_str(1), Some(PAYLOAD_MAX));
        assert_eq!(
            m.get_str(2),
            None,
            "a wide string is not read as a packed one"
        );
        assert_eq!(m.len(), u32::try_from(values.len()).unwrap());
        assert_eq!((m.wide.len(), m.far.len()), (4, 4));
        assert_eq!(m.overwrites(), 0);
        // Overwritten with a packed value, then a wide one: each reads back.
        m.put(2, Value::Str(4));
        m.put(0, Value::Int(12));
        assert_eq!(
            (m.get(2), m.get(0)),
            (Some(Value::Str(4)), Some(Value::Int(12)))
        );
        assert_eq!(m.overwrites(), 2);
    }
}
