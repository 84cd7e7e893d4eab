//! What the folder answered for a list of memo reads, by the list's bytes
//! (issue 33): torch writes every allocation's own `frames` list, the same
//! reads of the same frame dicts again and again, so a list whose bytes
//! were seen before is not read again, item by item, from the memo. The
//! answer stands while the memo slots it read hold what they held, so
//! the cache is emptied whenever a filled slot is overwritten
//! ([`super::memo::Memo::overwrites`]); the folder promises that its
//! answer is a function of the key and the items alone
//! ([`super::Folder::fold_list`]).

use std::collections::HashMap;

use foldhash::fast::RandomState;

use super::value::Value;

/// Lists kept at once: a real snapshot has a few thousand distinct stacks.
pub(crate) const MAX_LISTS: usize = 1 << 15;
/// List bytes kept at once (a list is at most a window, 4 KiB).
pub(crate) const MAX_BYTES: usize = 4 << 20;

/// A bounded map from a list's bytes to (its key, the folded list),
/// emptied when full or when the memo is overwritten.
#[derive(Debug, Default)]
pub(crate) struct ListCache {
    /// Keyed per process (foldhash's random seed): a hostile file cannot
    /// aim its lists at one bucket.
    map: HashMap<Box<[u8]>, (Value, Value), RandomState>,
    /// Bytes of the keys in `map` (a key replaced is counted twice: the
    /// bound errs on the safe side).
    bytes: usize,
    /// [`super::memo::Memo::overwrites`] when the answers were cached.
    epoch: u64,
}

impl ListCache {
    /// Forget every answer if the memo was overwritten since they were
    /// cached (`overwrites` is the memo's count now).
    #[inline]
    pub(crate) fn sync(&mut self, overwrites: u64) {
        if self.epoch != overwrites {
            self.clear();
            self.epoch = overwrites;
        }
    }

    /// The folded list cached for `body` read under `key`.
    #[inline]
    pub(crate) fn get(&self, key: Value, body: &[u8]) -> Option<Value> {
        let &(k, v) = self.map.get(body)?;
        (k == key).then_some(v)
    }

    /// Cache `folded` for `body` under `key`, if the memo still holds what
    /// it held when the cache was last synced (`overwrites`).
    pub(crate) fn insert(&mut self, overwrites: u64, key: Value, body: &[u8], folded: Value) {
        if self.epoch != overwrites {
            return;
        }
        if self.map.len() >= MAX_LISTS || self.bytes + body.len() > MAX_BYTES {
            self.clear();
        }
        self.bytes += body.len();
        self.map.insert(body.into(), (key, folded));
    }

    fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Value = Value::Str(3);

    #[test]
    fn a_cache_at_its_bound_of_lists_is_emptied_before_the_next_one() {
        let mut c = ListCache::default();
        for n in 0..=u32::try_from(MAX_LISTS).unwrap() {
            c.insert(0, KEY, &n.to_le_bytes(), Value::Int(n.into()));
        }
        assert_eq!(c.len(), 1, "emptied when full, then the newest kept");
        let last = u32::try_from(MAX_LISTS).unwrap();
        assert_eq!(
            c.get(KEY, &last.to_le_bytes()),
            Some(Value::Int(last.into()))
        );
        assert_eq!(c.get(KEY, &0u32.to_le_bytes()), None);
    }

    #[test]
    fn a_cache_at_its_bound_of_bytes_is_emptied_before_the_next_list() {
        let mut c = ListCache::default();
        let body = |n: usize| {
            let mut b = vec![0u8; 4096];
            b[..8].copy_from_slice(&n.to_le_bytes());
            b
        };
        let fit = MAX_BYTES / 4096;
        for n in 0..fit {
            c.insert(0, KEY, &body(n), Value::Int(1));
        }
        assert_eq!(c.len(), fit, "all fit");
        c.insert(0, KEY, &body(fit), Value::Int(2));
        assert_eq!(c.len(), 1);
        assert_eq!(c.get(KEY, &body(fit)), Some(Value::Int(2)));
        assert!(c.bytes <= MAX_BYTES);
    }

    #[test]
    fn an_answer_cached_before_the_memo_was_overwritten_is_forgotten() {
        let mut c = ListCache::default();
        c.insert(0, KEY, b"hA", Value::Int(1));
        c.sync(0);
        assert_eq!(c.get(KEY, b"hA"), Some(Value::Int(1)));
        c.sync(1);
        assert_eq!(c.get(KEY, b"hA"), None);
        // An answer folded from the memo as it was is not cached after.
        c.insert(0, KEY, b"hA", Value::Int(1));
        assert_eq!(c.get(KEY, b"hA"), None);
    }

    #[test]
    fn the_same_bytes_under_another_key_are_not_the_cached_list() {
        let mut c = ListCache::default();
        c.insert(0, KEY, b"hA", Value::Int(1));
        assert_eq!(c.get(Value::Str(4), b"hA"), None);
    }
}
