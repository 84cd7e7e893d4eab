//! Streaming compaction while the pickle decodes: frame dicts become frame
//! ids, frame lists become stack ids, trace-entry dicts become typed
//! records, so a 2M-entry trace never exists as a generic tree.

use std::collections::HashMap;
use std::ops::Range;

use foldhash::fast::RandomState;

use crate::pickle::{Arena, Folder, Obj, ObjId, Slot, StrId, Value, IGNORED_FIELD, MAX_FIELDS};

use super::model::{
    Action, ActionCode, Frame, FrameId, StackId, TraceEntry, NO_CONTEXT, NO_META, NO_POOL, NO_TIME,
};
use super::packed::Entries;

pub(crate) const TAG_FRAME: u8 = 1;
pub(crate) const TAG_STACK: u8 = 2;
pub(crate) const TAG_ENTRY: u8 = 3;

/// The PyTorch key names that flat dicts are read by, in field order.
const FIELD_NAMES: [&str; FIELDS] = [
    "action",
    "addr",
    "device_free",
    "size",
    "stream",
    "time_us",
    "frames",
    "filename",
    "name",
    "line",
    "compile_context",
    "pool_id",
    "user_metadata",
];
const FIELDS: usize = 13;
// A field's bit fits `Fields::present`, and a template reads every field.
const _: () = assert!(FIELDS <= 16 && FIELDS <= MAX_FIELDS);
const F_ACTION: usize = 0;
const F_ADDR: usize = 1;
const F_DEVICE_FREE: usize = 2;
const F_SIZE: usize = 3;
const F_STREAM: usize = 4;
const F_TIME: usize = 5;
const F_FRAMES: usize = 6;
const F_FILENAME: usize = 7;
const F_NAME: usize = 8;
const F_LINE: usize = 9;
const F_CONTEXT: usize = 10;
const F_POOL: usize = 11;
const F_META: usize = 12;

/// The PyTorch key names, interned once per decode.
pub(crate) struct Keys {
    ids: [StrId; FIELDS],
    /// `ids[0]` when the ids are consecutive (interned first, before
    /// anything else): a key's field is then one subtraction away.
    dense_base: Option<StrId>,
}

impl Keys {
    fn new(arena: &mut Arena) -> Keys {
        let ids = FIELD_NAMES.map(|s| arena.strings.intern(s));
        let dense = ids
            .iter()
            .enumerate()
            .all(|(j, &id)| StrId::try_from(j).is_ok_and(|j| Some(id) == ids[0].checked_add(j)));
        Keys {
            ids,
            dense_base: dense.then_some(ids[0]),
        }
    }

    /// Which field a key names, if any.
    #[inline(always)]
    fn field(&self, key: Value) -> Option<usize> {
        let Value::Str(s) = key else { return None };
        match self.dense_base {
            Some(base) => {
                let j = s.wrapping_sub(base) as usize;
                (j < FIELDS).then_some(j)
            }
            None => self.ids.iter().position(|&id| id == s),
        }
    }
}

/// The known fields of a dict's items (the last of a repeated key wins,
/// as in Python), and a bit per field present.
#[derive(Clone, Copy)]
struct Fields<'a> {
    values: &'a [Value; MAX_FIELDS],
    present: u16,
}

/// The values [`Fields`] borrow, read from a dict's items.
struct FieldsBuf {
    values: [Value; MAX_FIELDS],
    present: u16,
}

impl FieldsBuf {
    #[inline(always)]
    fn read(keys: &Keys, items: &[(Value, Value)]) -> FieldsBuf {
        let mut f = FieldsBuf {
            values: [Value::None; MAX_FIELDS],
            present: 0,
        };
        for &(k, v) in items {
            if let Some(j) = keys.field(k) {
                f.values[j] = v;
                f.present |= 1 << j;
            }
        }
        f
    }

    #[inline(always)]
    fn fields(&self) -> Fields<'_> {
        Fields {
            values: &self.values,
            present: self.present,
        }
    }
}

impl Fields<'_> {
    #[inline(always)]
    fn get(&self, j: usize) -> Option<Value> {
        (self.present & (1 << j) != 0).then_some(self.values[j])
    }

    fn is_entry(&self) -> bool {
        self.present & (1 << F_ACTION) != 0
    }

    fn is_frame(&self) -> bool {
        let both = (1 << F_FILENAME) | (1 << F_NAME);
        self.present & both == both
    }
}

