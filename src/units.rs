//! Units as types: `Bytes` (one parser, one display) and `Percent`.

use std::fmt;

use humansize::{format_size, BINARY};

/// A byte count. Displays in binary units (KiB, MiB, GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// Which unit family a size string used, so errors can say what was meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitSystem {
    /// Plain bytes, `B` or a bare integer.
    Plain,
    /// KiB, MiB, GiB, TiB (powers of 1024).
    Binary,
    /// kB, MB, GB, TB (powers of 1000).
    Si,
}

const UNITS: &[(&str, u64, UnitSystem)] = &[
    ("b", 1, UnitSystem::Plain),
    ("kib", 1 << 10, UnitSystem::Binary),
    ("mib", 1 << 20, UnitSystem::Binary),
    ("gib", 1 << 30, UnitSystem::Binary),
    ("tib", 1 << 40, UnitSystem::Binary),
    ("kb", 1_000, UnitSystem::Si),
    ("mb", 1_000_000, UnitSystem::Si),
    ("gb", 1_000_000_000, UnitSystem::Si),
    ("tb", 1_000_000_000_000, UnitSystem::Si),
];

impl Bytes {
    /// Parse `"40 GiB"`, `"512MiB"`, `"1.5 GB"`, `"1024 B"`. A number with no
    /// unit is refused: in a quoted string it is more likely a forgotten
    /// unit than a byte count (a bare TOML integer is the byte count).
    /// Returns the value and which unit family was used.
    pub fn parse(text: &str) -> Result<(Bytes, UnitSystem), String> {
        let t = text.trim();
        if t.starts_with('-') {
            return Err(format!("{text:?} is negative; sizes are at least 0"));
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let num = num.replace('_', "");
        if num.is_empty() {
            return Err(format!(
                "{text:?} is not a size; write e.g. \"40 GiB\", \"512 MiB\" or a byte count"
            ));
        }
        let unit = unit.trim().to_ascii_lowercase();
        let (mult, system) = if unit.is_empty() {
            return Err(format!(
                "{text:?} has no unit; write \"{num} B\" for bytes or e.g. \"{num} GiB\" \
                 (a bare integer without quotes is a byte count)"
            ));
        } else {
            match UNITS.iter().find(|(u, _, _)| *u == unit) {
                Some((_, m, s)) => (*m, *s),
                None => {
                    return Err(format!(
                        "{text:?} has an unknown unit {unit:?}; use B, KiB, MiB, GiB, TiB \
                         (binary) or kB, MB, GB, TB (SI)"
                    ))
                }
            }
        };
        let value = if num.contains('.') {
            let f: f64 = num
                .parse()
                .map_err(|_| format!("{text:?} is not a number"))?;
            let v = f * mult as f64;
            if !v.is_finite() || v >= u64::MAX as f64 {
                return Err(format!("{text:?} is too large"));
            }
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "finite, not negative (a leading `-` is refused above, the number \
                          has only digits and dots) and below u64::MAX (checked above)"
            )]
            let bytes = v.round() as u64;
            bytes
        } else {
            let n: u64 = num.parse().map_err(|_| format!("{text:?} is too large"))?;
            n.checked_mul(mult)
                .ok_or_else(|| format!("{text:?} is too large"))?
        };
        Ok((Bytes(value), system))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0, BINARY))
    }
}

/// `1 entry`, `2 entries`: a count with its noun in the right number.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A signed byte difference, displayed with its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteDelta(pub i128);

impl fmt::Display for ByteDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "+" };
        let mag = u64::try_from(self.0.unsigned_abs()).unwrap_or(u64::MAX);
        write!(f, "{sign}{}", Bytes(mag))
    }
}

/// A percentage such as a tolerance (`"5%"`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Percent(pub f64);

impl Percent {
    /// Parse `"5%"` or `"2.5 %"`; the `%` is required so a size is never
    /// mistaken for a tolerance.
    pub fn parse(text: &str) -> Result<Percent, String> {
        let t = text.trim();
        let Some(num) = t.strip_suffix('%') else {
            return Err(format!("{text:?} is not a percentage; write e.g. \"5%\""));
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a percentage; write e.g. \"5%\""))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{text:?} must be a percentage of at least 0%"));
        }
        Ok(Percent(v))
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_and_si_units_and_say_which() {
        assert_eq!(
            Bytes::parse("40 GiB").unwrap(),
            (Bytes(40 << 30), UnitSystem::Binary)
        );
        assert_eq!(
            Bytes::parse("40 GB").unwrap(),
            (Bytes(40_000_000_000), UnitSystem::Si)
        );
        assert_eq!(Bytes::parse("1.5MiB").unwrap().0, Bytes(3 << 19));
        assert_eq!(
            Bytes::parse("1024 B").unwrap(),
            (Bytes(1024), UnitSystem::Plain)
        );
        assert!(Bytes::parse("5").unwrap_err().contains("has no unit"));
        assert!(Bytes::parse("-1 GiB").unwrap_err().contains("negative"));
        assert!(Bytes::parse("40 GX").unwrap_err().contains("unknown unit"));
        assert!(Bytes::parse("99999999999 TiB")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn a_count_of_one_takes_the_singular() {
        assert_eq!(counted(1u64, "entry", "entries"), "1 entry");
        assert_eq!(counted(0u64, "entry", "entries"), "0 entries");
        assert_eq!(counted(2u32, "OOM", "OOMs"), "2 OOMs");
    }

    #[test]
    fn sizes_display_in_binary_units() {
        assert_eq!(Bytes(3 << 29).to_string(), "1.50 GiB");
        assert_eq!(ByteDelta(-(1 << 20)).to_string(), "-1 MiB");
    }

    #[test]
    fn percentages_need_the_percent_sign() {
        assert_eq!(Percent::parse("5%").unwrap(), Percent(5.0));
        assert!(Percent::parse("5").is_err());
        assert!(Percent::parse("-1%").is_err());
    }
}
