//! Fast path for the opcode run that dominates every snapshot: a dict of
//! scalars and memo references (`EMPTY_DICT MEMOIZE MARK (key value)*
//! SETITEMS`), a million trace entries in a large file. The run is parsed,
//! its memo reads resolved and its memo stores placed, in one tight loop
//! over the buffered bytes with no effect on the memo until it is known to
//! be complete and plain; anything else (a nested container, an argument
//! crossing the buffer, a refused opcode, a memo read of a slot the run
//! itself writes) declines and the general machine decodes the same bytes
//! with the same result.
//!
//! A value may also be a list of memo reads (`EMPTY_LIST MEMOIZE? (MARK
//! get* APPENDS | get APPEND)*`): torch writes each allocation's `frames`
//! so, its frame dicts read from the memo. Its items are read into a
//! reused buffer, and the folder sees them before any arena list exists.
//! A list whose bytes were seen before is not read at all: its end is
//! found and its reads checked, and the folder's earlier answer is asked
//! of the machine's cache ([`Env::cached_list`], `list_cache.rs`).

use std::ops::Range;

use super::opcodes as op;
use super::value::{StrId, Value};

/// Longest run considered (bytes); longer dicts take the general path.
pub(crate) const WINDOW: usize = 4096;
/// Most fields a template reads (a folder numbers its fields below this).
pub const MAX_FIELDS: usize = 16;
/// Most items considered; wider dicts take the general path.
const MAX_ITEMS: usize = 64;

/// What the run needs from the machine while it parses.
pub(crate) trait Env {
    /// The memo slot `index`, if filled.
    fn memo(&self, index: u32) -> Option<Value>;
    /// The memo slot `index` if it holds a string (a fast first try).
    fn memo_str(&self, index: u32) -> Option<StrId>;
    /// Intern a new string (harmless if the run later declines).
    fn intern(&mut self, bytes: &[u8]) -> StrId;
    /// What the folder answered for a list of these bytes (after its memo
    /// store) under `key`, while the memo holds what it held then.
    fn cached_list(&self, key: Value, body: &[u8]) -> Option<Value>;
}

/// The parsed run, ready to commit.
#[derive(Debug, Default)]
pub(crate) struct FlatDict {
    /// The memo index the dict itself is stored under, if any.
    pub(crate) dict_memo: Option<u32>,
    /// The items, memo reads resolved.
    pub(crate) items: Vec<(Value, Value)>,
    /// Memo stores of the run's strings, in stream order.
    pub(crate) stores: Vec<(u32, Value)>,
    /// Bytes consumed after `EMPTY_DICT`, up to and including `SETITEMS`.
    pub(crate) len: usize,
    /// The values that are lists of memo reads, in stream order…
    pub(crate) lists: Vec<FlatList>,
    /// …and their items, one after the other…
    pub(crate) list_values: Vec<Value>,
    /// …and their bytes after the memo store (to cache the answer).
    pub(crate) list_bytes: Vec<u8>,
    /// Where each item's key lies in the window (to learn a template).
    pub(crate) key_spans: Vec<Range<usize>>,
    /// Read by a template: the values by field ([`MAX_FIELDS`] at most),
    /// and a bit per field present.
    pub(crate) record: [Value; MAX_FIELDS],
    pub(crate) present: u32,
    /// Read by a template: the memo had `floor` filled slots before the
    /// run, every store of the run is a new slot at or above it, and a
    /// read must be below it (`written`).
    floor: Option<u32>,
}

/// A list of memo reads that is the value of one of the run's items.
#[derive(Debug, Clone)]
pub(crate) struct FlatList {
    /// Which item's value it is (a placeholder there until committed).
    pub(crate) item: usize,
    /// Which of `stores` is its memo slot (a placeholder value there).
    pub(crate) store: Option<usize>,
    /// The key it is the value of.
    pub(crate) key: Value,
    /// Its items in `list_values` (none when `cached`).
    pub(crate) values: Range<usize>,
    /// Its bytes in `list_bytes`.
    pub(crate) bytes: Range<usize>,
    /// The folder's answer for the same bytes, cached: no item was read.
    pub(crate) cached: Option<Value>,
}

