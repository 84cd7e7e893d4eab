//! The Peaks table of a device section: each peak and OOM with its bytes,
//! the entry it is first reached at, and when and where that is: seconds
//! since the first timed entry, the innermost phase and the iteration. The
//! place is the analysis's own ([`Place`], [`OomDetail`]), the one the
//! terminal, JUnit, Markdown and JSON name: the page never works it out
//! again from the chart's bands.

use std::fmt::Write as _;

use super::escape;
use super::Section;
use crate::analysis::{OomDetail, PeakAt, Place};
use crate::units::Bytes;

/// When and where a peak falls: time, phase, iteration (`–` for none;
/// `(none)` for a peak outside every phase, as the terminal says it).
fn place(p: Option<&Place>) -> [String; 3] {
    let none = || "–".to_string();
    let Some(p) = p else {
        return [none(), none(), none()];
    };
    cells(p.rel_s, &p.annotation, p.iteration)
}

/// The same cells for an OOM.
fn oom_place(o: &OomDetail) -> [String; 3] {
    cells(o.rel_s, &o.phase, o.iteration)
}

fn cells(rel_s: Option<f64>, phase: &str, iteration: Option<u64>) -> [String; 3] {
    let time = rel_s.map_or_else(|| "–".to_string(), |s| format!("+{s:.6} s"));
    let phase = if phase.is_empty() {
        "(none)".to_string()
    } else {
        escape(phase).into_owned()
    };
    [
        time,
        phase,
        iteration.map_or_else(|| "–".to_string(), |k| k.to_string()),
    ]
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
    for (name, id, which, bytes, at) in [
        (
            "allocated peak",
            "allocated-peak",
            PeakAt::AllocatedPeak,
            f.allocated_peak,
            e.allocated_peak,
        ),
        (
            "dynamic peak",
            "dynamic-peak",
            PeakAt::DynamicPeak,
            f.dynamic_peak,
            e.dynamic_peak,
        ),
        (
            "reserved peak",
            "reserved-peak",
            PeakAt::ReservedPeak,
            f.reserved_peak,
            e.reserved_peak,
        ),
    ] {
        let placed = s.report.peak_phase.as_ref().and_then(|p| p.of(which));
        let [time, phase, iteration] = place(placed);
        let _ = writeln!(
            out,
            "<tr data-figure=\"{id}\"><td>{name}</td><td>{}</td><td>{bytes}</td><td>{}</td>\
             <td>{time}</td><td>{phase}</td><td>{iteration}</td></tr>",
            Bytes(bytes),
            entry(at)
        );
    }
    for o in &s.report.oom {
        let [time, phase, iteration] = oom_place(o);
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

    #[test]
    fn a_peak_is_placed_where_the_analysis_placed_it_and_outside_every_phase_says_none() {
        let p = Place {
            annotation: "backward".into(),
            iteration: Some(1),
            entry: 16,
            rel_s: Some(2.5),
        };
        assert_eq!(place(Some(&p)), ["+2.500000 s", "backward", "1"]);
        let outside = Place {
            annotation: String::new(),
            iteration: None,
            entry: 5,
            rel_s: None,
        };
        assert_eq!(place(Some(&outside)), ["–", "(none)", "–"]);
        assert_eq!(place(None), ["–", "–", "–"]);
        assert_eq!(cells(None, "<b>", None)[1], "&lt;b&gt;");
    }
}
