//! From the decoded root value to the typed [`Snapshot`]: every version's
//! layout (1.13 list, 2.0 `history` blocks, 2.1+ blocks, NPU), optional keys
//! tolerated, wrong types in the fields that figures use refused.

use std::collections::HashMap;
use std::ops::Range;

use crate::pickle::{Arena, Obj, ObjId, Value};

use super::collect::{get, signed_bits, unsigned, Collector, MAX_POOLS, TAG_ENTRY, TAG_STACK};
use super::generation::Hints;
use super::model::StackId;
use super::model::{
    Annotation, Block, BlockState, Device, Format, HostSegment, Segment, Shape, Snapshot, Stage,
    Tables, EMPTY_STACK, NO_TIME,
};
use super::packed::Entries;

/// Device ordinals are 8-bit in torch (`c10::DeviceIndex`); this generous
/// cap keeps per-device work and output bounded on hostile files.
const MAX_DEVICES: Device = Device::new(4096);

/// Cap on the JSON copy of `allocator_settings` (it is a handful of keys;
/// a hostile file must not make us expand a shared graph).
const SETTINGS_NODE_BUDGET: usize = 10_000;

struct Builder<'a> {
    arena: &'a mut Arena,
    c: &'a mut Collector,
    warnings: Vec<String>,
    hints: Hints,
    /// Segment dicts, block dicts, and non-empty block and trace lists seen,
    /// with where: torch never shares them, and expanding a shared one would
    /// let a few bytes of memo references become millions of records.
    seen: HashMap<ObjId, String>,
}

fn kind_of(arena: &Arena, v: Value) -> &'static str {
    match arena.resolve(v) {
        Value::Folded(TAG_STACK, _) => "frame list",
        Value::Folded(TAG_ENTRY, _) => "trace entry",
        Value::Folded(..) => "frame",
        other => arena.type_name(other),
    }
}

