//! Windows (docs/figures.md#windows): `FROM..TO`, each bound a time, a time relative to
//! the device's first timed entry, an entry index, an annotation event or
//! an allocation event in Mosaic's notation; parsed once, then resolved per
//! device to an inclusive range of entries that the replay takes its
//! maxima over (the state before the range is carried in, never reset).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::snapshot::{Action, Device, Snapshot, Stage, Trace};

/// One side of a window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bound {
    /// An absolute `time_us`.
    Time(i64),
    /// Microseconds after the device's first entry with a `time_us`.
    Relative(i64),
    /// An index in the device's trace list.
    Entry(usize),
    /// The `nth` (from 0) START or END of the annotation `name`.
    Annotation {
        name: String,
        start: bool,
        nth: usize,
    },
    /// The entry with `action` at `addr` after `version` earlier
    /// `free_completed` entries of that address (Mosaic's `ADDR_VERSION`).
    Event {
        addr: u64,
        version: u64,
        action: Action,
    },
}

/// A parsed `FROM..TO`; either side may be open.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    from: Option<Bound>,
    to: Option<Bound>,
    /// Each side as written, for the report.
    from_text: String,
    to_text: String,
}

/// A window spec that does not parse; the message names the bound at fault.
#[derive(Debug, Clone, Error)]
#[error("window `{spec}`: {problem}")]
pub struct WindowSpecError {
    spec: String,
    problem: String,
}

/// A window that cannot be applied to one device of a snapshot (in the
/// JSON of a command, `window-not-placed`: a device it places nothing on).
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize)]
#[serde(rename_all = "kebab-case")]
#[error("device {device}: window `{window}`: {problem}")]
pub struct WindowError {
    pub device: Device,
    pub window: String,
    pub problem: String,
}

/// Where a window lies on one device and the memory at its edges
/// (`"window"` in the JSON of every command that reports figures).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct WindowReport {
    /// The bounds as given (`""` for an open side).
    pub from: String,
    pub to: String,
    pub from_entry: u64,
    pub to_entry: u64,
    /// Mosaic's dynamic usage before the window's first entry (carried in).
    pub dynamic_usage_at_from: u64,
    /// Mosaic's dynamic usage after the window's last entry.
    pub dynamic_usage_at_to: u64,
    /// Allocated bytes (MemoryViz) after the window's last entry.
    pub allocated_at_to: u64,
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.from_text, self.to_text)
    }
}

impl FromStr for Window {
    type Err = WindowSpecError;

    /// Splits at the first `..` whose both sides parse, so an annotation
    /// name holding `..` still works.
    fn from_str(spec: &str) -> Result<Window, WindowSpecError> {
        let fail = |problem: String| WindowSpecError {
            spec: spec.to_string(),
            problem,
        };
        let splits: Vec<usize> = spec.match_indices("..").map(|(i, _)| i).collect();
        if splits.is_empty() {
            return Err(fail(
                "expected FROM..TO (either side may be empty, e.g. `#100..` or `..+2.5s`)".into(),
            ));
        }
        let mut first_error = None;
        for i in splits {
            let (from_text, to_text) = (&spec[..i], &spec[i + 2..]);
            match (parse_side(from_text), parse_side(to_text)) {
                (Ok(from), Ok(to)) => {
                    return Ok(Window {
                        from,
                        to,
                        from_text: from_text.to_string(),
                        to_text: to_text.to_string(),
                    })
                }
                (Err(e), _) => {
                    first_error.get_or_insert(format!("FROM `{from_text}`: {e}"));
                }
                (_, Err(e)) => {
                    first_error.get_or_insert(format!("TO `{to_text}`: {e}"));
                }
            }
        }
        Err(fail(first_error.unwrap_or_default()))
    }
}

const BOUND_FORMS: &str = "a bound is TIME_US, +SECONDSs, #ENTRY, @NAME:START|END[:N] \
                           or ADDR_VERSION:ACTION";

fn parse_side(text: &str) -> Result<Option<Bound>, String> {
    if text.is_empty() {
        Ok(None)
    } else {
        parse_bound(text).map(Some)
    }
}

