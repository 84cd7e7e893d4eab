//! The opcode loop: an iterative stack machine over the data opcodes of
//! protocols 0–5. Nothing is imported, called or executed.

use std::io::Read;

use super::flat;
use super::list_cache::ListCache;
use super::long::long_to_i128;
use super::memo::Memo;
use super::opcodes as op;
use super::reader::Reader;
use super::value::{Arena, Obj, ObjId, Value, NO_MEMO};
use super::{DecodeError, Decoded, Folder, Slot};
use crate::convert;

struct Machine<'f, R: Read, F: Folder> {
    /// Whether the flat-dict fast path is taken.
    fast: bool,
    input: Reader<R>,
    arena: Arena,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Memo,
    folder: &'f mut F,
    protocol: Option<u8>,
    /// Scratch for the flat-dict fast path.
    flat: flat::FlatDict,
    /// Dict shapes the folder reads as records (issue 33's entry templates).
    templates: Templates,
    /// The folder's answers for lists of memo reads, by their bytes.
    lists: ListCache,
    /// Offset and name of the opcode being executed, for errors.
    at: u64,
    opname: &'static str,
}

/// The most values the stack may hold at once. Python's pickler appends
/// and sets items in batches of 1000 and nests as deep as its recursion
/// limit, so a snapshot never comes near; a file of nothing but `]` or `}`
/// (one value per byte, ~56 bytes each) is refused at ~60 MB, not held
/// whole (650-700 MiB for 10 MB). Nesting a million deep still decodes.
const MAX_PENDING: usize = 1 << 21;

/// The templates kept at once: a device trace has one or two entry shapes
/// (with and without `frames`), a hostile file may alternate more.
const MAX_TEMPLATES: usize = 4;

/// A run parsed by [`Machine::parse_flat`]: the template that read it, or
/// (read without one) the template to learn from it.
type Parsed = (Option<usize>, Option<flat::Template>);

/// The templates learned so far, valid while the memo's slots are not
/// overwritten.
#[derive(Default)]
struct Templates {
    list: Vec<flat::Template>,
    /// [`Memo::overwrites`] when they were learned.
    epoch: u64,
}

impl Templates {
    /// Forget every template once a filled memo slot was written again
    /// (`overwrites` moved on), as [`ListCache::sync`] forgets its lists.
    #[inline]
    fn sync(&mut self, overwrites: u64) {
        if self.epoch != overwrites {
            self.list.clear();
            self.epoch = overwrites;
        }
    }
}

/// A growing list's spare room is pre-faulted this many items ahead (1 MB).
const PREFAULT_ITEMS: usize = 1 << 16;

/// Decode one pickle from `input` up to its first top-level `STOP`.
pub fn decode<R: Read, F: Folder>(
    input: R,
    len: Option<u64>,
    folder: &mut F,
) -> Result<Decoded, DecodeError> {
    decode_with(input, len, folder, true, None)
}

/// [`decode`] with the flat-dict fast path on or off (off: every opcode
/// through the general machine), also returning the final memo. For tests
/// and fuzzing, which check that both ways agree.
#[doc(hidden)]
pub fn decode_checked<R: Read, F: Folder>(
    input: R,
    len: Option<u64>,
    folder: &mut F,
    fast: bool,
) -> Result<(Decoded, Vec<(u32, Value)>), DecodeError> {
    let mut memo = Vec::new();
    let d = decode_with(input, len, folder, fast, Some(&mut memo))?;
    Ok((d, memo))
}