/// Whether `w[i..]` starts with the `len` bytes packed in `key`: one
/// load and compare, not a `memcmp` call, where eight bytes are at hand.
#[inline(always)]
fn key_at(w: &[u8], i: usize, key: u64, len: usize) -> bool {
    match w.get(i..i + 8) {
        Some(b) => {
            let mask = u64::MAX >> (64 - 8 * len);
            let here = u64::from_le_bytes(b.try_into().expect("eight bytes"));
            here & mask == key
        }
        None => w
            .get(i..i + len)
            .is_some_and(|b| b == &key.to_le_bytes()[..len]),
    }
}

#[inline(always)]
fn u32_at(w: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(w.get(i..i + 4)?.try_into().ok()?))
}

/// Index of an optional memo store at `w[*i]`, numbered as `memo_put`
/// will number it: a `MEMOIZE` takes the count of filled slots, and the
/// count grows when a slot is filled for the first time.
#[inline(always)]
fn memo_store<E: Env>(
    w: &[u8],
    i: &mut usize,
    count: &mut u32,
    env: &E,
    out: &FlatDict,
) -> Option<Option<u32>> {
    let index = match *w.get(*i)? {
        op::MEMOIZE => {
            *i += 1;
            *count
        }
        op::BINPUT => {
            let idx = u32::from(*w.get(*i + 1)?);
            *i += 2;
            idx
        }
        op::LONG_BINPUT => {
            let idx = u32_at(w, *i + 1)?;
            *i += 5;
            idx
        }
        _ => return Some(None),
    };
    if let Some(floor) = out.floor {
        // A template's run only fills new slots, in order.
        if index != *count || index < floor {
            return None;
        }
        *count += 1;
    } else if !written(out, index) && env.memo(index).is_none() {
        *count += 1;
    }
    Some(Some(index))
}

/// Whether the run itself stores into memo slot `index`.
#[inline(always)]
fn written(out: &FlatDict, index: u32) -> bool {
    match out.floor {
        Some(floor) => index >= floor,
        None => out.dict_memo == Some(index) || out.stores.iter().any(|&(i, _)| i == index),
    }
}

/// Just past a memo read at `w[i]` of a slot the run does not write, not
/// resolved (a cached list's items).
#[inline(always)]
fn read_past(w: &[u8], i: usize, out: &FlatDict) -> Option<usize> {
    let (index, len) = match *w.get(i)? {
        op::BINGET => (u32::from(*w.get(i + 1)?), 2),
        op::LONG_BINGET => (u32_at(w, i + 1)?, 5),
        _ => return None,
    };
    (!written(out, index)).then_some(i + len)
}

/// The end of the list body at `w[at..]` (after its memo store), walked
/// as [`list`] walks it, every read checked as `list` checks it but
/// resolved only where the bytes alone cannot tell (the read that ends the
/// list): `None` where `list` might decline.
fn list_end<E: Env>(w: &[u8], at: usize, env: &E, out: &FlatDict) -> Option<usize> {
    let mut i = at;
    loop {
        match *w.get(i)? {
            op::MARK => {
                i += 1;
                while *w.get(i)? != op::APPENDS {
                    i = read_past(w, i, out)?;
                }
                i += 1;
            }
            op::BINGET | op::LONG_BINGET => {
                let j = read_past(w, i, out)?;
                if w.get(j) != Some(&op::APPEND) {
                    memo_read(w, &mut i.clone(), env, out)?;
                    return Some(i);
                }
                i = j + 1;
            }
            _ => return Some(i),
        }
    }
}