/// Finds a key in a dict's items (the last one wins, as in Python).
pub(crate) fn get(items: &[(Value, Value)], key: StrId) -> Option<Value> {
    items
        .iter()
        .rev()
        .find(|(k, _)| *k == Value::Str(key))
        .map(|(_, v)| *v)
}

/// Frames, stacks and trace entries collected so far.
#[derive(Default)]
pub(crate) struct Collector {
    keys: Option<Keys>,
    frame_ids: HashMap<Frame, FrameId, RandomState>,
    pub frames: Vec<Frame>,
    /// A frame came past the last 32-bit id (`intern_frame`).
    pub frames_overflowed: bool,
    /// Stacks by their frames (foldhash: randomly seeded, so a hostile
    /// file cannot choose collisions, and several times SipHash's speed on
    /// the million stacks a torch trace interns).
    stack_ids: HashMap<Box<[FrameId]>, StackId, RandomState>,
    /// Reused for the frames of each list read straight from the memo.
    frame_buf: Vec<FrameId>,
    pub stack_frames: Vec<FrameId>,
    pub stack_spans: Vec<Range<u32>>,
    pub entries: Entries,
    /// What the records collected so far contain (for the generation guess).
    pub seen: Seen,
    pub unknown_actions: Vec<String>,
    /// The distinct `pool_id`s of trace entries, in order of first
    /// appearance (an entry keeps its index: [`TraceEntry::pool`]).
    pub pool_ids: Vec<(u64, u64)>,
    /// Action strings seen so far, by interned id (at most a dozen known
    /// plus `MAX_UNKNOWN_ACTIONS`).
    action_ids: Vec<(StrId, Action)>,
    unknown_ids: HashMap<String, u16>,
    /// Wide dicts already looked at and kept: a hostile file can store one
    /// wide dict a million times, or grow it by a key between each storing,
    /// and rescanning all its keys each time would be quadratic. Dicts only
    /// grow, so only the keys added since are looked at.
    kept: HashMap<ObjId, Scanned>,
    /// Whether a list of trace entries folded one after the other is kept
    /// as their range while decoding ([`Folder::runs`]): on, but for the
    /// tests that compare with the list kept item by item.
    entry_runs: bool,
}

/// Features of the collected trace records.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Seen {
    pub workspace_snapshot: bool,
    pub annotate: bool,
    pub timed: bool,
}

/// How much of a kept dict was looked at, and which frame keys it had.
#[derive(Debug, Default, Clone, Copy)]
struct Scanned {
    len: usize,
    filename: bool,
    name: bool,
}

/// Dicts this small are rescanned rather than remembered (cheaper, and the
/// memo costs no memory per tiny dict).
const SCAN_MEMO_MIN_LEN: usize = 16;

/// Trace records are pre-faulted this many ahead (2.5 MB).
const PREFAULT_ENTRIES: usize = 1 << 16;

/// More distinct unknown trace actions than this is not a snapshot (torch
/// has a dozen); it also keeps [`Action::Other`]'s index in range.
pub(crate) const MAX_UNKNOWN_ACTIONS: usize = 1024;

/// More distinct trace-entry pools than this is not a snapshot (a process
/// makes a pool per CUDA graph or `MemPool`); it also bounds the linear
/// look-up of [`Collector::pool`] and keeps a pool index in the 16 bits
/// of [`TraceEntry::pool`], below [`NO_POOL`].
pub(crate) const MAX_POOLS: usize = 4096;
const _: () = assert!(MAX_POOLS < NO_POOL as usize);

impl Collector {
    /// `input_len` sizes the entry table up front (pages are only touched
    /// as entries arrive), so a 2M-entry trace is never reallocated.
    pub fn new(input_len: u64) -> Collector {
        let mut c = Collector {
            entries: Entries::with_capacity((input_len / 24).min(1 << 28) as usize),
            entry_runs: true,
            ..Collector::default()
        };
        // Stack 0 is the empty stack (`EMPTY_STACK`).
        c.stack_ids
            .insert(Box::default(), super::model::EMPTY_STACK);
        c.stack_spans.push(0..0);
        c
    }

    /// This collector with trace-entry lists kept item by item (the
    /// oracle the range is compared with).
    pub fn without_runs(self) -> Collector {
        Collector {
            entry_runs: false,
            ..self
        }
    }

    pub fn keys(&mut self, arena: &mut Arena) -> &Keys {
        self.keys.get_or_insert_with(|| Keys::new(arena))
    }