fn decode_with<R: Read, F: Folder>(
    input: R,
    len: Option<u64>,
    folder: &mut F,
    fast: bool,
    memo_out: Option<&mut Vec<(u32, Value)>>,
) -> Result<Decoded, DecodeError> {
    let mut m = Machine {
        fast,
        input: Reader::new(input, len),
        arena: Arena::default(),
        stack: Vec::new(),
        marks: Vec::new(),
        // Sized from the input (pages are touched only as they fill): a
        // multi-million-entry memo never reallocates.
        memo: Memo::with_capacity(convert::index(len.map_or(0, |l| (l / 8).min(1 << 27)))),
        folder,
        protocol: None,
        flat: flat::FlatDict::default(),
        templates: Templates::default(),
        lists: ListCache::default(),
        at: 0,
        opname: "",
    };
    m.folder.prepare(&mut m.arena);
    let root = m.run()?;
    if let Some(out) = memo_out {
        *out = m.memo.dump();
    }
    let end = m.input.offset();
    if let Some(what) = m.arena.overflow() {
        return Err(DecodeError::Invalid {
            offset: end,
            opcode: "STOP",
            message: format!("more than {} {what}", u32::MAX),
        });
    }
    Ok(Decoded {
        root,
        arena: m.arena,
        protocol: m.protocol,
        stop_offset: end,
        trailing_bytes: len.map_or(0, |l| l.saturating_sub(end)),
    })
}