impl Builder<'_> {
    fn key(&mut self, s: &str) -> u32 {
        self.arena.strings.intern(s)
    }

    fn field(&mut self, items: &[(Value, Value)], key: &str) -> Option<Value> {
        let k = self.key(key);
        get(items, k)
    }

    fn dict(&self, v: Value, what: &str) -> Result<Vec<(Value, Value)>, String> {
        self.arena
            .dict(v)
            .map(|d| d.to_vec())
            .ok_or_else(|| format!("{what} is a {}, expected a dict", kind_of(self.arena, v)))
    }

    fn first_of(&self, v: Value, what: &str) -> Result<Option<Value>, String> {
        if let Value::Folded(TAG_STACK, s) = self.arena.resolve(v) {
            if self.c.stack_spans[s as usize].is_empty() {
                return Ok(None);
            }
        }
        self.arena
            .seq(v)
            .map(|d| d.first().copied())
            .ok_or_else(|| format!("{what} is a {}, expected a list", kind_of(self.arena, v)))
    }

    /// The length of a list value, or why it is not a list.
    fn list_len(&self, v: Value, what: &str) -> Result<usize, String> {
        if let Value::Folded(TAG_STACK, s) = self.arena.resolve(v) {
            // The shared empty `[]` may have been folded as an empty stack.
            if self.c.stack_spans[s as usize].is_empty() {
                return Ok(0);
            }
        }
        self.arena
            .seq(v)
            .map(|d| d.len())
            .ok_or_else(|| format!("{what} is a {}, expected a list", kind_of(self.arena, v)))
    }

    fn list(&self, v: Value, what: &str) -> Result<Vec<Value>, String> {
        Ok(match self.list_len(v, what)? {
            0 => Vec::new(),
            _ => self.arena.seq(v).expect("a list").to_vec(),
        })
    }

    /// Refuse a container met a second time where each must be its own.
    fn once(&mut self, v: Value, what: &str) -> Result<(), String> {
        let Value::Obj(id) = self.arena.resolve(v) else {
            return Ok(());
        };
        let empty = match self.arena.obj(id) {
            Obj::List(items) => items.is_empty(),
            Obj::Dict(items) => items.is_empty(),
            Obj::Tuple(items) => items.is_empty(),
            Obj::Set(items) => items.is_empty(),
            Obj::Run(run) => run.len() == 0,
            Obj::Folded(_) => true,
        };
        if empty {
            return Ok(());
        }
        if let Some(first) = self.seen.get(&id) {
            return Err(format!(
                "{what} is the same object as {first}: a snapshot never shares these, \
                 and memgate does not expand shared references"
            ));
        }
        self.seen.insert(id, what.to_string());
        Ok(())
    }

    fn required_u64(
        &mut self,
        items: &[(Value, Value)],
        key: &str,
        what: &str,
    ) -> Result<u64, String> {
        match self.field(items, key) {
            Some(v) => unsigned(self.arena, v, format_args!("{what} `{key}`")),
            None => Err(format!("{what} has no `{key}`")),
        }
    }

    fn optional_u64(
        &mut self,
        items: &[(Value, Value)],
        key: &str,
        what: &str,
    ) -> Result<Option<u64>, String> {
        match self.field(items, key) {
            Some(Value::None) | None => Ok(None),
            Some(v) => unsigned(self.arena, v, format_args!("{what} `{key}`")).map(Some),
        }
    }

    fn text(&mut self, items: &[(Value, Value)], key: &str) -> Option<String> {
        match self.field(items, key).map(|v| self.arena.resolve(v)) {
            Some(Value::Str(s)) => Some(self.arena.str(s).to_string()),
            _ => None,
        }
    }

    fn stack_of(
        &mut self,
        items: &[(Value, Value)],
        what: &str,
    ) -> Result<Option<StackId>, String> {
        match self.field(items, "frames") {
            Some(v) => self
                .c
                .stack(self.arena, v)
                .map(Some)
                .map_err(|e| format!("{what}: {e}")),
            None => Ok(None),
        }
    }

    fn segment(&mut self, v: Value, i: usize) -> Result<Segment, String> {
        let what = format!("segments[{i}]");
        self.once(v, &what)?;
        let items = self.dict(v, &what)?;
        let device = self.required_u64(&items, "device", &what)?;
        let device = Device::try_from(device)
            .ok()
            .filter(|d| *d < MAX_DEVICES)
            .ok_or_else(|| {
                format!(
                    "{what} `device` is {device}, not a device ordinal \
                     (torch keeps them in 8 bits; memgate accepts up to {})",
                    MAX_DEVICES.get() - 1
                )
            })?;
        let address = self.required_u64(&items, "address", &what)?;
        let total_size = self.required_u64(&items, "total_size", &what)?;
        let stream = match self.field(&items, "stream") {
            Some(v) => signed_bits(self.arena, v, &format!("{what} `stream`"))?,
            None => 0,
        };
        let pool_id = match self.field(&items, "segment_pool_id") {
            Some(v) => {
                self.hints.segment_pool_id = true;
                let pair = match self.arena.seq(v) {
                    Some(&[a, b]) => Some((a, b)),
                    _ => None,
                };
                match pair {
                    Some((a, b)) => Some((
                        unsigned(self.arena, a, format_args!("{what} `segment_pool_id`"))?,
                        unsigned(self.arena, b, format_args!("{what} `segment_pool_id`"))?,
                    )),
                    None => {
                        self.warnings
                            .push(format!("{what} `segment_pool_id` is not a pair; ignored"));
                        None
                    }
                }
            }
            None => None,
        };
        let is_expandable = matches!(self.field(&items, "is_expandable"), Some(Value::Bool(true)));
        let stack = self.stack_of(&items, &what)?.unwrap_or(EMPTY_STACK);
        let blocks_v = self
            .field(&items, "blocks")
            .ok_or_else(|| format!("{what} has no `blocks`"))?;
        self.once(blocks_v, &format!("{what} `blocks`"))?;
        let blocks_v = self.list(blocks_v, &format!("{what} `blocks`"))?;
        let mut blocks = Vec::with_capacity(blocks_v.len());
        let mut next = address;
        for (j, b) in blocks_v.into_iter().enumerate() {
            let block = self.block(b, &format!("{what}.blocks[{j}]"), next)?;
            next = block.address.saturating_add(block.size);
            blocks.push(block);
        }
        let sum: u64 = blocks.iter().fold(0u64, |a, b| a.saturating_add(b.size));
        if sum != total_size && !blocks.is_empty() {
            self.warnings.push(format!(
                "{what}: blocks add up to {sum} bytes, the segment has {total_size}"
            ));
        }
        let active =
            |f: fn(&Block) -> bool| blocks.iter().filter(|b| f(b)).map(|b| b.size).sum::<u64>();
        let allocated_size = match self.optional_u64(&items, "allocated_size", &what)? {
            Some(v) => v,
            None => active(|b| b.state == BlockState::ActiveAllocated),
        };
        let active_size = match self.optional_u64(&items, "active_size", &what)? {
            Some(v) => v,
            None => active(|b| b.state != BlockState::Inactive),
        };
        Ok(Segment {
            device,
            address,
            total_size,
            allocated_size,
            active_size,
            requested_size: self.optional_u64(&items, "requested_size", &what)?,
            stream,
            segment_type: self.text(&items, "segment_type").unwrap_or_default(),
            pool_id,
            is_expandable,
            stack,
            blocks,
        })
    }

    fn block(&mut self, v: Value, what: &str, computed_address: u64) -> Result<Block, String> {
        self.once(v, what)?;
        let items = self.dict(v, what)?;
        let size = self.required_u64(&items, "size", what)?;
        let state = match self.field(&items, "state").map(|v| self.arena.resolve(v)) {
            Some(Value::Str(s)) => match self.arena.str(s) {
                "active_allocated" => BlockState::ActiveAllocated,
                "active_pending_free" | "active_awaiting_free" => BlockState::ActivePendingFree,
                "inactive" => BlockState::Inactive,
                _ => BlockState::Other,
            },
            Some(other) => {
                return Err(format!(
                    "{what} `state` is a {}, expected a str",
                    self.arena.type_name(other)
                ))
            }
            None => return Err(format!("{what} has no `state`")),
        };
        let address = match self.optional_u64(&items, "address", what)? {
            Some(a) => {
                self.hints.block_address = true;
                a
            }
            None => computed_address,
        };
        let requested = self.optional_u64(&items, "requested_size", what)?;
        // torch ≤ 2.0 blocks carry `history` instead of `frames`.
        let (stack, requested_size) = match self.stack_of(&items, what)? {
            Some(stack) => (stack, requested.unwrap_or(size)),
            None => match self.field(&items, "history") {
                Some(h) => {
                    self.hints.history = true;
                    // Only the first entry matters; never copy the list (a
                    // hostile file can share one long history among blocks).
                    let first = self.first_of(h, &format!("{what} `history`"))?;
                    match first {
                        Some(first) => {
                            let where_ = format!("{what} `history[0]`");
                            self.once(first, &where_)?;
                            let first = self.dict(first, &where_)?;
                            let stack = self.stack_of(&first, what)?.unwrap_or(EMPTY_STACK);
                            let real = self.optional_u64(&first, "real_size", what)?;
                            let req = match requested {
                                Some(r) if r != 0 => r,
                                _ => real.unwrap_or(size),
                            };
                            (stack, req)
                        }
                        None => (EMPTY_STACK, requested.filter(|r| *r != 0).unwrap_or(size)),
                    }
                }
                None => (EMPTY_STACK, requested.filter(|r| *r != 0).unwrap_or(size)),
            },
        };
        Ok(Block {
            address,
            size,
            requested_size,
            state,
            stack,
        })
    }

    fn trace_list(&mut self, v: Value, d: usize) -> Result<TraceList, String> {
        self.entry_list(v, format!("device_traces[{d}]"))
    }

    /// `host_segments` (docs/figures.md#pinned-host-memory): each item a
    /// dict with an `address` and a `size` (or `total_size`); `allocated`
    /// says whether a caller held it at dump time. An item without them is
    /// counted in one warning, never guessed.
    fn host_segments(&mut self, v: Value) -> Result<Vec<HostSegment>, String> {
        let items = self.list(v, "`host_segments`")?;
        let mut out = Vec::with_capacity(items.len());
        let mut skipped = 0usize;
        for (i, item) in items.into_iter().enumerate() {
            let what = format!("host_segments[{i}]");
            self.once(item, &what)?;
            let Ok(fields) = self.dict(item, &what) else {
                skipped += 1;
                continue;
            };
            let size = match self.optional_u64(&fields, "size", &what)? {
                Some(s) => Some(s),
                None => self.optional_u64(&fields, "total_size", &what)?,
            };
            let (Some(address), Some(size)) = (self.optional_u64(&fields, "address", &what)?, size)
            else {
                skipped += 1;
                continue;
            };
            let allocated = matches!(self.field(&fields, "allocated"), Some(Value::Bool(true)));
            let stack = self.stack_of(&fields, &what)?.unwrap_or(EMPTY_STACK);
            out.push(HostSegment {
                address,
                size,
                allocated,
                stack,
            });
        }
        if skipped > 0 {
            self.warnings.push(format!(
                "{skipped} `host_segments` items have no integer `address` and `size`; ignored"
            ));
        }
        Ok(out)
    }

    /// A list of trace entries (a device's, or `host_traces`) as record
    /// indices.
    fn entry_list(&mut self, v: Value, what: String) -> Result<TraceList, String> {
        self.once(v, &what)?;
        // Kept as ranges of records while decoding (`Collector::runs`):
        // read without spelling the list out.
        if let Some((TAG_ENTRY, spans)) = self.arena.run(v) {
            return Ok(match spans {
                [one] => TraceList::Run(one.start as usize..one.end as usize),
                more => TraceList::Items(more.iter().flat_map(Clone::clone).collect()),
            });
        }
        let n = self.list_len(v, &what)?;
        if n > 0 {
            // The usual case, checked without copying: entries folded in
            // stream order, so the list is one run of record indices.
            let items = self.arena.seq(v).expect("checked to be a list");
            if let Value::Folded(TAG_ENTRY, first) = items[0] {
                let run = items.iter().enumerate().all(|(k, item)| {
                    u32::try_from(k)
                        .is_ok_and(|k| *item == Value::Folded(TAG_ENTRY, first.wrapping_add(k)))
                });
                if run {
                    return Ok(TraceList::Run(first as usize..first as usize + n));
                }
            }
        }
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let item = self.arena.seq(v).expect("checked to be a list")[k];
            match self.arena.resolve(item) {
                Value::Folded(TAG_ENTRY, i) => out.push(i),
                Value::Obj(id) => {
                    // Not folded while decoding (filled after it was stored).
                    let items = self.dict(item, &format!("{what}[{k}]"))?;
                    let e = self
                        .c
                        .entry(self.arena, &items)
                        .map_err(|e| format!("{what}[{k}]: {e}"))?;
                    self.c.entries.push(e);
                    let i = crate::convert::last_id(self.c.entries.len())
                        .ok_or_else(|| format!("more than {} trace entries", u32::MAX))?;
                    // Fold it now, so a dict repeated in the list is read once.
                    *self.arena.obj_mut(id) = Obj::Folded(Value::Folded(TAG_ENTRY, i));
                    out.push(i);
                }
                other => {
                    return Err(format!(
                        "{what}[{k}] is a {}, expected a trace entry dict",
                        kind_of(self.arena, other)
                    ))
                }
            }
        }
        Ok(TraceList::Items(out))
    }

    /// `external_annotations`: the events with a str `name` and `stage`
    /// and an integer `time_us`; the others are counted in one warning.
    /// Each distinct dict is read once, however often the list repeats it.
    fn annotations(&mut self, v: Value) -> Result<Vec<Annotation>, String> {
        let what = "`external_annotations`";
        let items = match self.list(v, what) {
            Ok(items) => items,
            Err(e) => {
                self.warnings.push(format!("{e}; it was ignored"));
                return Ok(Vec::new());
            }
        };
        self.hints.annotation_list |= !items.is_empty();
        let keys = ["name", "stage", "device", "time_us"].map(|k| self.key(k));
        let [start, end] = ["START", "END"].map(|k| self.key(k));
        let mut read: HashMap<ObjId, Option<Annotation>> = HashMap::new();
        let mut out = Vec::new();
        let mut skipped = 0usize;
        for item in items {
            let a = match self.arena.resolve(item) {
                Value::Obj(id) => match read.get(&id) {
                    Some(a) => *a,
                    None => {
                        let a = self
                            .arena
                            .dict(item)
                            .and_then(|fields| self.annotation(fields, keys, [start, end]));
                        read.insert(id, a);
                        a
                    }
                },
                _ => None,
            };
            match a {
                Some(a) => out.push(a),
                None => skipped += 1,
            }
        }
        if skipped > 0 {
            self.warnings.push(format!(
                "{skipped} of {} `external_annotations` are not dicts with a str `name` and \
                 `stage` and an integer `time_us`, and were ignored",
                skipped + out.len()
            ));
        }
        Ok(out)
    }

    /// One annotation dict, its keys found in one pass (the last of a
    /// repeated key wins, as in Python).
    fn annotation(
        &self,
        fields: &[(Value, Value)],
        [kname, kstage, kdevice, ktime]: [u32; 4],
        [start, end]: [u32; 2],
    ) -> Option<Annotation> {
        let mut found = [None; 4];
        for &(k, v) in fields {
            if let Value::Str(k) = self.arena.resolve(k) {
                if let Some(j) = [kname, kstage, kdevice, ktime].iter().position(|&x| x == k) {
                    found[j] = Some(self.arena.resolve(v));
                }
            }
        }
        let (Some(Value::Str(name)), Some(Value::Str(stage_name))) = (found[0], found[1]) else {
            return None;
        };
        let time_us = match found[3] {
            Some(t) => self.arena.int(t).and_then(|t| i64::try_from(t).ok())?,
            None => return None,
        };
        if time_us == NO_TIME {
            return None;
        }
        let device = found[2]
            .and_then(|d| self.arena.int(d))
            .and_then(|d| u32::try_from(d).ok())
            .map(Device::new);
        let stage = match stage_name {
            s if s == start => Stage::Start,
            s if s == end => Stage::End,
            _ => Stage::Other,
        };
        Some(Annotation {
            name,
            stage_name,
            stage,
            device,
            time_us,
        })
    }

    fn settings(&self, v: Value) -> Option<serde_json::Value> {
        let mut budget = SETTINGS_NODE_BUDGET;
        to_json(self.arena, v, &mut budget, 0)
    }
}

