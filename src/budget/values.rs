//! Values of the budget file: sizes with units (and what was meant by an
//! ambiguous one), counts, percentages, the `{ limit, level }` form, and
//! lists of figure ids.

use toml::Value;

use super::raw::{Leaf, List};
use super::validate::Validator;
use super::{Amount, Level, Limit, Tolerance};
use crate::units::{Bytes, Percent};
use crate::vocab::{Figure, Unit};

/// A limit as the budget file writes it (`0.2 GB`, `0`), without TOML's
/// quotes: reports show it beside the value in binary units.
fn written(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Validator<'_> {
    /// A size (`"40 GiB"`, bytes) or a count, plain or `{ limit, level }`.
    pub(super) fn limit(&mut self, leaf: &Leaf, key: &str, unit: Unit) -> Option<Limit> {
        let (value, level) = self.with_level(leaf, key)?;
        let n = match unit {
            Unit::Bytes => size_value(value).map(|b| Amount::Bytes(Bytes(b))),
            Unit::Count => count_value(value).map(Amount::Count),
        };
        match n {
            Ok(n) => Some(Limit {
                value: n,
                written: written(value),
                share_of_device: None,
                share_of_reserved: None,
                level,
                loc: self.loc(leaf.span()),
            }),
            Err(m) => {
                self.err(leaf.span(), key, m);
                None
            }
        }
    }

    /// A `[target.budget]` figure's limit: as [`Self::limit`], or for a
    /// byte figure a share of the device, `"92% of device"`, or for
    /// `cached-free-at-reserved-peak` a share of the reserved peak,
    /// `"20% of reserved"`.
    pub(super) fn figure_limit(&mut self, leaf: &Leaf, key: &str, f: Figure) -> Option<Limit> {
        // A wrong `{ limit, level }` is reported here, once.
        let (value, level) = self.with_level(leaf, key)?;
        let (share, of_reserved) = match value {
            Value::String(s) if f.is_bytes() => match share_of_reserved(s, f) {
                Some(r) => (Some(r), true),
                None => (share_of_device(s), false),
            },
            _ => (None, false),
        };
        let Some(share) = share else {
            return self.limit(leaf, key, f.unit());
        };
        match share {
            Ok(pct) => Some(Limit {
                value: Amount::Bytes(Bytes(0)),
                share_of_device: (!of_reserved).then_some(pct),
                share_of_reserved: of_reserved.then_some(pct),
                written: written(value),
                level,
                loc: self.loc(leaf.span()),
            }),
            Err(m) => {
                self.err(leaf.span(), key, m);
                None
            }
        }
    }

    pub(super) fn size(&mut self, leaf: &Leaf, key: &str) -> Option<u64> {
        size_value(leaf.get_ref())
            .map_err(|m| self.err(leaf.span(), key, m))
            .ok()
    }

    pub(super) fn tolerance(&mut self, leaf: &Leaf, key: &str) -> Option<Tolerance> {
        let (value, level) = self.with_level(leaf, key)?;
        let pct = match value {
            Value::String(s) => Percent::parse(s),
            other => Err(format!(
                "{other} is not a percentage; write it as a string, e.g. \"5%\""
            )),
        };
        match pct {
            Ok(pct) => Some(Tolerance {
                pct,
                level,
                loc: Some(self.loc(leaf.span())),
            }),
            Err(m) => {
                self.err(leaf.span(), key, m);
                None
            }
        }
    }

    /// A list of figure ids (`defaults.figures`), in report order; each
    /// unknown or repeated id is reported where it is written.
    pub(super) fn figure_list(&mut self, list: &List, key: &str) -> Option<Vec<Figure>> {
        let Some(items) = &list.items else {
            let found = list.whole.get_ref().type_str();
            let msg =
                format!("must be a list of figure ids, e.g. [\"allocated-peak\"], not {found}");
            self.err(list.whole.span(), key, msg);
            return None;
        };
        let mut figures = Vec::new();
        let mut ok = true;
        for item in items {
            let figure = match item.get_ref() {
                Value::String(s) => Figure::from_id(s).ok_or_else(|| {
                    let ids: Vec<&str> = Figure::ALL.iter().map(|f| f.id()).collect();
                    let hint = super::suggest::hint(s, &ids);
                    format!("unknown figure `{s}`; {hint}")
                }),
                other => Err(format!(
                    "must be a figure id (a string), not {}",
                    other.type_str()
                )),
            };
            match figure {
                Ok(f) if figures.contains(&f) => {
                    self.err(item.span(), key, format!("`{f}` is listed twice"));
                    ok = false;
                }
                Ok(f) => figures.push(f),
                Err(m) => {
                    self.err(item.span(), key, m);
                    ok = false;
                }
            }
        }
        figures.sort();
        ok.then_some(figures)
    }

    /// Split `{ limit = …, level = "warn" }` from a plain value.
    pub(super) fn with_level<'v>(
        &mut self,
        leaf: &'v Leaf,
        key: &str,
    ) -> Option<(&'v Value, Level)> {
        let Value::Table(t) = leaf.get_ref() else {
            return Some((leaf.get_ref(), Level::Fail));
        };
        let mut ok = true;
        for k in t.keys().filter(|k| *k != "limit" && *k != "level") {
            self.err(
                leaf.span(),
                key,
                format!("unknown key `{k}` in the table; expected limit, level"),
            );
            ok = false;
        }
        let level = match t.get("level").map(|l| l.as_str()) {
            None | Some(Some("fail")) => Level::Fail,
            Some(Some("warn")) => Level::Warn,
            Some(_) => {
                self.err(leaf.span(), key, "`level` must be \"fail\" or \"warn\"");
                ok = false;
                Level::Fail
            }
        };
        let Some(limit) = t.get("limit") else {
            self.err(
                leaf.span(),
                key,
                "the table needs a `limit`, e.g. { limit = \"60 GiB\", level = \"warn\" }",
            );
            return None;
        };
        ok.then_some((limit, level))
    }
}