/// A memo read (`BINGET`/`LONG_BINGET`) at `w[*i]` of a filled slot that
/// the run does not write and that holds no unfolded container.
#[inline(always)]
fn memo_read<E: Env>(w: &[u8], i: &mut usize, env: &E, out: &FlatDict) -> Option<Value> {
    let (index, len) = match *w.get(*i)? {
        op::BINGET => (u32::from(*w.get(*i + 1)?), 2),
        op::LONG_BINGET => (u32_at(w, *i + 1)?, 5),
        _ => return None,
    };
    if written(out, index) {
        return None;
    }
    match env.memo(index)? {
        Value::Obj(_) => None,
        v => {
            *i += len;
            Some(v)
        }
    }
}

/// The list at `w[*i]` (`EMPTY_LIST`), the value under `key` of the item
/// about to be pushed: its memo store and its memo reads, or the folder's
/// cached answer for its bytes; `None` declines.
fn list<E: Env>(
    w: &[u8],
    i: &mut usize,
    count: &mut u32,
    env: &E,
    out: &mut FlatDict,
    (item, key): (usize, Value),
) -> Option<()> {
    *i += 1;
    let store = memo_store(w, i, count, env, out)?.map(|index| {
        out.stores.push((index, Value::None));
        out.stores.len() - 1
    });
    let at = *i;
    let start = out.list_values.len();
    let mut entry = FlatList {
        item,
        store,
        key,
        values: start..start,
        bytes: 0..0,
        cached: None,
    };
    if let Some(end) = list_end(w, at, env, out) {
        let body = w.get(at..end)?;
        entry.cached = env.cached_list(key, body);
        if entry.cached.is_some() {
            *i = end;
            out.lists.push(entry);
            return Some(());
        }
        let from = out.list_bytes.len();
        out.list_bytes.extend_from_slice(body);
        entry.bytes = from..out.list_bytes.len();
    }
    list_items(w, i, env, out)?;
    entry.values = start..out.list_values.len();
    out.lists.push(entry);
    Some(())
}

/// The items of the list body at `w[*i]`, read from the memo into
/// `list_values`; `None` declines.
fn list_items<E: Env>(w: &[u8], i: &mut usize, env: &E, out: &mut FlatDict) -> Option<()> {
    loop {
        match *w.get(*i)? {
            op::MARK => {
                *i += 1;
                while *w.get(*i)? != op::APPENDS {
                    let v = memo_read(w, i, env, out)?;
                    out.list_values.push(v);
                }
                *i += 1;
            }
            op::BINGET | op::LONG_BINGET => {
                // One item and APPEND, or the next key after an empty list.
                let mut j = *i;
                let v = memo_read(w, &mut j, env, out)?;
                if w.get(j) != Some(&op::APPEND) {
                    return Some(());
                }
                out.list_values.push(v);
                *i = j + 1;
            }
            _ => return Some(()),
        }
    }
}