impl<R: Read, F: Folder> Machine<'_, R, F> {
    fn invalid(&self, message: impl Into<String>) -> DecodeError {
        DecodeError::Invalid {
            offset: self.at,
            opcode: self.opname,
            message: message.into(),
        }
    }

    fn pop(&mut self) -> Result<Value, DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.invalid("stack underflow"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> Result<Value, DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.invalid("stack underflow"));
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    /// At least `k` values above the innermost mark.
    fn need(&self, k: usize) -> Result<(), DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() < floor + k {
            return Err(self.invalid("stack underflow"));
        }
        Ok(())
    }

    fn pop_mark(&mut self) -> Result<Vec<Value>, DecodeError> {
        let Some(mark) = self.marks.pop() else {
            return Err(self.invalid("no MARK on the stack"));
        };
        Ok(self.stack.split_off(mark))
    }

    fn push_int(&mut self, v: i128) {
        let value = match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => {
                self.arena.bigs.push(v);
                let len = self.arena.bigs.len();
                Value::BigInt(self.arena.id_of_last(len, "integers wider than 64 bits"))
            }
        };
        self.stack.push(value);
    }

    fn push_str(&mut self, bytes: &[u8]) {
        let id = intern_utf8(&mut self.arena, bytes);
        self.stack.push(Value::Str(id));
    }

    fn push_bytes(&mut self, bytes: Vec<u8>) {
        self.arena.bytes.push(bytes.into_boxed_slice());
        let len = self.arena.bytes.len();
        let id = self.arena.id_of_last(len, "bytes objects");
        self.stack.push(Value::Bytes(id));
    }

    fn new_obj(&mut self, obj: Obj) {
        let id = self.arena.alloc(obj);
        self.stack.push(Value::Obj(id));
    }

    #[inline(always)]
    fn memo_put(&mut self, index: u32, v: Value) {
        self.arena.note_memo(v, index);
        self.memo.put(index, v);
    }

    fn memo_get(&mut self, index: u64) -> Result<(), DecodeError> {
        let found = u32::try_from(index).ok().and_then(|i| self.memo.get(i));
        match found {
            Some(v) => {
                self.arena.pin(v);
                self.stack.push(v);
                Ok(())
            }
            None => Err(self.invalid(format!("memo key {index} was never stored"))),
        }
    }

    fn place(&mut self, v: Value, slot: Slot) -> Result<Value, DecodeError> {
        let fresh = matches!(v, Value::Obj(id) if !matches!(self.arena.obj(id), Obj::Folded(_)));
        let placed = place(&mut self.arena, self.folder, v, slot).map_err(|message| {
            DecodeError::Content {
                offset: self.at,
                opcode: self.opname,
                message,
            }
        })?;
        if let (true, Value::Obj(id), Value::Folded(..)) = (fresh, v, placed) {
            // Folded just now: its memo entry gets the folded value (memo
            // reads then never touch the arena), and an unshared slot is reused.
            let index = self.arena.folded(id);
            self.memo_patch(index, v, placed);
        }
        Ok(placed)
    }

    fn memo_patch(&mut self, index: u32, old: Value, new: Value) {
        if index != NO_MEMO {
            self.memo.patch(index, old, new);
        }
    }

    fn target(&self, v: Value, want: &str) -> Result<ObjId, DecodeError> {
        match v {
            Value::Obj(id) => match self.arena.obj(id) {
                Obj::Folded(_) => Err(self.invalid(format!(
                    "modifies a {want} that was already complete and consumed"
                ))),
                _ => Ok(id),
            },
            other => Err(self.invalid(format!(
                "expected a {want} to modify, found {}",
                self.arena.type_name(other)
            ))),
        }
    }

    /// Move `stack[from..]` into the list at `stack[from - 1]`.
    fn append_from(&mut self, from: usize) -> Result<(), DecodeError> {
        if from == 0 {
            return Err(self.invalid("stack underflow"));
        }
        let id = self.target(self.stack[from - 1], "list")?;
        if !matches!(self.arena.obj(id), Obj::List(_) | Obj::Run(_)) {
            let kind = self.arena.obj(id).kind();
            return Err(self.invalid(format!("cannot append to a {kind}")));
        }
        // Scalars and folded values need no placing (a batch of folded
        // trace entries is the common case).
        if self.stack[from..]
            .iter()
            .any(|v| matches!(v, Value::Obj(_)))
        {
            for i in from..self.stack.len() {
                self.stack[i] = self.place(self.stack[i], Slot::ListItem)?;
            }
        }
        // Consecutive folded records (a device's trace entries) are kept
        // as their range, when the folder allows: no item stored each.
        let folder = &*self.folder;
        if self
            .arena
            .append_run(id, &self.stack[from..], |tag| folder.runs(tag))
        {
            self.stack.truncate(from);
            return Ok(());
        }
        if let Obj::List(list) = self.arena.obj_mut(id) {
            let before = list.len();
            list.extend(self.stack.drain(from..));
            if before / PREFAULT_ITEMS != list.len() / PREFAULT_ITEMS {
                let n = list.len();
                crate::prefault::ahead(list, n, n + PREFAULT_ITEMS);
            }
        }
        Ok(())
    }

    /// Move the key/value pairs `stack[from..]` into the dict at `stack[from - 1]`.
    fn set_items_from(&mut self, from: usize) -> Result<(), DecodeError> {
        if from == 0 {
            return Err(self.invalid("stack underflow"));
        }
        if !(self.stack.len() - from).is_multiple_of(2) {
            return Err(self.invalid("odd number of items for a dict"));
        }
        let id = self.target(self.stack[from - 1], "dict")?;
        if !matches!(self.arena.obj(id), Obj::Dict(_)) {
            let kind = self.arena.obj(id).kind();
            return Err(self.invalid(format!("cannot set items on a {kind}")));
        }
        for i in (from..self.stack.len()).step_by(2) {
            self.stack[i + 1] = self.place(self.stack[i + 1], Slot::DictValue(self.stack[i]))?;
        }
        let mut rest = self.stack.drain(from..);
        if let Obj::Dict(dict) = self.arena.obj_mut(id) {
            dict.reserve(rest.len() / 2);
            while let (Some(k), Some(v)) = (rest.next(), rest.next()) {
                dict.push((k, v));
            }
        }
        Ok(())
    }

    /// Index where the items after the innermost MARK start, popping the mark.
    fn take_mark(&mut self) -> Result<usize, DecodeError> {
        match self.marks.pop() {
            Some(mark) => Ok(mark),
            None => Err(self.invalid("no MARK on the stack")),
        }
    }

    /// Replace the items after `mark` by a new container holding them.
    fn wrap_from(&mut self, mark: usize, obj: Obj) -> Result<(), DecodeError> {
        let id = self.arena.alloc(obj);
        self.stack.insert(mark, Value::Obj(id));
        match self.arena.obj(id) {
            Obj::Dict(_) => self.set_items_from(mark + 1),
            _ => self.append_from(mark + 1),
        }
    }

    fn tuple(&mut self, items: Vec<Value>) {
        self.new_obj(Obj::Tuple(items.into_boxed_slice()));
    }

    fn decimal_line(&mut self, what: &str) -> Result<i128, DecodeError> {
        let line = self.input.line(what)?;
        let text = String::from_utf8_lossy(&line);
        let t = text.trim().trim_end_matches('L');
        t.parse::<i128>().map_err(|_| {
            self.invalid(format!(
                "the argument ({} bytes) is not a decimal integer",
                line.len()
            ))
        })
    }

    fn run(&mut self) -> Result<Value, DecodeError> {
        loop {
            self.at = self.input.offset();
            let Some(code) = self.input.byte()? else {
                return Err(if self.at == 0 {
                    DecodeError::Empty
                } else {
                    DecodeError::Truncated {
                        offset: self.at,
                        what: "data ends before STOP".to_string(),
                    }
                });
            };
            let Some(name) = op::name(code) else {
                return Err(DecodeError::UnknownOpcode {
                    offset: self.at,
                    byte: code,
                });
            };
            self.opname = name;
            if op::runs_code(code) {
                return Err(DecodeError::Refused {
                    offset: self.at,
                    opcode: name,
                });
            }
            if code == op::STOP {
                return self
                    .pop()
                    .map_err(|_| self.invalid("STOP with an empty stack"));
            }
            if code == op::EMPTY_DICT && self.fast && self.flat_dict()? {
                continue;
            }
            self.step(code).map_err(|e| match e {
                // Report the opcode's offset, not where its argument ran out.
                DecodeError::Truncated { what, .. } => DecodeError::Truncated {
                    offset: self.at,
                    what: format!("opcode {what} is cut off"),
                },
                DecodeError::LengthPastEnd {
                    what, length, left, ..
                } => DecodeError::LengthPastEnd {
                    offset: self.at,
                    what,
                    length,
                    left,
                },
                other => other,
            })?;
            if self.stack.len() > MAX_PENDING {
                return Err(self.invalid(format!(
                    "more than {MAX_PENDING} values pending on the stack at once (a snapshot's \
                     writer leaves a few thousand at most)"
                )));
            }
        }
    }

    fn step(&mut self, code: u8) -> Result<(), DecodeError> {
        let n = self.opname;
        match code {
            op::PROTO => {
                let [v] = self.input.array::<1>(n)?;
                if v > op::HIGHEST_PROTOCOL {
                    return Err(DecodeError::Protocol {
                        offset: self.at,
                        version: v,
                    });
                }
                self.protocol = Some(v);
            }
            op::FRAME => {
                // Framing only groups opcodes for buffering; the stream is the same.
                self.input.array::<8>(n)?;
            }
            op::MARK => self.marks.push(self.stack.len()),
            op::POP => {
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() > floor {
                    self.stack.pop();
                } else {
                    self.pop_mark()?;
                }
            }
            op::POP_MARK => {
                self.pop_mark()?;
            }
            op::DUP => {
                let v = self.top()?;
                self.arena.pin(v);
                self.stack.push(v);
            }
            op::NONE => self.stack.push(Value::None),
            op::NEWTRUE => self.stack.push(Value::Bool(true)),
            op::NEWFALSE => self.stack.push(Value::Bool(false)),
            op::BININT => {
                let b = self.input.array::<4>(n)?;
                self.push_int(i128::from(i32::from_le_bytes(b)));
            }
            op::BININT1 => {
                let [b] = self.input.array::<1>(n)?;
                self.push_int(i128::from(b));
            }
            op::BININT2 => {
                let b = self.input.array::<2>(n)?;
                self.push_int(i128::from(u16::from_le_bytes(b)));
            }
            op::LONG1 => {
                let [len] = self.input.array::<1>(n)?;
                let bytes = self.input.short(len, n)?;
                let (v, negative) = (
                    long_to_i128(bytes),
                    bytes.last().is_some_and(|b| b & 0x80 != 0),
                );
                self.push_long(v, negative);
            }
            op::LONG4 => {
                let len = i32::from_le_bytes(self.input.array::<4>(n)?);
                if len < 0 {
                    return Err(self.invalid("negative byte count"));
                }
                let bytes = self.input.bytes(len.unsigned_abs().into(), n)?;
                let (v, negative) = (
                    long_to_i128(&bytes),
                    bytes.last().is_some_and(|b| b & 0x80 != 0),
                );
                self.push_long(v, negative);
            }
            op::INT => {
                let line = self.input.line(n)?;
                match line.as_slice() {
                    b"00" => self.stack.push(Value::Bool(false)),
                    b"01" => self.stack.push(Value::Bool(true)),
                    _ => {
                        let text = String::from_utf8_lossy(&line);
                        let v = text.trim().parse::<i128>().map_err(|_| {
                            self.invalid(format!(
                                "the argument ({} bytes) is not an integer",
                                line.len()
                            ))
                        })?;
                        self.push_int(v);
                    }
                }
            }
            op::LONG => {
                let line = self.input.line(n)?;
                let text = String::from_utf8_lossy(&line);
                let t = text.trim().trim_end_matches('L');
                let digits = t.trim_start_matches(['-', '+']);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(self.invalid(format!(
                        "the argument ({} bytes) is not an integer",
                        line.len()
                    )));
                }
                match t.parse::<i128>() {
                    Ok(v) => self.push_int(v),
                    Err(_) => self.stack.push(Value::HugeInt {
                        negative: t.starts_with('-'),
                    }),
                }
            }
            op::FLOAT => {
                let line = self.input.line(n)?;
                let text = String::from_utf8_lossy(&line);
                let v = text.trim().parse::<f64>().map_err(|_| {
                    self.invalid(format!(
                        "the argument ({} bytes) is not a float",
                        line.len()
                    ))
                })?;
                self.stack.push(Value::Float(v));
            }
            op::BINFLOAT => {
                let b = self.input.array::<8>(n)?;
                self.stack.push(Value::Float(f64::from_be_bytes(b)));
            }
            op::SHORT_BINUNICODE | op::SHORT_BINSTRING => {
                let [len] = self.input.array::<1>(n)?;
                let b = self.input.short(len, n)?;
                let id = intern_utf8(&mut self.arena, b);
                self.stack.push(Value::Str(id));
            }
            op::BINUNICODE => {
                let len = u32::from_le_bytes(self.input.array::<4>(n)?);
                let b = self.input.bytes(u64::from(len), n)?;
                self.push_str(&b);
            }
            op::BINUNICODE8 => {
                let len = u64::from_le_bytes(self.input.array::<8>(n)?);
                let b = self.input.bytes(len, n)?;
                self.push_str(&b);
            }
            op::BINSTRING => {
                let len = i32::from_le_bytes(self.input.array::<4>(n)?);
                if len < 0 {
                    return Err(self.invalid("negative byte count"));
                }
                let b = self.input.bytes(len.unsigned_abs().into(), n)?;
                self.push_str(&b);
            }
            op::STRING => {
                let line = self.input.line(n)?;
                let text = unquote_string(&line)
                    .ok_or_else(|| self.invalid("the STRING opcode argument must be quoted"))?;
                self.push_str(&text);
            }
            op::UNICODE => {
                let line = self.input.line(n)?;
                let text = raw_unicode_unescape(&line);
                let id = self.arena.strings.intern(&text);
                self.stack.push(Value::Str(id));
            }
            op::SHORT_BINBYTES => {
                let [len] = self.input.array::<1>(n)?;
                let b = self.input.bytes(u64::from(len), n)?;
                self.push_bytes(b);
            }
            op::BINBYTES => {
                let len = u32::from_le_bytes(self.input.array::<4>(n)?);
                let b = self.input.bytes(u64::from(len), n)?;
                self.push_bytes(b);
            }
            op::BINBYTES8 | op::BYTEARRAY8 => {
                let len = u64::from_le_bytes(self.input.array::<8>(n)?);
                let b = self.input.bytes(len, n)?;
                self.push_bytes(b);
            }
            op::NEXT_BUFFER | op::READONLY_BUFFER => {
                return Err(self.invalid("out-of-band buffers are not part of a memory snapshot"));
            }
            op::EMPTY_LIST => self.new_obj(Obj::List(Vec::new())),
            op::EMPTY_DICT => {
                let items = self.arena.new_items();
                self.new_obj(Obj::Dict(items));
            }
            op::EMPTY_TUPLE => self.tuple(Vec::new()),
            op::EMPTY_SET => self.new_obj(Obj::Set(Vec::new())),
            op::LIST => {
                let mark = self.take_mark()?;
                self.wrap_from(mark, Obj::List(Vec::new()))?;
            }
            op::DICT => {
                let mark = self.take_mark()?;
                self.wrap_from(mark, Obj::Dict(Vec::new()))?;
            }
            op::TUPLE => {
                let items = self.pop_mark()?;
                self.tuple(items);
            }
            op::FROZENSET => {
                let items = self.pop_mark()?;
                self.new_obj(Obj::Set(items));
            }
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let k = (code - op::TUPLE1 + 1) as usize;
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() < floor + k {
                    return Err(self.invalid("stack underflow"));
                }
                let items = self.stack.split_off(self.stack.len() - k);
                self.tuple(items);
            }
            op::APPEND => {
                self.need(2)?;
                self.append_from(self.stack.len() - 1)?;
            }
            op::APPENDS => {
                let mark = self.take_mark()?;
                self.append_from(mark)?;
            }
            op::SETITEM => {
                self.need(3)?;
                self.set_items_from(self.stack.len() - 2)?;
            }
            op::SETITEMS => {
                let mark = self.take_mark()?;
                self.set_items_from(mark)?;
            }
            op::ADDITEMS => {
                let items = self.pop_mark()?;
                let id = self.target(self.top()?, "set")?;
                match self.arena.obj_mut(id) {
                    Obj::Set(set) => set.extend(items),
                    _ => return Err(self.invalid("ADDITEMS on something that is not a set")),
                }
            }
            op::MEMOIZE => {
                let v = self.top()?;
                let index = self.memo.len();
                self.memo_put(index, v);
            }
            op::PUT => {
                let i = self.decimal_line(n)?;
                let index = u32::try_from(i).map_err(|_| self.invalid("memo key out of range"))?;
                let v = self.top()?;
                self.memo_put(index, v);
            }
            op::BINPUT => {
                let [i] = self.input.array::<1>(n)?;
                let v = self.top()?;
                self.memo_put(u32::from(i), v);
            }
            op::LONG_BINPUT => {
                let i = u32::from_le_bytes(self.input.array::<4>(n)?);
                let v = self.top()?;
                self.memo_put(i, v);
            }
            op::GET => {
                let i = self.decimal_line(n)?;
                let index = u64::try_from(i).map_err(|_| self.invalid("memo key out of range"))?;
                self.memo_get(index)?;
            }
            op::BINGET => {
                let [i] = self.input.array::<1>(n)?;
                self.memo_get(u64::from(i))?;
            }
            op::LONG_BINGET => {
                let i = u32::from_le_bytes(self.input.array::<4>(n)?);
                self.memo_get(u64::from(i))?;
            }
            _ => return Err(self.invalid("opcode not supported")),
        }
        Ok(())
    }

    /// Try the fast path for a dict of scalars right after `EMPTY_DICT`:
    /// by a template first, else by [`flat::parse`]. Returns false to
    /// decline: nothing consumed and nothing changed, but for strings the
    /// run interned (the general path interns them anyway).
    fn flat_dict(&mut self) -> Result<bool, DecodeError> {
        let Some((hit, learned)) = self.parse_flat()? else {
            return Ok(false);
        };
        // Commit. The folder sees the items first (it never reads the
        // memo), then the memo stores are made in stream order, the dict's
        // own slot first, exactly as the opcodes would have made them.
        // (`self.flat` is borrowed field by field, never moved: it holds a
        // record of 16 values, and a move per entry shows in a profile.)
        let len = self.flat.len;
        self.at += len as u64;
        self.input.advance(len);
        self.opname = "SETITEMS";
        self.commit_lists(hit)?;
        let fd = &self.flat;
        let folded = match hit {
            Some(_) => (self.folder)
                .fold_record(&mut self.arena, &fd.record, fd.present)
                .map(Some),
            None => self.folder.fold_flat(&mut self.arena, &fd.items),
        };
        let folded = folded.map_err(|message| DecodeError::Content {
            offset: self.at,
            opcode: "SETITEMS",
            message,
        })?;
        if let (Some(template), Some(_)) = (learned, folded) {
            self.learn(template);
        }
        let v = match folded {
            Some(v) => v,
            None => {
                let mut items = self.arena.new_items();
                items.extend_from_slice(&self.flat.items);
                Value::Obj(self.arena.alloc(Obj::Dict(items)))
            }
        };
        if let Some(i) = self.flat.dict_memo {
            self.memo_put(i, v);
        }
        for k in 0..self.flat.stores.len() {
            let (i, s) = self.flat.stores[k];
            self.memo_put(i, s);
        }
        self.stack.push(v);
        Ok(true)
    }

    /// Parse the run after `EMPTY_DICT` into `self.flat`: `None` declines;
    /// else which template read it, or (read without one) the template to
    /// learn from it, if the folder reads it as a record.
    #[inline(always)]
    fn parse_flat(&mut self) -> Result<Option<Parsed>, DecodeError> {
        let Machine {
            input,
            arena,
            memo,
            flat: fd,
            templates,
            lists,
            folder,
            ..
        } = self;
        let w = input.window(flat::WINDOW)?;
        let memo_len = memo.len();
        // A key's memo slot may hold another string now, a list's slots
        // other frames.
        templates.sync(memo.overwrites());
        lists.sync(memo.overwrites());
        let mut env = FlatEnv {
            memo,
            arena: &mut *arena,
            lists,
        };
        let hit = (templates.list.iter()).position(|t| t.parse(w, memo_len, &mut env, fd));
        if hit.is_some() {
            return Ok(Some((hit, None)));
        }
        if !flat::parse(w, memo_len, &mut env, fd) {
            return Ok(None);
        }
        let learned = folder
            .record_fields(arena, &fd.items)
            .and_then(|fields| flat::Template::learn(w, fd, &fields));
        Ok(Some((None, learned)))
    }

    /// Keep a template just learned, the newest first; the oldest goes
    /// past [`MAX_TEMPLATES`].
    fn learn(&mut self, t: flat::Template) {
        let list = &mut self.templates.list;
        list.insert(0, t);
        list.truncate(MAX_TEMPLATES);
    }

    /// The run's lists of memo reads, each offered to the folder as it is
    /// (`fold_list`, its answer cached by the list's bytes) unless its
    /// answer was cached, else built and placed as `SETITEMS` places a
    /// list: their values go into the items and into their memo stores.
    /// A template's lists (`hit`) go into the record, by field.
    fn commit_lists(&mut self, hit: Option<usize>) -> Result<(), DecodeError> {
        for n in 0..self.flat.lists.len() {
            let l = self.flat.lists[n].clone();
            let v = match l.cached {
                Some(v) => v,
                None => self.fold_list(&l)?,
            };
            let fd = &mut self.flat;
            match hit {
                Some(_) => {
                    if let Some(slot) = fd.record.get_mut(l.item) {
                        *slot = v;
                        fd.present |= 1 << l.item;
                    }
                }
                None => fd.items[l.item].1 = v,
            }
            if let Some(s) = l.store {
                fd.stores[s].1 = v;
            }
        }
        Ok(())
    }

    /// One list of the run offered to the folder (its answer cached), else
    /// built and placed.
    fn fold_list(&mut self, l: &flat::FlatList) -> Result<Value, DecodeError> {
        let items = &self.flat.list_values[l.values.clone()];
        match self.folder.fold_list(&mut self.arena, l.key, items) {
            Ok(Some(v)) => {
                let body = &self.flat.list_bytes[l.bytes.clone()];
                if !l.bytes.is_empty() {
                    self.lists.insert(self.memo.overwrites(), l.key, body, v);
                }
                Ok(v)
            }
            Ok(None) => {
                let id = self.arena.alloc(Obj::List(items.to_vec()));
                self.place(Value::Obj(id), Slot::DictValue(l.key))
            }
            Err(message) => Err(DecodeError::Content {
                offset: self.at,
                opcode: self.opname,
                message,
            }),
        }
    }

    fn push_long(&mut self, v: Option<i128>, negative: bool) {
        match v {
            Some(v) => self.push_int(v),
            None => self.stack.push(Value::HugeInt { negative }),
        }
    }
}

