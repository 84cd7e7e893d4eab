//! The decoded value graph: scalars inline, containers in an arena so that a
//! memo reference is an index (shared, never copied), strings interned.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::ops::Range;

/// Index of a container in the [`Arena`].
pub(crate) type ObjId = u32;
/// Index of an interned string in the [`Arena`].
pub(crate) type StrId = u32;

/// One decoded value. Small and `Copy`: containers are referenced by id.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Value {
    #[default]
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, stored in [`Arena::bigs`].
    BigInt(u32),
    /// An integer outside even `i128`: kept as "too large", never a number.
    HugeInt {
        negative: bool,
    },
    Float(f64),
    Str(StrId),
    Bytes(u32),
    Obj(ObjId),
    /// A container that a [`Folder`](super::Folder) turned into its own
    /// compact form; the tag and index mean whatever the folder says.
    Folded(u8, u32),
}

/// A container under construction or finished.
#[derive(Debug)]
pub enum Obj {
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Tuple(Box<[Value]>),
    Set(Vec<Value>),
    /// Replaced by a folder; memo references see the folded value.
    Folded(Value),
    /// A list of folded values of one tag, kept as the ranges they run through.
    Run(Run),
}

/// A list whose items are all `Value::Folded(tag, i)` of one tag, held as
/// the ranges of `i` they run through, in list order: what a folder's
/// records appended one after the other make (a device's trace), where a
/// record folded late (a dict the fast path left to the general machine,
/// folded when appended) only starts a new range. Read generically
/// ([`Arena::seq`]) it is spelled out once and kept; anything else
/// appended, or anything appended after such a read, makes it an
/// [`Obj::List`] again. At most 8 bytes an item, 16 as a list.
#[derive(Debug)]
pub struct Run {
    tag: u8,
    spans: Vec<Range<u32>>,
    len: usize,
    items: OnceCell<Box<[Value]>>,
}

impl Run {
    /// How many items the list has.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The tag, and the ranges of folded indices the items run through.
    pub(crate) fn spans(&self) -> (u8, &[Range<u32>]) {
        (self.tag, &self.spans)
    }

    /// The items as a list holds them, spelled out on the first call.
    fn items(&self) -> &[Value] {
        self.items.get_or_init(|| {
            let ids = self.spans.iter().flat_map(Clone::clone);
            ids.map(|i| Value::Folded(self.tag, i)).collect()
        })
    }

    /// Append `items` if they are all folded with this run's tag (each
    /// index below `u32::MAX`, so a range's end fits) and the run was never
    /// spelled out; false, with nothing changed, otherwise.
    fn extend(&mut self, items: &[Value]) -> bool {
        let fits = |v: &Value| matches!(*v, Value::Folded(t, i) if t == self.tag && i < u32::MAX);
        if self.items.get().is_some() || !items.iter().all(fits) {
            return false;
        }
        for &v in items {
            let Value::Folded(_, i) = v else { continue };
            match self.spans.last_mut() {
                Some(last) if last.end == i => last.end = i + 1,
                _ => self.spans.push(i..i + 1),
            }
        }
        self.len += items.len();
        true
    }
}

impl Obj {
    pub fn kind(&self) -> &'static str {
        match self {
            Obj::List(_) => "list",
            Obj::Dict(_) => "dict",
            Obj::Tuple(_) => "tuple",
            Obj::Set(_) => "set",
            Obj::Folded(_) => "consumed container",
            Obj::Run(_) => "list",
        }
    }
}

/// Strings interned by content: a key written a million times is stored once.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    map: HashMap<Box<str>, StrId>,
    list: Vec<Box<str>>,
    /// The id returned last.
    last: StrId,
    /// More distinct strings came than a 32-bit id names. `intern` cannot
    /// fail without changing every caller, so it answers `last` from then
    /// on and whoever finishes with the strings refuses them
    /// (`overflowed`, `into_strings`).
    overflowed: bool,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> StrId {
        // Equal strings written again back to back (an empty or placeholder
        // value in every trace entry) skip the hash.
        if let Some(last) = self.list.get(self.last as usize) {
            if **last == *s {
                return self.last;
            }
        }
        if let Some(&id) = self.map.get(s) {
            self.last = id;
            return id;
        }
        let Some(id) = crate::convert::last_id(self.list.len() + 1) else {
            self.overflowed = true;
            return self.last;
        };
        self.last = id;
        let boxed: Box<str> = s.into();
        self.list.push(boxed.clone());
        self.map.insert(boxed, id);
        id
    }

    /// The id returned last, if `bytes` are that string's bytes (checked
    /// before any UTF-8 validation or hashing: a placeholder written in
    /// every trace entry costs one short compare).
    #[inline]
    pub(crate) fn last_if(&self, bytes: &[u8]) -> Option<StrId> {
        let last = self.list.get(self.last as usize)?;
        (last.as_bytes() == bytes).then_some(self.last)
    }

    pub(crate) fn resolve(&self, id: StrId) -> &str {
        &self.list[id as usize]
    }

    /// True once more distinct strings came than a 32-bit id names.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Give up the lookup table, keep the strings (the model only resolves);
    /// `None` when they outgrew their 32-bit ids.
    pub(crate) fn into_strings(self) -> Option<Vec<Box<str>>> {
        (!self.overflowed).then_some(self.list)
    }
}

