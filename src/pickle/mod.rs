//! A data-only pickle decoder (protocols 0–5). The only code in memgate that
//! knows opcodes; it knows nothing about PyTorch. Opcodes that would import or
//! call code are refused with their name and byte offset.

mod decoder;
mod flat;
mod list_cache;
mod long;
mod memo;
mod opcodes;
mod reader;
mod value;

pub(crate) use decoder::place;
pub use decoder::{decode, decode_checked};
pub use flat::MAX_FIELDS;
pub use value::{Arena, Value};
pub(crate) use value::{Obj, ObjId, StrId};

use thiserror::Error;

/// What a successful decode returns.
#[derive(Debug)]
pub struct Decoded {
    pub root: Value,
    pub arena: Arena,
    /// The `PROTO` version, `None` for protocol 0/1 streams (they have none).
    pub(crate) protocol: Option<u8>,
    /// Byte offset just after the top-level `STOP`.
    pub stop_offset: u64,
    /// Bytes after `STOP` (legal: old torch_npu dumps, HTML padding).
    pub(crate) trailing_bytes: u64,
}

/// Where a container is being stored, so a folder can decide what it is.
#[derive(Debug, Clone, Copy)]
pub enum Slot {
    ListItem,
    /// The value of a dict item, with its key.
    DictValue(Value),
}

/// Lets the consumer compact a finished container the moment it is stored
/// into its parent (a trace entry into a typed record, a frame list into a
/// stack id), so a decode never holds the whole generic tree.
pub trait Folder {
    /// Called once on the fresh arena before decoding starts (intern the
    /// keys the folder looks for, so they get the first ids).
    fn prepare(&mut self, _arena: &mut Arena) {}

    /// Return `Some(value)` to replace container `id` everywhere (also in
    /// the memo), `None` to keep it, or an error message to stop decoding.
    fn fold(&mut self, arena: &mut Arena, id: ObjId, slot: Slot) -> Result<Option<Value>, String>;

    /// Offered every freshly completed dict of scalars and memo references
    /// (the shape of trace entries and frames) before it is built: return
    /// `Some(value)` to use that value instead of a dict, as if it had been
    /// folded already.
    fn fold_flat(
        &mut self,
        _arena: &mut Arena,
        _items: &[(Value, Value)],
    ) -> Result<Option<Value>, String> {
        Ok(None)
    }

    /// Offered every list of memo reads that is a dict value of such a
    /// dict (torch's `frames` of an allocation), its items resolved, before
    /// any list is built: return `Some(value)` to use that value instead,
    /// as if the list had been folded already. `None` builds the list and
    /// places it as usual (`fold` with `Slot::DictValue(key)`).
    ///
    /// Must be a pure function of `key` and the item values: a `Some`
    /// answer is cached by the list's bytes, and a later list of the same
    /// bytes under the same key, while the memo slots it reads are not
    /// overwritten, gets that answer without this being called again.
    fn fold_list(
        &mut self,
        _arena: &mut Arena,
        _key: Value,
        _items: &[Value],
    ) -> Result<Option<Value>, String> {
        Ok(None)
    }

    /// Asked about a dict `fold_flat` just folded whose keys are all memo
    /// reads: the field each item is read as ([`IGNORED_FIELD`] for one it
    /// does not read), to read later dicts with the same key bytes by
    /// position (a template) and hand them to `fold_record`; `None` (the
    /// default) learns no template.
    fn record_fields(&mut self, _arena: &mut Arena, _items: &[(Value, Value)]) -> Option<Vec<u8>> {
        None
    }

    /// A dict read by a template: `values[j]` is the value of field `j`
    /// where bit `j` of `present` is set (the last of a repeated key).
    /// Must fold exactly as `fold_flat` folds the same dict (a record is
    /// always folded). Called only for templates `record_fields` asked for.
    fn fold_record(
        &mut self,
        _arena: &mut Arena,
        _values: &[Value; MAX_FIELDS],
        _present: u32,
    ) -> Result<Value, String> {
        Err("a record read by a template its folder never asked for".into())
    }

    /// Whether a list of values folded with `tag`, appended in order of
    /// their index (`Folded(tag, i)`, `Folded(tag, i + 1)`, …), may be kept
    /// as the range of indices instead of item by item (the arena's `Run`).
    /// It reads as a list either way; only the memory differs.
    fn runs(&self, _tag: u8) -> bool {
        false
    }
}

/// How [`Folder::record_fields`] marks an item it does not read.
pub const IGNORED_FIELD: u8 = u8::MAX;

/// A folder that keeps every container as it is.
pub struct KeepAll;

impl Folder for KeepAll {
    fn fold(&mut self, _: &mut Arena, _: ObjId, _: Slot) -> Result<Option<Value>, String> {
        Ok(None)
    }
}

/// Why a pickle could not be decoded. Every variant names a byte offset.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DecodeError {
    #[error("the file is empty (0 bytes): a crashed or interrupted dump")]
    Empty,
    #[error("truncated pickle: {what} at byte offset {offset}")]
    Truncated { offset: u64, what: String },
    #[error(
        "truncated pickle: opcode {what} at byte offset {offset} declares {length} bytes \
         but only {left} are left"
    )]
    LengthPastEnd {
        offset: u64,
        what: String,
        length: u64,
        left: u64,
    },
    #[error(
        "refused opcode {opcode} at byte offset {offset}: it would import or call code \
         (memgate decodes snapshots as data only)"
    )]
    Refused { offset: u64, opcode: &'static str },
    #[error(
        "unknown pickle opcode 0x{byte:02x} at byte offset {offset}: not a pickle, or corrupt"
    )]
    UnknownOpcode { offset: u64, byte: u8 },
    #[error(
        "unsupported pickle protocol {version}: opcode PROTO at byte offset {offset} \
         (newest known is 5)"
    )]
    Protocol { offset: u64, version: u8 },
    #[error("invalid pickle at byte offset {offset}, opcode {opcode}: {message}")]
    Invalid {
        offset: u64,
        opcode: &'static str,
        message: String,
    },
    #[error("at byte offset {offset}, opcode {opcode}: {message}")]
    Content {
        offset: u64,
        opcode: &'static str,
        message: String,
    },
    #[error("read error at byte offset {offset}: {message}")]
    Io { offset: u64, message: String },
}

#[cfg(test)]
mod tests;