/// A bounded JSON copy of a small value (settings): `None` past the budget.
fn to_json(arena: &Arena, v: Value, budget: &mut usize, depth: usize) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    if *budget == 0 || depth > 16 {
        return None;
    }
    *budget -= 1;
    Some(match arena.resolve(v) {
        Value::None => J::Null,
        Value::Bool(b) => J::Bool(b),
        Value::Int(i) => J::from(i),
        Value::BigInt(i) => {
            let x = arena.bigs[i as usize];
            u64::try_from(x)
                .map(J::from)
                .unwrap_or_else(|_| J::String(x.to_string()))
        }
        Value::HugeInt { .. } => J::String("<huge int>".into()),
        Value::Float(f) => serde_json::Number::from_f64(f)
            .map(J::Number)
            .unwrap_or(J::Null),
        Value::Str(s) => J::String(arena.str(s).to_string()),
        Value::Bytes(_) | Value::Folded(..) => J::Null,
        Value::Obj(id) => match arena.obj(id) {
            Obj::Dict(items) => {
                let mut m = serde_json::Map::new();
                for (k, v) in items {
                    let key = match arena.resolve(*k) {
                        Value::Str(s) => arena.str(s).to_string(),
                        other => to_json(arena, other, budget, depth + 1)?.to_string(),
                    };
                    m.insert(key, to_json(arena, *v, budget, depth + 1)?);
                }
                J::Object(m)
            }
            Obj::List(items) | Obj::Set(items) => J::Array(
                items
                    .iter()
                    .map(|v| to_json(arena, *v, budget, depth + 1))
                    .collect::<Option<_>>()?,
            ),
            Obj::Tuple(items) => J::Array(
                items
                    .iter()
                    .map(|v| to_json(arena, *v, budget, depth + 1))
                    .collect::<Option<_>>()?,
            ),
            Obj::Run(run) => {
                let (tag, spans) = run.spans();
                J::Array(
                    (spans.iter().flat_map(Clone::clone))
                        .map(|i| to_json(arena, Value::Folded(tag, i), budget, depth + 1))
                        .collect::<Option<_>>()?,
                )
            }
            Obj::Folded(_) => J::Null,
        },
    })
}