fn parse_bound(text: &str) -> Result<Bound, String> {
    if let Some(rest) = text.strip_prefix('#') {
        return rest
            .parse()
            .map(Bound::Entry)
            .map_err(|_| format!("`#` takes an entry index, not `{rest}`"));
    }
    if let Some(rest) = text.strip_prefix('+') {
        let secs = rest
            .strip_suffix('s')
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e12)
            .ok_or_else(|| format!("`+` takes seconds such as `+2.5s`, not `{rest}`"))?;
        #[expect(
            clippy::cast_possible_truncation,
            reason = "0 ≤ secs < 1e12 (filtered above): at most 1e18 µs, inside i64"
        )]
        let us = (secs * 1e6).round() as i64;
        return Ok(Bound::Relative(us));
    }
    if let Some(rest) = text.strip_prefix('@') {
        return parse_annotation(rest);
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map(Bound::Time)
            .map_err(|_| format!("time_us `{text}` is too large"));
    }
    if text.contains('_') && text.contains(':') {
        return parse_event(text);
    }
    Err(format!("`{text}` is not a bound; {BOUND_FORMS}"))
}

/// `NAME:START|END[:N]`, read from the right: names may hold `:`.
fn parse_annotation(text: &str) -> Result<Bound, String> {
    let usage = || format!("`@{text}`: expected @NAME:START or @NAME:END, then optionally :N");
    let (head, last) = text.rsplit_once(':').ok_or_else(usage)?;
    let (head, stage, nth) = match last.parse::<usize>() {
        Ok(nth) => {
            let (name, stage) = head.rsplit_once(':').ok_or_else(usage)?;
            (name, stage, nth)
        }
        Err(_) => (head, last, 0),
    };
    let start = match stage {
        "START" => true,
        "END" => false,
        _ => return Err(usage()),
    };
    if head.is_empty() {
        return Err(usage());
    }
    Ok(Bound::Annotation {
        name: head.to_string(),
        start,
        nth,
    })
}

/// `ADDR_VERSION:ACTION` (Mosaic's notation; the address in hex, no `0x`).
fn parse_event(text: &str) -> Result<Bound, String> {
    let usage = || format!("`{text}`: expected ADDR_VERSION:ACTION, e.g. 7f3a00_2:free_completed");
    let (allocation, action) = text.rsplit_once(':').ok_or_else(usage)?;
    let (addr, version) = allocation.rsplit_once('_').ok_or_else(usage)?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`{addr}` is not a hex address (lowercase hex digits, no 0x)"
        ));
    }
    let addr = u64::from_str_radix(addr, 16).map_err(|_| format!("address `{addr}` too large"))?;
    let version = version
        .parse()
        .map_err(|_| format!("version `{version}` is not a count of earlier frees"))?;
    let action = Action::from_known(action).ok_or_else(|| {
        let known: Vec<&str> = Action::KNOWN.iter().map(|(_, n)| *n).collect();
        format!("unknown action `{action}` (one of {})", known.join(", "))
    })?;
    Ok(Bound::Event {
        addr,
        version,
        action,
    })
}

/// Which end of the window a bound is, for how a time resolves: FROM is
/// the first entry at or after it, TO the last entry before any later one.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    From,
    To,
}

impl Window {
    /// The bounds as written.
    pub fn texts(&self) -> (&str, &str) {
        (&self.from_text, &self.to_text)
    }

    /// The inclusive entry range of the window on `device`.
    pub(crate) fn resolve(
        &self,
        snap: &Snapshot,
        device: Device,
    ) -> Result<(usize, usize), WindowError> {
        let trace = snap.trace(device);
        let fail = |problem: String| WindowError {
            device,
            window: self.to_string(),
            problem,
        };
        // `None`: the side lies past the trace (FROM) or before it (TO).
        let from = match &self.from {
            None => Some(0),
            Some(b) => resolve_bound(b, Side::From, snap, device, trace).map_err(fail)?,
        };
        let to = match &self.to {
            None => trace.len().checked_sub(1),
            Some(b) => resolve_bound(b, Side::To, snap, device, trace).map_err(fail)?,
        };
        match (from, to) {
            (Some(f), Some(t)) if f <= t => Ok((f, t)),
            _ => Err(fail(format!(
                "holds no trace entry (FROM {}, TO {}); the trace holds {}; a window with \
                 nothing in it cannot be judged",
                from.map_or("past the last entry".into(), |f| format!("at entry {f}")),
                to.map_or("before the first entry".into(), |t| format!("at entry {t}")),
                holdings(trace)
            ))),
        }
    }
}

/// What a trace holds, for error messages.
fn holdings(trace: Trace<'_>) -> String {
    let first = trace.iter().find_map(|e| e.time());
    let last = trace.iter().rev().find_map(|e| e.time());
    let entries = match trace.len() {
        0 => "no entries".to_string(),
        1 => "1 entry (#0)".to_string(),
        n => format!("{n} entries (#0..#{})", n - 1),
    };
    match (first, last) {
        (Some(a), Some(b)) => format!("{entries}, time_us {a}..{b}"),
        _ if trace.is_empty() => entries,
        _ => format!("{entries}, no time_us"),
    }
}