    fn intern_stack(&mut self, frames: &[FrameId]) -> Result<StackId, String> {
        if let Some(&id) = self.stack_ids.get(frames) {
            return Ok(id);
        }
        let too_many = |what: &str| format!("more than {} {what}", u32::MAX);
        let id = StackId::try_from(self.stack_spans.len()).map_err(|_| too_many("stacks"))?;
        let start = u32::try_from(self.stack_frames.len());
        let end = u32::try_from(self.stack_frames.len() + frames.len());
        let (Ok(start), Ok(end)) = (start, end) else {
            return Err(too_many("frames in all stacks together"));
        };
        self.stack_frames.extend_from_slice(frames);
        self.stack_spans.push(start..end);
        self.stack_ids.insert(frames.into(), id);
        Ok(id)
    }

    /// Frames degrade, never fail (`frame`), so a frame past the last
    /// 32-bit id is flagged here and refused by `build` at the end.
    fn intern_frame(&mut self, f: Frame) -> FrameId {
        let next = FrameId::try_from(self.frames.len());
        match self.frame_ids.get(&f) {
            Some(&id) => id,
            None => match next {
                Ok(id) => {
                    self.frames.push(f);
                    self.frame_ids.insert(f, id);
                    id
                }
                Err(_) => {
                    self.frames_overflowed = true;
                    FrameId::default()
                }
            },
        }
    }

    /// A frame dict → frame id. Missing or odd fields degrade, never fail:
    /// frames are for display and grouping only.
    fn frame(&mut self, arena: &mut Arena, items: &[(Value, Value)]) -> FrameId {
        let buf = FieldsBuf::read(self.keys(arena), items);
        let f = buf.fields();
        self.frame_of(arena, &f)
    }

    fn frame_of(&mut self, arena: &mut Arena, f: &Fields<'_>) -> FrameId {
        let mut text = |v: Option<Value>| -> u32 {
            match v.map(|v| arena.resolve(v)) {
                Some(Value::Str(s)) => s,
                Some(Value::Int(i)) => arena.strings.intern(&i.to_string()),
                _ => arena.strings.intern(""),
            }
        };
        let name = text(f.get(F_NAME));
        let filename = text(f.get(F_FILENAME));
        let line = f
            .get(F_LINE)
            .and_then(|v| arena.int(v))
            .and_then(|i| i64::try_from(i).ok())
            .unwrap_or(0);
        self.intern_frame(Frame {
            name,
            filename,
            line,
        })
    }

    /// A `frames` value (list of frame dicts, or already folded) → stack id.
    pub fn stack(&mut self, arena: &mut Arena, v: Value) -> Result<StackId, String> {
        match arena.resolve(v) {
            Value::Folded(TAG_STACK, id) => Ok(StackId::from_raw(id)),
            Value::None => Ok(super::model::EMPTY_STACK),
            Value::Obj(id) => {
                // Taken, not copied (the list is folded below; a load that
                // fails here is refused whole): a 10M-item frame list is
                // 160 MB, and its copy as much again.
                let items = match arena.obj_mut(id) {
                    Obj::List(items) => std::mem::take(items),
                    Obj::Tuple(items) => std::mem::take(items).into_vec(),
                    Obj::Run(_) => arena.seq(v).unwrap_or_default().to_vec(),
                    other => {
                        return Err(format!("`frames` is a {}, expected a list", other.kind()))
                    }
                };
                let mut frames = Vec::with_capacity(items.len());
                for item in items {
                    match arena.resolve(item) {
                        Value::Folded(TAG_FRAME, f) => frames.push(FrameId::from_raw(f)),
                        Value::Obj(fid) => match arena.obj(fid) {
                            Obj::Dict(d) => {
                                let d = d.clone();
                                let f = self.frame(arena, &d);
                                // Fold it, so a dict repeated in the list is read once.
                                *arena.obj_mut(fid) =
                                    Obj::Folded(Value::Folded(TAG_FRAME, f.raw()));
                                frames.push(f);
                            }
                            other => {
                                return Err(format!(
                                    "a frame is a {}, expected a dict",
                                    other.kind()
                                ))
                            }
                        },
                        other => {
                            return Err(format!(
                                "a frame is a {}, expected a dict",
                                arena.type_name(other)
                            ))
                        }
                    }
                }
                let s = self.intern_stack(&frames)?;
                // A tuple is not folded by the decoder; fold it here so a
                // `frames` tuple shared by many blocks is read once.
                *arena.obj_mut(id) = Obj::Folded(Value::Folded(TAG_STACK, s.raw()));
                Ok(s)
            }
            other => Err(format!(
                "`frames` is a {}, expected a list",
                arena.type_name(other)
            )),
        }
    }