/// One device's trace list: record indices.
enum TraceList {
    /// A run of consecutive records (the usual case).
    Run(Range<usize>),
    /// Anything else, item by item.
    Items(Vec<u32>),
}

/// Put each device's entries in one contiguous range of `entries`.
fn ranges(entries: &mut Entries, lists: Vec<TraceList>) -> Vec<Range<usize>> {
    let spans: Vec<Range<usize>> = lists.iter().map(TraceList::span).collect();
    // Whether another list refers to any record of `r` (a hostile file can
    // share an entry dict between lists): reordering `r` in place would
    // reorder that list too.
    let shared = |k: usize, r: &Range<usize>| {
        (spans.iter().enumerate()).any(|(j, o)| j != k && o.start < r.end && r.start < o.end)
    };
    let mut out = Vec::with_capacity(lists.len());
    for (k, list) in lists.into_iter().enumerate() {
        let list = match list {
            TraceList::Run(r) => {
                out.push(r);
                continue;
            }
            TraceList::Items(list) => list,
        };
        if list.is_empty() {
            out.push(0..0);
        } else if let Some(s) = permuted_range(&list).filter(|&s| !shared(k, &(s..s + list.len())))
        {
            // The entries were folded in stream order, except the few whose
            // dict held a new frame list (folded when stored into the list,
            // after the dicts behind them).
            permute(entries, &list, s);
            out.push(s..s + list.len());
        } else {
            // Shared or scattered entries (never in real files): copy them.
            let s = entries.len();
            for i in list {
                let e = entries
                    .get(i as usize)
                    .expect("a list's records were collected");
                entries.push(e);
            }
            out.push(s..entries.len());
        }
    }
    out
}

