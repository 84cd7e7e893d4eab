//! Integer conversions the cast lints cannot prove lossless, each proved
//! once here, so the rest of the crate converts without a bare `as`.
//!
//! `Cargo.toml` denies `cast_possible_truncation`, `cast_sign_loss` and
//! `cast_possible_wrap`. The `as` casts left in the crate are the ones those
//! lints accept: widenings that keep every value on the 64-bit targets
//! asserted below (`u8`/`u16`/`u32` → `usize`, `usize` → `u64`), and
//! integers → `f64` for ratios, fits and charts, which are floats anyway.

// Positions into in-memory vectors are stored as `u64` (trace entry indices,
// byte offsets of a buffer); on a 64-bit target every one of them fits a
// `usize`, which makes `index` lossless. memgate is built for 64-bit targets
// only: a snapshot worth gating does not fit a 32-bit address space anyway.
const _: () = assert!(usize::BITS == 64, "memgate needs a 64-bit target");

/// A `u64` position or length of something held in memory, as a `usize`.
#[inline(always)]
#[expect(
    clippy::cast_possible_truncation,
    reason = "usize is 64 bits: asserted at compile time above"
)]
pub(crate) const fn index(i: u64) -> usize {
    i as usize
}

/// A position in a vector, as the `i64` the moment and chart code uses with
/// `-1` for "before any entry". `Vec` keeps positions below `isize::MAX`, so
/// the saturation never happens; it only spares a wrapped negative.
#[inline]
pub(crate) fn position(i: u64) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}

/// The 32-bit id of the item at position `len - 1` of a vector of `len`
/// items (the one just pushed), or `None` past `u32::MAX`: ids are 32 bits
/// wide to keep the decoded graph small, so a larger input is an error,
/// never a wrapped id.
#[inline(always)]
pub(crate) fn last_id(len: usize) -> Option<u32> {
    u32::try_from(len.checked_sub(1)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_id_is_the_position_just_filled_and_none_past_u32() {
        assert_eq!(last_id(0), None);
        assert_eq!(last_id(1), Some(0));
        let max = usize::try_from(u32::MAX).unwrap();
        assert_eq!(last_id(max + 1), Some(u32::MAX));
        assert_eq!(last_id(max + 2), None);
    }

    #[test]
    fn a_position_past_i64_saturates_instead_of_turning_negative() {
        assert_eq!(position(0), 0);
        assert_eq!(position(7), 7);
        assert_eq!(position(u64::MAX), i64::MAX);
        assert_eq!(index(u64::MAX), usize::MAX);
    }
}
