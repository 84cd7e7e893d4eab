//! `[[waiver]]` (docs/gate.md#waivers): a known failure let through until a
//! date, with its reason. Read into [`RawWaiver`] beside the other raw
//! tables, validated into [`Waiver`] once the targets are known (a waiver
//! must name one).

use std::collections::HashSet;
use std::ops::Range;

use chrono::NaiveDate;
use toml::Value;
use toml_edit::{Item, TableLike};

use super::raw::{Leaf, RawWaiver, Reader};
use super::validate::{ConfigError, Validator};
use super::{Loc, Target};
use crate::vocab::{Device, Figure, Unit};

/// `[[waiver]]` keys.
pub(crate) const WAIVER_KEYS: &[&str] = &[
    "target", "figure", "snapshot", "device", "until", "reason", "maximum",
];

/// A reason longer than this is refused: every report prints it.
pub const MAX_REASON: usize = 500;

/// Up to this many targets, a waiver naming none of them is told the
/// nearest name.
const MAX_NEAR_TARGETS: usize = 64;

/// A failure let through: the failing checks of `target` on `check` (and
/// `snapshot`, `device` when given) read `waived` through `until`, unless
/// their value is over `maximum`.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiver {
    pub target: String,
    /// A check id: a figure id, `category.NAME` or `phase.NAME.FIGURE`.
    pub check: String,
    pub snapshot: Option<String>,
    pub device: Option<Device>,
    /// The last day it holds, `YYYY-MM-DD` (UTC).
    pub until: String,
    /// `until` as days since 1970-01-01.
    pub until_day: i64,
    pub reason: String,
    /// The most the check's value may be, in the check's unit.
    pub maximum: Option<u64>,
    pub loc: Loc,
}

impl Reader {
    /// `[[waiver]]`, or the same as an inline array of tables.
    pub(super) fn waivers(&mut self, item: &Item, at: &Range<usize>) -> Vec<RawWaiver> {
        self.array_of_tables(item, at, "an array of tables ([[waiver]])")
            .into_iter()
            .map(|(t, span)| self.waiver(t, span))
            .collect()
    }

    fn waiver(&mut self, table: &dyn TableLike, span: Range<usize>) -> RawWaiver {
        let mut w = RawWaiver {
            span,
            ..RawWaiver::default()
        };
        for (name, at, item) in self.entries(table, WAIVER_KEYS, "[[waiver]]") {
            let leaf = Some(self.leaf(item, &at));
            match name {
                "target" => w.target = leaf,
                "figure" => w.figure = leaf,
                "snapshot" => w.snapshot = leaf,
                "device" => w.device = leaf,
                "until" => w.until = leaf,
                "reason" => w.reason = leaf,
                "maximum" => w.maximum = leaf,
                _ => {}
            }
        }
        w
    }
}