    fn action(&mut self, name: &str) -> Result<Action, String> {
        if let Some(a) = Action::from_known(name) {
            return Ok(a);
        }
        if let Some(&i) = self.unknown_ids.get(name) {
            return Ok(Action::Other(i));
        }
        if self.unknown_actions.len() >= MAX_UNKNOWN_ACTIONS {
            return Err(format!(
                "more than {MAX_UNKNOWN_ACTIONS} distinct unknown trace actions: \
                 not a memory snapshot"
            ));
        }
        // Below MAX_UNKNOWN_ACTIONS (checked above), so it fits.
        let i = u16::try_from(self.unknown_actions.len()).map_err(|_| "too many trace actions")?;
        self.unknown_actions.push(name.to_string());
        self.unknown_ids.insert(name.to_string(), i);
        Ok(Action::Other(i))
    }

    /// A trace-entry dict → typed record.
    pub fn entry(
        &mut self,
        arena: &mut Arena,
        items: &[(Value, Value)],
    ) -> Result<TraceEntry, String> {
        let buf = FieldsBuf::read(self.keys(arena), items);
        let f = buf.fields();
        self.entry_of(arena, &f)
    }

    /// This runs once per trace entry: plain values take the short way.
    #[inline]
    fn entry_of(&mut self, arena: &mut Arena, f: &Fields<'_>) -> Result<TraceEntry, String> {
        let action = match f.get(F_ACTION).map(|v| arena.resolve(v)) {
            Some(Value::Str(s)) => match self.action_ids.iter().find(|(id, _)| *id == s) {
                Some((_, a)) => *a,
                None => {
                    let name = arena.str(s).to_string();
                    let a = self.action(&name)?;
                    self.action_ids.push((s, a));
                    a
                }
            },
            Some(other) => {
                return Err(format!(
                    "trace entry `action` is a {}, expected a str",
                    arena.type_name(other)
                ))
            }
            None => return Err("trace entry has no `action`".into()),
        };
        let addr = match f.get(F_ADDR).or(f.get(F_DEVICE_FREE)) {
            Some(Value::Int(i)) if i >= 0 => i.unsigned_abs(),
            Some(v) => unsigned(arena, v, "trace entry `addr`")?,
            None => 0,
        };
        let size = match f.get(F_SIZE) {
            Some(Value::Int(i)) if i >= 0 => i.unsigned_abs(),
            Some(v) => unsigned(arena, v, "trace entry `size`")?,
            None => return Err("trace entry has no `size`".into()),
        };
        match f.get(F_STREAM) {
            Some(Value::Int(_)) | None => {}
            Some(v) => {
                signed_bits(arena, v, "trace entry `stream`")?;
            }
        }
        let context = match f.get(F_CONTEXT).map(|v| arena.resolve(v)) {
            Some(Value::Str(s)) => s,
            // torch writes a str; anything else is treated as no context.
            _ => NO_CONTEXT,
        };
        // `user_metadata` (torch ≥ 2.10): a str, or JSON text; empty is none.
        let meta = match f.get(F_META).map(|v| arena.resolve(v)) {
            Some(Value::Str(s)) if !arena.str(s).is_empty() => s,
            _ => NO_META,
        };
        let time_us = match f.get(F_TIME) {
            Some(Value::Int(t)) if t != NO_TIME => t,
            Some(v) => match arena.int(v).and_then(|i| i64::try_from(i).ok()) {
                Some(t) if t != NO_TIME => t,
                _ => return Err("trace entry `time_us` is not a 64-bit integer".into()),
            },
            None => NO_TIME,
        };
        self.seen.timed |= time_us != NO_TIME;
        self.seen.workspace_snapshot |= action == Action::WorkspaceSnapshot;
        self.seen.annotate |= action == Action::Annotate;
        let stack = match f.get(F_FRAMES) {
            Some(Value::Folded(TAG_STACK, id)) => StackId::from_raw(id),
            Some(v) => self.stack(arena, v)?,
            None => super::model::EMPTY_STACK,
        };
        let pool = match f.get(F_POOL) {
            Some(v) => self.pool(arena, v)?,
            None => NO_POOL,
        };
        Ok(TraceEntry {
            addr,
            size,
            time_us,
            stack,
            context,
            pool,
            meta,
            // Unknown actions stop at MAX_UNKNOWN_ACTIONS: always a code.
            action: ActionCode::new(action).ok_or("too many trace actions")?,
        })
    }