/// One key or value at `w[*i]`; `None` declines the fast path.
#[inline(always)]
fn value<E: Env>(
    w: &[u8],
    i: &mut usize,
    count: &mut u32,
    env: &mut E,
    out: &mut FlatDict,
) -> Option<Value> {
    let at = *i;
    let code = *w.get(at)?;
    let (v, len) = match code {
        op::BINGET | op::LONG_BINGET => {
            let (index, len) = if code == op::BINGET {
                (u32::from(*w.get(at + 1)?), 2)
            } else {
                (u32_at(w, at + 1)?, 5)
            };
            if written(out, index) {
                return None;
            }
            match env.memo_str(index) {
                Some(id) => (Value::Str(id), len),
                None => match env.memo(index) {
                    Some(v) if !matches!(v, Value::Obj(_)) => (v, len),
                    _ => return None,
                },
            }
        }
        op::SHORT_BINUNICODE | op::BINUNICODE => {
            let (start, n) = if code == op::SHORT_BINUNICODE {
                (at + 2, *w.get(at + 1)? as usize)
            } else {
                (at + 5, u32_at(w, at + 1)? as usize)
            };
            let bytes = w.get(start..start.checked_add(n)?)?;
            let v = Value::Str(env.intern(bytes));
            *i = start + n;
            if let Some(index) = memo_store(w, i, count, env, out)? {
                out.stores.push((index, v));
            }
            return Some(v);
        }
        op::BININT1 => (Value::Int(i64::from(*w.get(at + 1)?)), 2),
        op::BININT2 => {
            let b: [u8; 2] = w.get(at + 1..at + 3)?.try_into().ok()?;
            (Value::Int(i64::from(u16::from_le_bytes(b))), 3)
        }
        op::BININT => (Value::Int(i64::from(u32_at(w, at + 1)?.cast_signed())), 5),
        op::LONG1 => {
            let n = *w.get(at + 1)? as usize;
            if n > 8 {
                return None;
            }
            let v = match w.get(at + 2..at + 10) {
                // Eight bytes at hand: one load, no copy loop.
                Some(b) if n > 0 => {
                    let raw = u64::from_le_bytes(b.try_into().ok()?);
                    // n is 1..=8 (checked above): shift the top byte to bit 63,
                    // then an arithmetic shift back extends its sign.
                    let shift = 64 - 8 * n;
                    (raw << shift).cast_signed() >> shift
                }
                // Fewer than eight bytes left in the window, or none.
                _ => {
                    let v = super::long::long_to_i128(w.get(at + 2..at + 2 + n)?)?;
                    i64::try_from(v).ok()?
                }
            };
            (Value::Int(v), 2 + n)
        }
        op::NEWTRUE => (Value::Bool(true), 1),
        op::NEWFALSE => (Value::Bool(false), 1),
        op::NONE => (Value::None, 1),
        op::BINFLOAT => {
            let b: [u8; 8] = w.get(at + 1..at + 9)?.try_into().ok()?;
            (Value::Float(f64::from_be_bytes(b)), 9)
        }
        _ => return None,
    };
    if at + len > w.len() {
        return None;
    }
    *i = at + len;
    Some(v)
}

/// Empty `out` for a run read with `floor` (a template's) or without,
/// and read the dict's memo store and its `MARK`: where the items start
/// and the memo count after the store; `None` declines.
#[inline(always)]
fn start<E: Env>(
    w: &[u8],
    memo_len: u32,
    floor: Option<u32>,
    env: &mut E,
    out: &mut FlatDict,
) -> Option<(usize, u32)> {
    out.items.clear();
    out.stores.clear();
    out.lists.clear();
    out.list_values.clear();
    out.list_bytes.clear();
    out.key_spans.clear();
    out.dict_memo = None;
    out.floor = floor;
    let mut count = memo_len;
    let mut i = 0;
    out.dict_memo = memo_store(w, &mut i, &mut count, env, out)?;
    if w.get(i) != Some(&op::MARK) {
        return None;
    }
    Some((i + 1, count))
}

/// Parse the run after an `EMPTY_DICT` into `out`, with the memo holding
/// `memo_len` filled slots; false declines (and nothing was changed but
/// strings interned).
pub(crate) fn parse<E: Env>(w: &[u8], memo_len: u32, env: &mut E, out: &mut FlatDict) -> bool {
    let Some((mut i, mut count)) = start(w, memo_len, None, env, out) else {
        return false;
    };
    loop {
        if w.get(i) == Some(&op::SETITEMS) {
            out.len = i + 1;
            return true;
        }
        if out.items.len() >= MAX_ITEMS {
            return false;
        }
        let key_at = i;
        let Some(k) = value(w, &mut i, &mut count, env, out) else {
            return false;
        };
        out.key_spans.push(key_at..i);
        if w.get(i) == Some(&op::EMPTY_LIST) {
            if list(w, &mut i, &mut count, env, out, (out.items.len(), k)).is_none() {
                return false;
            }
            out.items.push((k, Value::None));
            continue;
        }
        let Some(v) = value(w, &mut i, &mut count, env, out) else {
            return false;
        };
        out.items.push((k, v));
    }
}