impl Validator<'_> {
    /// Every `[[waiver]]` of the file against the valid `targets`.
    pub(super) fn waivers(&mut self, raw: &[RawWaiver], targets: &[Target]) -> Vec<Waiver> {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        let waivers: Vec<Waiver> = raw.iter().filter_map(|w| self.waiver(w, &names)).collect();
        for (loc, message) in repeated(&waivers) {
            let key = "waiver".into();
            self.errors.push(ConfigError { loc, key, message });
        }
        waivers
    }

    fn waiver(&mut self, w: &RawWaiver, targets: &[&str]) -> Option<Waiver> {
        let target = self.required(w.target.as_ref(), &w.span, "waiver.target");
        let target = target.filter(|t| self.known_target(t, w, targets));
        let check = self.required(w.figure.as_ref(), &w.span, "waiver.figure");
        let check = check.filter(|c| self.known_check(c, w));
        let snapshot = w
            .snapshot
            .as_ref()
            .and_then(|s| self.string(s, "waiver.snapshot"));
        let device = w
            .device
            .as_ref()
            .and_then(|d| self.device(d, "waiver.device"));
        let until = match &w.until {
            Some(u) => self.date(u),
            None => {
                let msg = "every [[waiver]] needs `until`, the last day it holds (2026-12-31)";
                self.err(w.span.clone(), "waiver.until", msg);
                None
            }
        };
        let reason = self.reason(w);
        let maximum = match (&w.maximum, &check) {
            (Some(m), Some(c)) => Some(self.maximum(m, c)?),
            _ => None,
        };
        let (until, until_day) = until?;
        Some(Waiver {
            target: target?,
            check: check?,
            snapshot,
            device,
            until,
            until_day,
            reason: reason?,
            maximum,
            loc: self.loc(w.span.clone()),
        })
    }

    fn required(&mut self, leaf: Option<&Leaf>, span: &Range<usize>, key: &str) -> Option<String> {
        match leaf {
            Some(l) => self.string(l, key),
            None => {
                let name = key.trim_start_matches("waiver.");
                self.err(
                    span.clone(),
                    key,
                    format!("every [[waiver]] needs `{name}`"),
                );
                None
            }
        }
    }

    fn known_target(&mut self, name: &str, w: &RawWaiver, targets: &[&str]) -> bool {
        if targets.contains(&name) {
            return true;
        }
        let span = w.target.as_ref().map_or(w.span.clone(), Leaf::span);
        // Names to compare with are bounded: a file of many targets and
        // many misspelt waivers must not cost their product in distances.
        let near = (targets.len() <= MAX_NEAR_TARGETS)
            .then(|| super::suggest::closest(name, targets))
            .flatten();
        let msg = match near {
            Some(k) => format!("no [[target]] is named {name:?}; did you mean `{k}`?"),
            None => format!("no [[target]] is named {name:?}"),
        };
        self.err(span, "waiver.target", msg);
        false
    }

    /// A figure id, `category.NAME` or `phase.NAME.FIGURE` (a per-phase figure).
    fn known_check(&mut self, id: &str, w: &RawWaiver) -> bool {
        let known = if let Some(name) = id.strip_prefix("category.") {
            !name.is_empty()
        } else if let Some(rest) = id.strip_prefix("phase.") {
            rest.rsplit_once('.').is_some_and(|(phase, f)| {
                !phase.is_empty()
                    && Figure::from_id(f).is_some_and(|f| Figure::PER_PHASE.contains(&f))
            })
        } else {
            Figure::from_id(id).is_some()
        };
        if !known {
            let span = w.figure.as_ref().map_or(w.span.clone(), Leaf::span);
            let ids: Vec<&str> = Figure::ALL.iter().map(|f| f.id()).collect();
            let hint = super::suggest::hint(id, &ids);
            let msg = format!(
                "{id:?} is no check id: a figure id, `category.NAME` or `phase.NAME.FIGURE`; {hint}"
            );
            self.err(span, "waiver.figure", msg);
        }
        known
    }

    /// A date (`2026-12-31`, bare or quoted): itself and its day number.
    fn date(&mut self, leaf: &Leaf) -> Option<(String, i64)> {
        let text = match leaf.get_ref() {
            Value::String(s) => s.clone(),
            Value::Datetime(d) if d.time.is_none() && d.offset.is_none() => d.to_string(),
            other => {
                let msg = format!(
                    "must be a date such as 2026-12-31, not {}",
                    other.type_str()
                );
                self.err(leaf.span(), "waiver.until", msg);
                return None;
            }
        };
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
        match NaiveDate::parse_from_str(&text, "%Y-%m-%d") {
            Ok(d) => Some((d.to_string(), d.signed_duration_since(epoch).num_days())),
            Err(_) => {
                let msg = format!("{text:?} is no date: write it as YYYY-MM-DD (2026-12-31)");
                self.err(leaf.span(), "waiver.until", msg);
                None
            }
        }
    }

    fn reason(&mut self, w: &RawWaiver) -> Option<String> {
        let r = self.required(w.reason.as_ref(), &w.span, "waiver.reason")?;
        let span = w.reason.as_ref().map_or(w.span.clone(), Leaf::span);
        if r.trim().is_empty() {
            self.err(
                span,
                "waiver.reason",
                "is empty: say why the failure is accepted",
            );
            return None;
        }
        if r.chars().count() > MAX_REASON {
            let msg = format!("is longer than {MAX_REASON} characters; link to the discussion");
            self.err(span, "waiver.reason", msg);
            return None;
        }
        Some(r)
    }

    /// `maximum`, in the unit of the waived check: bytes but for the event
    /// counts.
    fn maximum(&mut self, leaf: &Leaf, check: &str) -> Option<u64> {
        let unit = Figure::from_id(check).map_or(Unit::Bytes, Figure::unit);
        let value = match unit {
            Unit::Bytes => super::values::size_value(leaf.get_ref()),
            Unit::Count => super::values::count_value(leaf.get_ref()),
        };
        value
            .map_err(|m| self.err(leaf.span(), "waiver.maximum", m))
            .ok()
    }
}

/// Two waivers of one check (same target, check, snapshot, device) leave
/// which one holds to chance: the later ones are reported.
fn repeated(waivers: &[Waiver]) -> Vec<(Loc, String)> {
    let mut seen = HashSet::new();
    waivers
        .iter()
        .filter(|w| !seen.insert((&w.target, &w.check, &w.snapshot, w.device)))
        .map(|w| {
            let msg = format!(
                "a second waiver of {} on target {:?} for the same snapshot and device",
                w.check, w.target
            );
            (w.loc.clone(), msg)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn many_misspelt_waivers_against_many_targets_cost_no_product_of_distances() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!(
                "[[target]]\nname = \"target-{i}\"\nsnapshots = \"s\"\n"
            ));
        }
        for i in 0..3000 {
            text.push_str(&format!(
                "[[waiver]]\ntarget = \"targte-{i}\"\nfigure = \"allocated-peak\"\n\
                 until = 2026-12-31\nreason = \"r\"\n"
            ));
        }
        let start = std::time::Instant::now();
        let errors = super::super::parse(&text, "m.toml", Path::new(""), false).unwrap_err();
        // No nearest name among so many targets, though `target-0` is
        // one edit away: no distance was computed. The time is a debug
        // build's on a loaded machine (parsing 6000 tables is most of it).
        assert_eq!(errors.len(), 3000);
        assert_eq!(errors[0].message, "no [[target]] is named \"targte-0\"");
        assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
    }

    #[test]
    fn a_waiver_of_one_of_a_few_targets_is_told_the_nearest_name() {
        let text = "[[target]]\nname = \"train\"\nsnapshots = \"s\"\n[[waiver]]\n\
                    target = \"trian\"\nfigure = \"allocated-peak\"\nuntil = 2026-12-31\n\
                    reason = \"r\"\n[[waiver]]\ntarget = \"train\"\nfigure = \"allocated-peak\"\n\
                    until = \"2026-12-31\"\nreason = \"r\"\n[[waiver]]\ntarget = \"train\"\n\
                    figure = \"allocated-peak\"\nuntil = 2027-01-01\nreason = \"again\"\n";
        let errors = super::super::parse(text, "m.toml", Path::new(""), false).unwrap_err();
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "m.toml:5:10: `waiver.target`: no [[target]] is named \"trian\"; did you mean `train`?",
                "m.toml:14:1: `waiver`: a second waiver of allocated-peak on target \"train\" for \
                 the same snapshot and device",
            ]
        );
    }
}