/// The machine's memo and strings, as the fast path sees them.
struct FlatEnv<'a> {
    memo: &'a Memo,
    arena: &'a mut Arena,
    lists: &'a ListCache,
}

impl flat::Env for FlatEnv<'_> {
    #[inline(always)]
    fn memo(&self, index: u32) -> Option<Value> {
        self.memo.get(index)
    }

    #[inline(always)]
    fn memo_str(&self, index: u32) -> Option<super::StrId> {
        self.memo.get_str(index)
    }

    #[inline(always)]
    fn intern(&mut self, bytes: &[u8]) -> super::StrId {
        intern_utf8(self.arena, bytes)
    }

    #[inline(always)]
    fn cached_list(&self, key: Value, body: &[u8]) -> Option<Value> {
        self.lists.get(key, body)
    }
}

/// Store a value into a container slot, letting the folder compact it; a
/// container folded once stays folded for every later (memo) reference.
pub(crate) fn place<F: Folder + ?Sized>(
    arena: &mut Arena,
    folder: &mut F,
    v: Value,
    slot: Slot,
) -> Result<Value, String> {
    let Value::Obj(id) = v else { return Ok(v) };
    match arena.obj(id) {
        Obj::Folded(f) => return Ok(*f),
        Obj::List(_) | Obj::Run(_) | Obj::Dict(_) => {}
        Obj::Tuple(_) | Obj::Set(_) => return Ok(v),
    }
    match folder.fold(arena, id, slot)? {
        Some(folded) => {
            *arena.obj_mut(id) = Obj::Folded(folded);
            Ok(folded)
        }
        None => Ok(v),
    }
}