    /// A trace entry's `pool_id` (a pair, like a segment's
    /// `segment_pool_id`) → its index in [`Collector::pool_ids`]. Anything
    /// but a pair of non-negative integers is refused: the entry could not
    /// be placed in its pool.
    fn pool(&mut self, arena: &Arena, v: Value) -> Result<u16, String> {
        let Some(&[a, b]) = arena.seq(v) else {
            return Err("trace entry `pool_id` is not a pair".into());
        };
        let id = (
            unsigned(arena, a, "trace entry `pool_id`")?,
            unsigned(arena, b, "trace entry `pool_id`")?,
        );
        // Below MAX_POOLS (checked on insertion), so every index fits.
        let index = |i: usize| u16::try_from(i).map_err(|_| "too many pools".to_string());
        // Usually a handful of pools, and runs of one: the last is first.
        if let Some(i) = self.pool_ids.iter().rposition(|p| *p == id) {
            return index(i);
        }
        if self.pool_ids.len() >= MAX_POOLS {
            return Err(format!(
                "more than {MAX_POOLS} distinct trace entry `pool_id`s: not a memory snapshot"
            ));
        }
        self.pool_ids.push(id);
        index(self.pool_ids.len() - 1)
    }
}

/// A non-negative integer that fits in `u64`.
/// `what` names the value in an error, and is only formatted then.
pub(crate) fn unsigned(
    arena: &Arena,
    v: Value,
    what: impl std::fmt::Display,
) -> Result<u64, String> {
    let v = arena.resolve(v);
    match v {
        Value::Int(_) | Value::BigInt(_) => {
            let i = arena.int(v).expect("an int");
            if i < 0 {
                Err(format!("{what} is negative ({i})"))
            } else {
                u64::try_from(i).map_err(|_| format!("{what} is {i}, which is 2^64 or more"))
            }
        }
        Value::HugeInt { .. } => Err(format!("{what} is far larger than 2^64")),
        other => Err(format!(
            "{what} is a {}, expected a non-negative integer",
            arena.type_name(other)
        )),
    }
}

/// An integer kept as 64 bits (stream pointers may be unsigned ≥ 2^63).
pub(crate) fn signed_bits(arena: &Arena, v: Value, what: &str) -> Result<i64, String> {
    // Two's complement bits: an unsigned value ≥ 2^63 keeps its bits.
    let bits = |i: i128| {
        i64::try_from(i)
            .ok()
            .or_else(|| u64::try_from(i).ok().map(u64::cast_signed))
    };
    match arena.int(v).and_then(bits) {
        Some(i) => Ok(i),
        _ => Err(format!(
            "{what} is a {}, expected a 64-bit integer",
            arena.type_name(v)
        )),
    }
}

impl Folder for Collector {
    fn prepare(&mut self, arena: &mut Arena) {
        self.keys(arena);
    }

    /// A device's trace, appended entry after entry, is held as the range
    /// of its records: 16 bytes an entry less (issue 33).
    fn runs(&self, tag: u8) -> bool {
        tag == TAG_ENTRY && self.entry_runs
    }

    #[inline]
    fn fold_flat(
        &mut self,
        arena: &mut Arena,
        items: &[(Value, Value)],
    ) -> Result<Option<Value>, String> {
        let buf = FieldsBuf::read(self.keys(arena), items);
        let f = buf.fields();
        if f.is_entry() {
            self.push_entry(arena, &f).map(Some)
        } else if f.is_frame() {
            Ok(Some(Value::Folded(
                TAG_FRAME,
                self.frame_of(arena, &f).raw(),
            )))
        } else {
            Ok(None)
        }
    }

    /// A trace entry's keys, read once per device trace: later entries
    /// with the same key bytes come to `fold_record` by position.
    fn record_fields(&mut self, arena: &mut Arena, items: &[(Value, Value)]) -> Option<Vec<u8>> {
        let keys = self.keys(arena);
        let buf = FieldsBuf::read(keys, items);
        let f = buf.fields();
        f.is_entry().then(|| {
            let field = |k| keys.field(k).and_then(|j| u8::try_from(j).ok());
            let field = |k| field(k).unwrap_or(IGNORED_FIELD);
            items.iter().map(|&(k, _)| field(k)).collect()
        })
    }