/// Who else holds a container: lets the decoder recycle the slot of a
/// container that was folded while only its own memo entry referred to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// The memo index it was stored under, or `NO_MEMO`.
    memo: u32,
    /// Referenced from more than one place (memo read, DUP, memoized twice).
    pinned: bool,
}

pub(crate) const NO_MEMO: u32 = u32::MAX;

impl Meta {
    const NEW: Meta = Meta {
        memo: NO_MEMO,
        pinned: false,
    };
}

/// Everything a decode produced besides the root value.
#[derive(Debug, Default)]
pub struct Arena {
    pub objs: Vec<Obj>,
    meta: Vec<Meta>,
    free: Vec<ObjId>,
    /// Emptied dict storage, reused so a million small dicts cost no mallocs.
    spare_items: Vec<Vec<(Value, Value)>>,
    pub(crate) strings: Interner,
    pub(crate) bigs: Vec<i128>,
    pub(crate) bytes: Vec<Box<[u8]>>,
    /// Set by `id_of_last`: the first kind of item past `u32::MAX`.
    overflow: Option<&'static str>,
}

impl Arena {
    pub(crate) fn alloc(&mut self, obj: Obj) -> ObjId {
        if let Some(id) = self.free.pop() {
            self.objs[id as usize] = obj;
            self.meta[id as usize] = Meta::NEW;
            return id;
        }
        self.objs.push(obj);
        self.meta.push(Meta::NEW);
        let len = self.objs.len();
        self.id_of_last(len, "live containers")
    }

    /// The 32-bit id of the item at position `len - 1` of one of the
    /// arena's vectors. Past `u32::MAX` the arena remembers what outgrew its
    /// ids and answers 0: the decode (and `build`) then fails on
    /// [`Arena::overflow`], so a wrapped id never reaches a figure, and the
    /// hot paths keep their shape (no `Result` per pushed value).
    #[inline]
    pub(crate) fn id_of_last(&mut self, len: usize, what: &'static str) -> u32 {
        match crate::convert::last_id(len) {
            Some(id) => id,
            None => {
                self.overflow.get_or_insert(what);
                0
            }
        }
    }