/// Intern a string's bytes; lone surrogates (pickle's surrogatepass) and
/// other invalid UTF-8 are kept readable rather than refused.
fn intern_utf8(arena: &mut Arena, bytes: &[u8]) -> super::StrId {
    if let Some(id) = arena.strings.last_if(bytes) {
        return id;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => arena.strings.intern(s),
        Err(_) => arena.strings.intern(&String::from_utf8_lossy(bytes)),
    }
}

/// Protocol 0 `STRING`: a Python-quoted byte string with backslash escapes.
fn unquote_string(line: &[u8]) -> Option<Vec<u8>> {
    let (&q, rest) = line.split_first()?;
    if (q != b'\'' && q != b'"') || rest.last() != Some(&q) {
        return None;
    }
    let body = &rest[..rest.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b != b'\\' || i + 1 >= body.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = body[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'0' => out.push(0),
            b'x' if i + 2 <= body.len() => {
                let hex = std::str::from_utf8(&body[i..i + 2]).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Protocol 0 `UNICODE`: raw-unicode-escape (`\uXXXX`, `\UXXXXXXXX`, else Latin-1).
fn raw_unicode_unescape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b == b'\\' && i + 1 < line.len() && (line[i + 1] == b'u' || line[i + 1] == b'U') {
            let width = if line[i + 1] == b'u' { 4 } else { 8 };
            if i + 2 + width <= line.len() {
                let hex = String::from_utf8_lossy(&line[i + 2..i + 2 + width]);
                if let Ok(cp) = u32::from_str_radix(&hex, 16) {
                    out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                    i += 2 + width;
                    continue;
                }
            }
        }
        out.push(b as char);
        i += 1;
    }
    out
}