/// A dict shape learned from one record the folder read (entry
/// templates, issue 33): the bytes of its keys, all memo reads, and the
/// field the folder reads each as. A later dict whose keys are the same
/// bytes is read by position: no key is decoded or looked up again.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Per item, its key's bytes packed little-endian (a memo read is 2 or
    /// 5 bytes), their count, and the key…
    items: Box<[(u64, usize, Value)]>,
    /// …and the field it is read as.
    fields: Box<[u8]>,
}

impl Template {
    /// The template of the run just parsed into `out` from `w`, its items
    /// read as `fields`; `None` unless every key is a memo read (a fresh
    /// key string cannot repeat byte for byte).
    pub(crate) fn learn(w: &[u8], out: &FlatDict, fields: &[u8]) -> Option<Template> {
        if fields.len() != out.items.len() || out.key_spans.len() != fields.len() {
            return None;
        }
        let mut items = Vec::with_capacity(fields.len());
        for (span, &(k, _)) in out.key_spans.iter().zip(&out.items) {
            let bytes = w.get(span.clone())?;
            if !matches!(bytes.first(), Some(&op::BINGET | &op::LONG_BINGET)) || bytes.len() > 8 {
                return None;
            }
            let mut packed = [0u8; 8];
            packed[..bytes.len()].copy_from_slice(bytes);
            items.push((u64::from_le_bytes(packed), bytes.len(), k));
        }
        Some(Template {
            items: items.into(),
            fields: fields.into(),
        })
    }

    /// Parse the run after an `EMPTY_DICT` by this template into `out`
    /// (as [`parse`] would, keys resolved from the template); false
    /// declines, and [`parse`] decodes the same bytes.
    pub(crate) fn parse<E: Env>(
        &self,
        w: &[u8],
        memo_len: u32,
        env: &mut E,
        out: &mut FlatDict,
    ) -> bool {
        let Some((mut i, mut count)) = start(w, memo_len, Some(memo_len), env, out) else {
            return false;
        };
        out.present = 0;
        for (&(key, len, k), &f) in self.items.iter().zip(self.fields.iter()) {
            if !key_at(w, i, key, len) {
                return false;
            }
            i += len;
            let field = usize::from(f);
            if w.get(i) == Some(&op::EMPTY_LIST) {
                if list(w, &mut i, &mut count, env, out, (field, k)).is_none() {
                    return false;
                }
                continue;
            }
            let Some(v) = value(w, &mut i, &mut count, env, out) else {
                return false;
            };
            if let Some(slot) = out.record.get_mut(field) {
                *slot = v;
                out.present |= 1 << field;
            }
        }
        if w.get(i) != Some(&op::SETITEMS) {
            return false;
        }
        out.len = i + 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::pickle::long::long_to_i128;

    #[test]
    fn long1_in_a_flat_dict_reads_every_width_and_sign() {
        use crate::pickle::{decode, KeepAll, Value};
        // {'k': LONG1 n bytes} for widths 0..=8, values at both signs,
        // each followed by bytes that must not leak into the value: with
        // trailing bytes after STOP the eight-byte load is taken, without
        // them the short tail of the window.
        for (n, trailing) in (0..=8usize).flat_map(|n| [(n, 0), (n, 8)]) {
            for fill in [0x00u8, 0x7f, 0x80, 0xff, 0x5a] {
                let mut arg = vec![fill; n];
                if n > 0 {
                    arg[0] = 0x11;
                }
                let len = u8::try_from(n).unwrap();
                let mut p = vec![0x80, 4, b'}', b'(', 0x8c, 1, b'k', 0x8a, len];
                p.extend_from_slice(&arg);
                p.extend_from_slice(b"u.");
                p.extend(std::iter::repeat_n(0xa5, trailing));
                let d = decode(&p[..], Some(p.len() as u64), &mut KeepAll).unwrap();
                let items = d.arena.dict(d.root).unwrap();
                let want = long_to_i128(&arg).unwrap();
                assert_eq!(
                    items[0].1,
                    Value::Int(i64::try_from(want).unwrap()),
                    "{arg:?}"
                );
            }
        }
    }
}