impl TraceList {
    /// The record indices it refers to lie in this range (empty for none).
    fn span(&self) -> Range<usize> {
        match self {
            TraceList::Run(r) => r.clone(),
            TraceList::Items(list) => match (list.iter().min(), list.iter().max()) {
                (Some(&lo), Some(&hi)) => lo as usize..hi as usize + 1,
                _ => 0..0,
            },
        }
    }
}

/// The start of the index range `list` is a permutation of, if it is one.
fn permuted_range(list: &[u32]) -> Option<usize> {
    let lo = *list.iter().min()? as usize;
    let hi = *list.iter().max()? as usize;
    if hi - lo + 1 != list.len() {
        return None;
    }
    let mut seen = vec![false; list.len()];
    for &i in list {
        if std::mem::replace(&mut seen[i as usize - lo], true) {
            return None;
        }
    }
    Some(lo)
}

/// Reorder `entries[base..base + list.len()]` in place so that entry
/// `base + k` becomes the old entry `list[k]` (`list` is a permutation of
/// that range), cycle by cycle.
fn permute(entries: &mut Entries, list: &[u32], base: usize) {
    let at =
        |entries: &Entries, k: usize| entries.get(base + k).expect("inside the permuted range");
    let mut done = vec![false; list.len()];
    for start in 0..list.len() {
        if done[start] || list[start] as usize - base == start {
            done[start] = true;
            continue;
        }
        let first = at(entries, start);
        let mut j = start;
        loop {
            done[j] = true;
            let src = list[j] as usize - base;
            if src == start {
                entries.set(base + j, first);
                break;
            }
            let moved = at(entries, src);
            entries.set(base + j, moved);
            j = src;
        }
    }
}