    #[inline]
    fn fold_record(
        &mut self,
        arena: &mut Arena,
        values: &[Value; MAX_FIELDS],
        present: u32,
    ) -> Result<Value, String> {
        // Borrowed, not copied: the record is 16 values, 256 bytes an entry.
        let f = Fields {
            values,
            // Fields past FIELDS are never asked for (`record_fields`).
            present: u16::try_from(present & u32::from(u16::MAX)).unwrap_or(0),
        };
        self.push_entry(arena, &f)
    }

    /// A `frames` list of frames already folded (torch's shape: every
    /// allocation's own list of shared frame dicts) → stack id, read
    /// through a reused buffer; anything else is left to `fold`.
    #[inline]
    fn fold_list(
        &mut self,
        arena: &mut Arena,
        key: Value,
        items: &[Value],
    ) -> Result<Option<Value>, String> {
        if key != Value::Str(self.keys(arena).ids[F_FRAMES]) {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.frame_buf);
        buf.clear();
        for &v in items {
            match v {
                Value::Folded(TAG_FRAME, f) => buf.push(FrameId::from_raw(f)),
                _ => {
                    self.frame_buf = buf;
                    return Ok(None);
                }
            }
        }
        let s = self.intern_stack(&buf);
        self.frame_buf = buf;
        Ok(Some(Value::Folded(TAG_STACK, s?.raw())))
    }

    fn fold(&mut self, arena: &mut Arena, id: ObjId, slot: Slot) -> Result<Option<Value>, String> {
        let k = self.keys(arena);
        let [kframes, kaction, kfile, kname] =
            [F_FRAMES, F_ACTION, F_FILENAME, F_NAME].map(|j| k.ids[j]);
        match (slot, arena.obj(id)) {
            (Slot::DictValue(key), Obj::List(_) | Obj::Run(_)) if key == Value::Str(kframes) => {
                let s = self.stack(arena, Value::Obj(id))?;
                Ok(Some(Value::Folded(TAG_STACK, s.raw())))
            }
            (Slot::ListItem, Obj::Dict(items)) => {
                let mut seen = self.kept.get(&id).copied().unwrap_or_default();
                let mut action = false;
                for (k, _) in &items[seen.len.min(items.len())..] {
                    match *k {
                        Value::Str(s) if s == kaction => action = true,
                        Value::Str(s) if s == kfile => seen.filename = true,
                        Value::Str(s) if s == kname => seen.name = true,
                        _ => {}
                    }
                }
                // Folding frees the slot for reuse: forget what was seen there.
                seen.len = items.len();
                if action {
                    self.kept.remove(&id);
                    let items = std::mem::take(match arena.obj_mut(id) {
                        Obj::Dict(d) => d,
                        _ => unreachable!("matched a dict above"),
                    });
                    let buf = FieldsBuf::read(self.keys(arena), &items);
                    let f = buf.fields();
                    let folded = self.push_entry(arena, &f)?;
                    arena.recycle_items(items);
                    Ok(Some(folded))
                } else if seen.filename && seen.name {
                    self.kept.remove(&id);
                    let items = items.clone();
                    let f = self.frame(arena, &items);
                    Ok(Some(Value::Folded(TAG_FRAME, f.raw())))
                } else {
                    if seen.len >= SCAN_MEMO_MIN_LEN {
                        self.kept.insert(id, seen);
                    }
                    Ok(None)
                }
            }
            _ => Ok(None),
        }
    }
}

impl Collector {
    /// Read a trace entry's fields into a typed record, kept; its folded id.
    #[inline(always)]
    fn push_entry(&mut self, arena: &mut Arena, f: &Fields<'_>) -> Result<Value, String> {
        let e = self.entry_of(arena, f)?;
        self.entries.push(e);
        let n = self.entries.len();
        if n.is_multiple_of(PREFAULT_ENTRIES) {
            self.entries
                .prefault(n + PREFAULT_ENTRIES, n + 2 * PREFAULT_ENTRIES);
        }
        Ok(Value::Folded(TAG_ENTRY, entry_id(n)?))
    }
}

/// The folded id of the trace entry just pushed (`len` entries now).
#[inline]
fn entry_id(len: usize) -> Result<u32, String> {
    crate::convert::last_id(len).ok_or_else(too_many_entries)
}

#[cold]
fn too_many_entries() -> String {
    format!("more than {} trace entries", u32::MAX)
}
