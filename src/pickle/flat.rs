//! Fast path for the opcode run that dominates every snapshot: a dict of
//! scalars and memo references (`EMPTY_DICT MEMOIZE MARK (key value)*
//! SETITEMS`), a million trace entries in a large file. The run is parsed in
//! one tight loop over the buffered bytes with no effect until it is known
//! to be complete and plain; anything else (a nested container, an argument
//! crossing the buffer, a refused opcode) declines and the general machine
//! decodes the same bytes with the same result.

use super::opcodes as op;
use super::value::Value;

/// Longest run considered (bytes); longer dicts take the general path.
pub(crate) const WINDOW: usize = 4096;
/// Most items considered; wider dicts take the general path.
const MAX_ITEMS: usize = 64;

/// A memo store seen inside the run, applied in stream order on commit.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MemoOp {
    /// `MEMOIZE`: the next implicit index.
    Next,
    /// `BINPUT` / `LONG_BINPUT` with an explicit index.
    At(u32),
}

/// One key or value of the run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Token {
    Value(Value),
    /// A memo read to resolve.
    Get(u32),
    /// A new string: `bytes[start..end]` of the window.
    Str(usize, usize),
}

/// The parsed run: items as tokens, memo stores, and its length.
#[derive(Debug, Default)]
pub(crate) struct FlatDict {
    /// The dict's own memo store (right after `EMPTY_DICT`), if any.
    pub dict_memo: Option<MemoOp>,
    /// Key and value tokens, alternating, each with the memo store that
    /// followed it (strings only).
    pub tokens: Vec<(Token, Option<MemoOp>)>,
    /// Bytes consumed after `EMPTY_DICT`, up to and including `SETITEMS`.
    pub len: usize,
    /// Window offset of the `SETITEMS` opcode.
    pub setitems_at: usize,
    /// Scratch: memo reads resolved, memo slots the run writes.
    pub resolved: Vec<Value>,
    pub written: Vec<u32>,
}

fn u32_at(w: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(w.get(i..i + 4)?.try_into().ok()?))
}

/// An optional memo store at `w[*i]`.
fn memo_op(w: &[u8], i: &mut usize) -> Option<Option<MemoOp>> {
    match w.get(*i) {
        Some(&op::MEMOIZE) => {
            *i += 1;
            Some(Some(MemoOp::Next))
        }
        Some(&op::BINPUT) => {
            let idx = *w.get(*i + 1)? as u32;
            *i += 2;
            Some(Some(MemoOp::At(idx)))
        }
        Some(&op::LONG_BINPUT) => {
            let idx = u32_at(w, *i + 1)?;
            *i += 5;
            Some(Some(MemoOp::At(idx)))
        }
        Some(_) => Some(None),
        None => None,
    }
}

/// One key or value token at `w[*i]`; `None` declines the fast path.
fn token(w: &[u8], i: &mut usize) -> Option<Token> {
    let at = *i;
    let code = *w.get(at)?;
    let (tok, len) = match code {
        op::BINGET => (Token::Get(*w.get(at + 1)? as u32), 2),
        op::LONG_BINGET => (Token::Get(u32_at(w, at + 1)?), 5),
        op::SHORT_BINUNICODE => {
            let n = *w.get(at + 1)? as usize;
            (Token::Str(at + 2, at + 2 + n), 2 + n)
        }
        op::BINUNICODE => {
            let n = u32_at(w, at + 1)? as usize;
            if n > WINDOW {
                return None;
            }
            (Token::Str(at + 5, at + 5 + n), 5 + n)
        }
        op::BININT1 => (Token::Value(Value::Int(*w.get(at + 1)? as i64)), 2),
        op::BININT2 => {
            let b: [u8; 2] = w.get(at + 1..at + 3)?.try_into().ok()?;
            (Token::Value(Value::Int(u16::from_le_bytes(b) as i64)), 3)
        }
        op::BININT => {
            let v = u32_at(w, at + 1)? as i32;
            (Token::Value(Value::Int(v as i64)), 5)
        }
        op::LONG1 => {
            let n = *w.get(at + 1)? as usize;
            if n > 8 {
                return None;
            }
            let bytes = w.get(at + 2..at + 2 + n)?;
            let v = super::decoder::long_to_i128(bytes)?;
            (Token::Value(Value::Int(i64::try_from(v).ok()?)), 2 + n)
        }
        op::NEWTRUE => (Token::Value(Value::Bool(true)), 1),
        op::NEWFALSE => (Token::Value(Value::Bool(false)), 1),
        op::NONE => (Token::Value(Value::None), 1),
        op::BINFLOAT => {
            let b: [u8; 8] = w.get(at + 1..at + 9)?.try_into().ok()?;
            (Token::Value(Value::Float(f64::from_be_bytes(b))), 9)
        }
        _ => return None,
    };
    if at + len > w.len() {
        return None;
    }
    *i = at + len;
    Some(tok)
}

/// Parse the run after an `EMPTY_DICT` into `out`; false declines.
pub(crate) fn parse(w: &[u8], out: &mut FlatDict) -> bool {
    out.tokens.clear();
    let mut i = 0;
    let Some(dict_memo) = memo_op(w, &mut i) else {
        return false;
    };
    out.dict_memo = dict_memo;
    if w.get(i) != Some(&op::MARK) {
        return false;
    }
    i += 1;
    loop {
        if w.get(i) == Some(&op::SETITEMS) {
            if !out.tokens.len().is_multiple_of(2) {
                return false;
            }
            out.setitems_at = i;
            out.len = i + 1;
            return true;
        }
        if out.tokens.len() >= 2 * MAX_ITEMS {
            return false;
        }
        let Some(tok) = token(w, &mut i) else {
            return false;
        };
        let memo = if matches!(tok, Token::Str(..)) {
            match memo_op(w, &mut i) {
                Some(m) => m,
                None => return false,
            }
        } else {
            None
        };
        out.tokens.push((tok, memo));
    }
}
