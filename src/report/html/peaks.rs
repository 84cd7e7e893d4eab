//! The Peaks table of a device section: each peak and OOM with its bytes,
//! the entry it is first reached at, and when and where that is: seconds
//! since the first timed entry, the innermost phase and the iteration open
//! there (from the timeline's bands).

use std::fmt::Write as _;

use super::escape;
use super::Section;
use crate::analysis::Timeline;
use crate::units::Bytes;

/// When and where entry `at` falls: time, phase, iteration (`–` for none).
fn place(t: &Timeline, at: Option<u64>) -> [String; 3] {
    let none = || "–".to_string();
    let Some(at) = at else {
        return [none(), none(), none()];
    };
    let time = t
        .moments
        .iter()
        .find(|m| m.entry == Some(at))
        .and_then(|m| m.time_us)
        .zip(t.origin_time_us)
        .map_or_else(none, |(t, o)| seconds(t - o));
    let inside = |iteration: bool| {
        t.bands
            .iter()
            .filter(|b| b.iteration == iteration && b.from_entry <= at && at <= b.to_entry)
            // The innermost: the latest to start, then the shortest.
            .max_by_key(|b| (b.from_entry, std::cmp::Reverse(b.to_entry)))
            .map_or_else(none, |b| escape(&b.name).into_owned())
    };
    [time, inside(false), inside(true)]
}

/// `+S.mmm s` for `us` microseconds.
fn seconds(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "+" };
    let us = us.unsigned_abs();
    format!("{sign}{}.{:06} s", us / 1_000_000, us % 1_000_000)
}

/// The table of the peaks and OOMs: the charts' markers as text.
pub(super) fn peaks_table(s: &Section<'_>) -> String {
    let f = &s.report.figures;
    let e = &s.report.peak_entry;
    let entry = |i: Option<u64>| i.map_or_else(|| "–".to_string(), |i| i.to_string());
    let mut out = String::from(
        "<table class=\"peaks\"><caption>Peaks</caption><tr><th>figure</th><th>bytes</th>\
         <th>exact</th><th>first reached at entry</th><th>time</th><th>phase</th>\
         <th>iteration</th></tr>\n",
    );
    for (name, id, bytes, at) in [
        (
            "allocated peak",
            "allocated-peak",
            f.allocated_peak,
            e.allocated_peak,
        ),
        (
            "dynamic peak",
            "dynamic-peak",
            f.dynamic_peak,
            e.dynamic_peak,
        ),
        (
            "reserved peak",
            "reserved-peak",
            f.reserved_peak,
            e.reserved_peak,
        ),
    ] {
        let [time, phase, iteration] = place(s.timeline, at);
        let _ = writeln!(
            out,
            "<tr data-figure=\"{id}\"><td>{name}</td><td>{}</td><td>{bytes}</td><td>{}</td>\
             <td>{time}</td><td>{phase}</td><td>{iteration}</td></tr>",
            Bytes(bytes),
            entry(at)
        );
    }
    for o in &s.report.oom {
        let [time, phase, iteration] = place(s.timeline, Some(o.entry));
        let _ = writeln!(
            out,
            "<tr data-figure=\"oom\"><td>OOM (asked {})</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{time}</td><td>{phase}</td><td>{iteration}</td></tr>",
            Bytes(o.requested),
            Bytes(o.allocated),
            o.allocated,
            o.entry
        );
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Band, Moment, MomentKind};

    fn band(iteration: bool, name: &str, from: u64, to: u64) -> Band {
        Band {
            iteration,
            name: name.to_string(),
            from_entry: from,
            to_entry: to,
            ..Band::default()
        }
    }

    #[test]
    fn a_peak_is_placed_in_its_innermost_phase_and_its_iteration_at_its_time() {
        let t = Timeline {
            bands: vec![
                band(true, "0", 0, 9),
                band(true, "1", 10, 19),
                band(false, "step", 10, 19),
                band(false, "forward", 10, 14),
                band(false, "backward", 15, 19),
            ],
            moments: vec![Moment {
                kinds: vec![MomentKind::Oom],
                entry: Some(16),
                time_us: Some(1_002_500_000),
                allocated: 0,
                stacks: Vec::new(),
            }],
            origin_time_us: Some(1_000_000_000),
            ..Timeline::default()
        };
        assert_eq!(place(&t, Some(16)), ["+2.500000 s", "backward", "1"]);
        assert_eq!(place(&t, Some(5)), ["–", "–", "0"]);
        assert_eq!(place(&t, None), ["–", "–", "–"]);
        assert_eq!(seconds(-1_500), "-0.001500 s");
    }
}