fn resolve_bound(
    bound: &Bound,
    side: Side,
    snap: &Snapshot,
    device: Device,
    trace: Trace<'_>,
) -> Result<Option<usize>, String> {
    let first_time = || {
        trace.iter().find_map(|e| e.time()).ok_or_else(|| {
            format!(
                "a time bound needs time_us, and the trace holds {}",
                holdings(trace)
            )
        })
    };
    let at_time = |t: i64| -> Result<Option<usize>, String> {
        first_time()?;
        Ok(match side {
            Side::From => trace.iter().position(|e| e.time().is_some_and(|x| x >= t)),
            Side::To => trace
                .iter()
                .position(|e| e.time().is_some_and(|x| x > t))
                .unwrap_or(trace.len())
                .checked_sub(1),
        })
    };
    match bound {
        Bound::Time(t) => at_time(*t),
        Bound::Relative(us) => at_time(first_time()?.saturating_add(*us)),
        Bound::Entry(i) if *i < trace.len() => Ok(Some(*i)),
        Bound::Entry(i) => Err(format!(
            "entry #{i} is past the end; the trace holds {}",
            holdings(trace)
        )),
        Bound::Annotation { name, start, nth } => {
            let stage = if *start { Stage::Start } else { Stage::End };
            let times: Vec<i64> = snap
                .annotations_of(device)
                .filter(|a| a.stage == stage && snap.str(a.name) == name)
                .map(|a| a.time_us)
                .collect();
            match times.get(*nth) {
                Some(&t) => at_time(t),
                None => Err(format!(
                    "no occurrence {nth} of annotation {name}:{} (the device has {})",
                    if *start { "START" } else { "END" },
                    times.len()
                )),
            }
        }
        Bound::Event {
            addr,
            version,
            action,
        } => {
            let mut frees = 0u64;
            for (i, e) in trace.iter().enumerate() {
                if e.addr != *addr || e.action() == Action::Oom {
                    continue;
                }
                if frees == *version && e.action() == *action {
                    return Ok(Some(i));
                }
                frees += u64::from(e.action() == Action::FreeCompleted);
            }
            Err(format!(
                "no {} of {addr:x} after {version} free_completed of it ({frees} in the trace)",
                snap.action_name(*action)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(spec: &str) -> (Option<Bound>, Option<Bound>) {
        let w: Window = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
        (w.from, w.to)
    }

    #[test]
    fn each_bound_kind_parses_and_either_side_may_be_open() {
        assert_eq!(bounds("..#1200"), (None, Some(Bound::Entry(1200))));
        assert_eq!(bounds("+2.5s.."), (Some(Bound::Relative(2_500_000)), None));
        assert_eq!(bounds(".."), (None, None));
        assert_eq!(
            bounds("1783874422766414..32fa0599c7f59_0:free_completed"),
            (
                Some(Bound::Time(1_783_874_422_766_414)),
                Some(Bound::Event {
                    addr: 0x32fa0599c7f59,
                    version: 0,
                    action: Action::FreeCompleted,
                })
            )
        );
    }

    #[test]
    fn annotation_names_are_read_from_the_right_so_they_may_hold_colons_and_dots() {
        let ann = |name: &str, start: bool, nth: usize| {
            Some(Bound::Annotation {
                name: name.into(),
                start,
                nth,
            })
        };
        assert_eq!(
            bounds("@Optimizer.step#AdamW.step:START:2..@a::b:END"),
            (
                ann("Optimizer.step#AdamW.step", true, 2),
                ann("a::b", false, 0)
            )
        );
        // The first `..` would leave `@x` without a stage: the next one splits.
        assert_eq!(
            bounds("@x..y:START..#5"),
            (ann("x..y", true, 0), Some(Bound::Entry(5)))
        );
    }

    #[test]
    fn a_bad_bound_is_named_with_its_side() {
        let err = |spec: &str| spec.parse::<Window>().unwrap_err().to_string();
        assert!(err("#1..#-2").contains("TO `#-2`"), "{}", err("#1..#-2"));
        assert!(err("@:START..").contains("FROM `@:START`"));
        assert!(err("+1h..").contains("`+` takes seconds"));
        assert!(err("12").contains("expected FROM..TO"));
    }
}