/// Turn a decoded root into a snapshot.
pub(crate) fn build(
    root: Value,
    mut arena: Arena,
    mut c: Collector,
    format: Format,
    trailing_bytes: u64,
) -> Result<Snapshot, String> {
    let mut b = Builder {
        arena: &mut arena,
        c: &mut c,
        warnings: Vec::new(),
        hints: Hints::default(),
        seen: HashMap::new(),
    };
    let (shape, segments_v, traces_v, top) = match b.arena.resolve(root) {
        Value::Obj(id) if matches!(b.arena.obj(id), Obj::List(_)) => {
            (Shape::List, root, None, Vec::new())
        }
        Value::Obj(id) if matches!(b.arena.obj(id), Obj::Dict(_)) => {
            let top = b.dict(root, "the snapshot")?;
            let segs = b
                .field(&top, "segments")
                .ok_or("not a memory snapshot: the top-level dict has no `segments`")?;
            let traces = b
                .field(&top, "device_traces")
                .ok_or("not a memory snapshot: the top-level dict has no `device_traces`")?;
            (Shape::Dict, segs, Some(traces), top)
        }
        other => {
            return Err(format!(
                "not a memory snapshot: the top-level value is a {}, expected a dict or a list",
                kind_of(b.arena, other)
            ))
        }
    };
    let seg_values = b.list(segments_v, "`segments`")?;
    let mut segments = Vec::with_capacity(seg_values.len());
    for (i, v) in seg_values.into_iter().enumerate() {
        segments.push(b.segment(v, i)?);
    }
    few_pools(&segments)?;
    let mut lists = Vec::new();
    if let Some(t) = traces_v {
        let per_device = b.list(t, "`device_traces`")?;
        if per_device.len() > MAX_DEVICES.index() {
            return Err(format!(
                "`device_traces` has {} lists, one per device; more than {MAX_DEVICES} \
                 is not a memory snapshot",
                per_device.len()
            ));
        }
        for (d, v) in per_device.into_iter().enumerate() {
            lists.push(b.trace_list(v, d)?);
        }
    }
    let allocator_settings = match b.field(&top, "allocator_settings") {
        Some(v) => b.settings(v),
        None => None,
    };
    let annotations = match b.field(&top, "external_annotations") {
        Some(v) => b.annotations(v)?,
        None => Vec::new(),
    };
    b.hints.host =
        b.field(&top, "host_segments").is_some() || b.field(&top, "host_traces").is_some();
    let host_segments = match b.field(&top, "host_segments") {
        Some(v) => b.host_segments(v)?,
        None => Vec::new(),
    };
    // The host trace goes last, so the devices' lists keep their places.
    let has_host_trace = match b.field(&top, "host_traces") {
        Some(v) => {
            lists.push(b.entry_list(v, "`host_traces`".to_string())?);
            true
        }
        None => false,
    };
    b.hints.workspace_snapshot = b.c.seen.workspace_snapshot;
    b.hints.annotate = b.c.seen.annotate;
    b.hints.timed = b.c.seen.timed;
    let hints = b.hints;
    let mut warnings = std::mem::take(&mut b.warnings);
    let mut traces = ranges(&mut c.entries, lists);
    let host_trace = if has_host_trace {
        traces.pop().unwrap_or(0..0)
    } else {
        0..0
    };
    if trailing_bytes > 0 {
        warnings.push(format!(
            "{trailing_bytes} bytes after the pickle's STOP were ignored (old torch_npu dumps leave them)"
        ));
    }
    if let Some(what) = arena.overflow() {
        return Err(format!("more than {} {what}", u32::MAX));
    }
    let strings = std::mem::take(&mut arena.strings)
        .into_strings()
        .ok_or_else(|| format!("more than {} distinct strings", u32::MAX))?
        .into_iter()
        .map(super::labels::cut_long)
        .collect();
    if c.frames_overflowed {
        return Err(format!("more than {} distinct stack frames", u32::MAX));
    }
    drop(arena);
    let labels = super::labels::Labels::new(c.frames.len(), c.stack_spans.len());
    let mut snap = Tables {
        format,
        shape,
        segments,
        traces,
        entries: c.entries,
        strings,
        frames: c.frames,
        stack_frames: c.stack_frames,
        stack_spans: c.stack_spans,
        unknown_actions: c.unknown_actions,
        pool_ids: c.pool_ids,
        allocator_settings,
        annotations,
        host_trace,
        host_segments,
        generation: String::new(),
        trailing_bytes,
        warnings,
        labels,
    };
    snap.generation = super::generation::detect(&snap, hints);
    within_byte_range(&snap)?;
    Ok(Snapshot::new(snap))
}