    /// What outgrew its 32-bit ids, if anything did (see `id_of_last`).
    pub(crate) fn overflow(&self) -> Option<&'static str> {
        self.overflow
            .or(self.strings.overflowed().then_some("distinct strings"))
    }

    /// Storage for a new dict (recycled when available).
    pub(crate) fn new_items(&mut self) -> Vec<(Value, Value)> {
        self.spare_items.pop().unwrap_or_default()
    }

    /// Give back a consumed dict's storage for reuse.
    pub(crate) fn recycle_items(&mut self, mut items: Vec<(Value, Value)>) {
        if self.spare_items.len() < 4096 && items.capacity() <= 64 {
            items.clear();
            self.spare_items.push(items);
        }
    }

    /// A second reference to `v` now exists (memo read, DUP).
    pub(crate) fn pin(&mut self, v: Value) {
        if let Value::Obj(id) = v {
            self.meta[id as usize].pinned = true;
        }
    }

    /// `v` was stored in the memo under `index`.
    #[inline]
    pub(crate) fn note_memo(&mut self, v: Value, index: u32) {
        if let Value::Obj(id) = v {
            let m = &mut self.meta[id as usize];
            if m.memo == NO_MEMO {
                m.memo = index;
            } else {
                m.pinned = true;
            }
        }
    }

    /// A container was just folded: free its slot when nobody else holds
    /// it. Returns the memo index that should now hold the folded value, so
    /// later memo reads skip the arena (or `NO_MEMO`).
    pub(crate) fn folded(&mut self, id: ObjId) -> u32 {
        let m = self.meta[id as usize];
        if !m.pinned {
            self.objs[id as usize] = Obj::List(Vec::new());
            self.free.push(id);
        }
        m.memo
    }

    /// Append `items` to list `id` as a [`Run`] when it is one, or when
    /// it is empty and they are folded with a tag that `keep` allows runs
    /// of. Returns false when they were not appended: the list is then an
    /// [`Obj::List`] (a run spelled out), ready for a plain extend.
    pub(crate) fn append_run(
        &mut self,
        id: ObjId,
        items: &[Value],
        keep: impl Fn(u8) -> bool,
    ) -> bool {
        let obj = &mut self.objs[id as usize];
        match obj {
            Obj::Run(run) => {
                if run.extend(items) {
                    return true;
                }
                let spelled = run.items().to_vec();
                *obj = Obj::List(spelled);
                false
            }
            Obj::List(list) if list.is_empty() => {
                let Some(&Value::Folded(tag, _)) = items.first() else {
                    return false;
                };
                if !keep(tag) {
                    return false;
                }
                let mut run = Run {
                    tag,
                    spans: Vec::new(),
                    len: 0,
                    items: OnceCell::new(),
                };
                if !run.extend(items) {
                    return false;
                }
                *obj = Obj::Run(run);
                true
            }
            _ => false,
        }
    }

    /// The tag and the ranges of a list held as a [`Run`], read without
    /// spelling it out.
    pub(crate) fn run(&self, v: Value) -> Option<(u8, &[Range<u32>])> {
        match self.resolve(v) {
            Value::Obj(id) => match self.obj(id) {
                Obj::Run(run) => Some(run.spans()),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn obj(&self, id: ObjId) -> &Obj {
        &self.objs[id as usize]
    }

    pub(crate) fn obj_mut(&mut self, id: ObjId) -> &mut Obj {
        &mut self.objs[id as usize]
    }

    pub fn str(&self, id: StrId) -> &str {
        self.strings.resolve(id)
    }

    /// Follow a folded container to its folded value.
    pub(crate) fn resolve(&self, v: Value) -> Value {
        if let Value::Obj(id) = v {
            if let Obj::Folded(f) = self.obj(id) {
                return *f;
            }
        }
        v
    }

    /// The integer as `i128`, when it is one.
    pub fn int(&self, v: Value) -> Option<i128> {
        match v {
            Value::Int(i) => Some(i128::from(i)),
            Value::BigInt(i) => Some(self.bigs[i as usize]),
            Value::Bool(b) => Some(i128::from(b)),
            _ => None,
        }
    }

    /// The entries of a dict value, if it is one.
    pub fn dict(&self, v: Value) -> Option<&[(Value, Value)]> {
        match self.resolve(v) {
            Value::Obj(id) => match self.obj(id) {
                Obj::Dict(items) => Some(items),
                _ => None,
            },
            _ => None,
        }
    }

    /// The items of a list or tuple value, if it is one.
    pub fn seq(&self, v: Value) -> Option<&[Value]> {
        match self.resolve(v) {
            Value::Obj(id) => match self.obj(id) {
                Obj::List(items) | Obj::Set(items) => Some(items),
                Obj::Tuple(items) => Some(items),
                Obj::Run(run) => Some(run.items()),
                _ => None,
            },
            _ => None,
        }
    }

    /// A canonical text form of a value (containers expanded, at most
    /// `budget` nodes and 32 levels deep): two decodes of the same bytes
    /// must render alike.
    #[doc(hidden)]
    pub fn render(&self, v: Value, budget: &mut usize) -> String {
        self.render_at(v, budget, 0)
    }

    fn render_at(&self, v: Value, budget: &mut usize, depth: usize) -> String {
        if *budget == 0 || depth > 32 {
            return "…".into();
        }
        *budget -= 1;
        let many = |items: &[Value], budget: &mut usize| {
            let parts: Vec<String> = items
                .iter()
                .map(|&i| self.render_at(i, budget, depth + 1))
                .collect();
            parts.join(", ")
        };
        match v {
            Value::Str(s) => format!("{:?}", self.str(s)),
            Value::BigInt(i) => self.bigs[i as usize].to_string(),
            Value::Bytes(b) => format!("b{:?}", self.bytes[b as usize]),
            Value::Obj(id) => match self.obj(id) {
                Obj::List(items) => format!("[{}]", many(items, budget)),
                Obj::Tuple(items) => format!("({})", many(items, budget)),
                Obj::Set(items) => format!("{{{}}}", many(items, budget)),
                Obj::Dict(items) => {
                    let parts: Vec<String> = items
                        .iter()
                        .map(|&(k, v)| {
                            let k = self.render_at(k, budget, depth + 1);
                            format!("{k}: {}", self.render_at(v, budget, depth + 1))
                        })
                        .collect();
                    format!("{{{}}}", parts.join(", "))
                }
                Obj::Folded(f) => format!("folded {f:?}"),
                Obj::Run(run) => format!("[{}]", many(run.items(), budget)),
            },
            other => format!("{other:?}"),
        }
    }

    /// Python's name for the type of a value, for error messages.
    pub fn type_name(&self, v: Value) -> &'static str {
        match self.resolve(v) {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) | Value::HugeInt { .. } => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Obj(id) => self.obj(id).kind(),
            Value::Folded(..) => "consumed container",
        }
    }
}