/// The reason of a multi-line error (a regex error ends with it).
pub(crate) fn last_line(s: &str) -> String {
    s.lines().last().unwrap_or(s).trim().to_string()
}

/// A size: a string with a unit, or an integer byte count.
pub(super) fn size_value(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) => {
            u64::try_from(*i).map_err(|_| format!("{i} is negative; sizes are at least 0"))
        }
        Value::String(s) => Bytes::parse(s)
            .map(|(b, _)| b.0)
            .map_err(|m| unit_hint(s, m)),
        other => Err(format!(
            "must be a size such as \"40 GiB\" or a byte count, not {}",
            other.type_str()
        )),
    }
}

/// Say which unit was probably meant for `"40 G"`, `"512m"`, `"5%"`.
pub(super) fn unit_hint(text: &str, message: String) -> String {
    let t = text.trim();
    let unit = t
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_')
        .trim();
    let number = &t[..t.len() - unit.len()].trim();
    match unit.to_ascii_lowercase().as_str() {
        u @ ("k" | "m" | "g" | "t") => {
            let u = u.to_ascii_uppercase();
            let si = if u == "K" {
                "kB".to_string()
            } else {
                format!("{u}B")
            };
            format!("{text:?} is ambiguous: write \"{number} {u}iB\" (binary, 1024-based) or \"{number} {si}\" (SI, 1000-based)")
        }
        "%" => format!("{text:?} is a percentage; a budget is a size such as \"40 GiB\""),
        _ => message,
    }
}

pub(super) fn count_value(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) => {
            u64::try_from(*i).map_err(|_| format!("{i} is negative; counts are at least 0"))
        }
        other => Err(format!(
            "must be a count (an integer), not {}",
            other.type_str()
        )),
    }
}

/// `"92% of device"` (any spacing, `of the device` too): `None` when the
/// text is not of that form, else the percentage or why it is wrong.
fn share_of_device(text: &str) -> Option<Result<f64, String>> {
    let number = percent_of(text, &["of the device", "of device"])?;
    Some(match number.parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!(
            "{text:?}: a share of the device is a percentage above 0 and at most 100, \
             e.g. \"92% of device\""
        )),
    })
}

/// `"20% of reserved"` (or `of reserved-peak`): the percentage, for
/// `cached-free-at-reserved-peak` only, which is at most the reserved peak;
/// 0% is a budget too (no free cache at the peak).
fn share_of_reserved(text: &str, f: Figure) -> Option<Result<f64, String>> {
    let number = percent_of(text, &["of reserved-peak", "of reserved"])?;
    if f != Figure::CachedFreeAtReservedPeak {
        return Some(Err(format!(
            "{text:?}: a share of the reserved peak budgets `{}` only",
            Figure::CachedFreeAtReservedPeak
        )));
    }
    Some(match number.parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "{text:?}: a share of the reserved peak is a percentage from 0 to 100, \
             e.g. \"20% of reserved\""
        )),
    })
}

/// The number before `%` in `N% SUFFIX`, for the first of `suffixes` that
/// `text` ends with (ASCII case ignored).
fn percent_of(text: &str, suffixes: &[&str]) -> Option<String> {
    let lower = text.trim().to_ascii_lowercase();
    let head = suffixes.iter().find_map(|s| lower.strip_suffix(s))?;
    Some(head.trim_end().strip_suffix('%')?.trim().to_owned())
}

#[cfg(test)]
mod share_tests {
    use super::{share_of_device, share_of_reserved};
    use crate::vocab::Figure;

    #[test]
    fn a_share_of_reserved_budgets_the_free_cache_only() {
        let f = Figure::CachedFreeAtReservedPeak;
        assert_eq!(share_of_reserved("20% of reserved", f), Some(Ok(20.0)));
        assert_eq!(share_of_reserved(" 0 % of Reserved-Peak", f), Some(Ok(0.0)));
        assert_eq!(share_of_reserved("92% of device", f), None);
        assert!(share_of_reserved("101% of reserved", f).unwrap().is_err());
        let other = share_of_reserved("20% of reserved", Figure::AllocatedPeak);
        assert!(other
            .unwrap()
            .unwrap_err()
            .contains("cached-free-at-reserved-peak"));
    }

    #[test]
    fn a_share_of_the_device_is_a_percentage_of_device() {
        assert_eq!(share_of_device("92% of device"), Some(Ok(92.0)));
        assert_eq!(share_of_device(" 95.5 %  of the device "), Some(Ok(95.5)));
        assert_eq!(share_of_device("40 GiB"), None);
        assert!(share_of_device("0% of device").unwrap().is_err());
        assert!(share_of_device("120% of device").unwrap().is_err());
        assert!(share_of_device("x% of device").unwrap().is_err());
    }
}