/// At most [`MAX_POOLS`] distinct `segment_pool_id`s, as for trace entries:
/// a process makes a pool per CUDA graph or `MemPool`, and every pool is a
/// row of every report (docs/figures.md#pools).
fn few_pools(segments: &[Segment]) -> Result<(), String> {
    let mut ids: Vec<(u64, u64)> = segments.iter().filter_map(|s| s.pool_id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > MAX_POOLS {
        return Err(format!(
            "more than {MAX_POOLS} distinct segment `segment_pool_id`s: not a memory snapshot"
        ));
    }
    Ok(())
}

/// The most bytes a snapshot's trace entries, segments and blocks may add up
/// to: 4 EiB, far past any device. Every figure and every per-category or
/// per-stack sum is bounded by that total, so no sum in the analysis can
/// wrap around (a crafted file of `2^62`-byte allocations could otherwise
/// make a category's bytes wrap to 0 and pass its budget).
const MAX_TOTAL_BYTES: u64 = 1 << 62;

fn within_byte_range(snap: &Tables) -> Result<(), String> {
    let entries = snap.entries.iter().map(|e| e.size);
    let segments = snap
        .segments
        .iter()
        .flat_map(|s| std::iter::once(s.total_size).chain(s.blocks.iter().map(|b| b.size)));
    let mut total: u64 = 0;
    for size in entries.chain(segments) {
        total = total.saturating_add(size);
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "its trace entries and segments add up to more than {} EiB, more than any \
                 device holds; not a real snapshot",
                MAX_TOTAL_BYTES >> 60
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::model::Action;
    use crate::snapshot::TraceEntry;

    fn entry(size: u64) -> TraceEntry {
        TraceEntry {
            addr: 0,
            size,
            time_us: 0,
            stack: StackId::default(),
            context: crate::snapshot::model::NO_CONTEXT,
            pool: crate::snapshot::model::NO_POOL,
            meta: crate::snapshot::NO_META,
            action: Action::Alloc.into(),
        }
    }

    fn items(lists: Vec<Vec<u32>>) -> Vec<TraceList> {
        lists.into_iter().map(TraceList::Items).collect()
    }

    fn sizes(entries: &Entries, r: Range<usize>) -> Vec<u64> {
        entries.range(r).iter().map(|e| e.size).collect()
    }

    #[test]
    fn device_lists_become_ranges_in_list_order() {
        // Entries 0..6 as folded; device 0 lists 2,0,1 (a dict folded late),
        // device 1 lists 3,5,4; sizes name the entry index.
        let mut entries: Entries = (0..6).map(entry).collect();
        let r = ranges(
            &mut entries,
            items(vec![vec![2, 0, 1], vec![3, 5, 4], vec![]]),
        );
        assert_eq!(r, vec![0..3, 3..6, 0..0]);
        assert_eq!(sizes(&entries, r[0].clone()), vec![2, 0, 1]);
        assert_eq!(sizes(&entries, r[1].clone()), vec![3, 5, 4]);
        assert_eq!(entries.len(), 6, "a permutation is reordered in place");
    }

    #[test]
    fn longer_cycles_and_shared_entries() {
        let mut entries: Entries = (0..5).map(entry).collect();
        let r = ranges(&mut entries, items(vec![vec![4, 3, 0, 1, 2]]));
        assert_eq!(sizes(&entries, r[0].clone()), vec![4, 3, 0, 1, 2]);
        // The same entry twice is not a permutation: copied after the rest.
        let mut entries: Entries = (0..3).map(entry).collect();
        let r = ranges(&mut entries, items(vec![vec![1, 1, 2]]));
        assert_eq!(r[0], 3..6);
        assert_eq!(sizes(&entries, r[0].clone()), vec![1, 1, 2]);
    }

    #[test]
    fn an_entry_shared_by_two_lists_keeps_each_lists_order() {
        // Device 0 lists entry 0; device 1 lists 1, 0 (the same entry dict
        // again, a memo read): reordering 0..2 in place would give device 0
        // entry 1.
        let mut entries: Entries = (0..2).map(entry).collect();
        let lists = vec![TraceList::Run(0..1), TraceList::Items(vec![1, 0])];
        let r = ranges(&mut entries, lists);
        assert_eq!(sizes(&entries, r[0].clone()), vec![0]);
        assert_eq!(sizes(&entries, r[1].clone()), vec![1, 0]);
        // The other way round: the permuted list first, the run after it.
        let mut entries: Entries = (0..2).map(entry).collect();
        let lists = vec![TraceList::Items(vec![1, 0]), TraceList::Run(1..2)];
        let r = ranges(&mut entries, lists);
        assert_eq!(sizes(&entries, r[0].clone()), vec![1, 0]);
        assert_eq!(sizes(&entries, r[1].clone()), vec![1]);
    }
}
