//! A value or a change in a check's unit, as every report writes it
//! (binary units for sizes, plain numbers for counts).

use crate::units::{ByteDelta, Bytes};
use crate::vocab::Unit;

/// A value in the check's unit (binary units for sizes).
pub fn value(unit: Unit, v: u64) -> String {
    match unit {
        Unit::Bytes => Bytes(v).to_string(),
        Unit::Count => v.to_string(),
    }
}

/// A signed change in the check's unit (`+40 MiB`, `-3`).
pub fn delta(unit: Unit, d: i128) -> String {
    match unit {
        Unit::Bytes => ByteDelta(d).to_string(),
        Unit::Count => format!("{d:+}"),
    }
}
