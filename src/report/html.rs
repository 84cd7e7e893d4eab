//! `memgate profile --html`: one self-contained page (inline SVG and CSS,
//! no script, nothing fetched from the network) with a stacked category
//! timeline and the category table per device.

use std::fmt::Write as _;

use super::escape::html as escape;
use crate::analysis::{DeviceReport, Timeline};
use crate::document::ProfileDocument;
use crate::units::Bytes;

/// Most samples drawn per device; keeps a 2M-entry trace's page small.
pub(crate) const MAX_POINTS: usize = 800;

const COLORS: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#86bcb6", "#d37295",
];

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 320.0;

/// One device's section of the page.
struct Section<'a> {
    path: &'a str,
    report: &'a DeviceReport,
    timeline: &'a Timeline,
}

fn svg(t: &Timeline) -> String {
    let n = t.points.len();
    let max_total = t
        .points
        .iter()
        .map(|p| p.bytes.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let x = |i: usize| {
        if n <= 1 {
            0.0
        } else {
            i as f64 * WIDTH / (n - 1) as f64
        }
    };
    let y = |v: u64| HEIGHT - v as f64 * HEIGHT / max_total;
    let mut below = vec![0u64; n];
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\">\n"
    );
    for (k, name) in t.categories.iter().enumerate() {
        if t.points.iter().all(|p| p.bytes[k] == 0) {
            continue;
        }
        let mut pts = String::new();
        let above: Vec<u64> = (0..n).map(|i| below[i] + t.points[i].bytes[k]).collect();
        for (i, v) in above.iter().enumerate() {
            let _ = write!(pts, "{:.1},{:.1} ", x(i), y(*v));
        }
        for i in (0..n).rev() {
            let _ = write!(pts, "{:.1},{:.1} ", x(i), y(below[i]));
        }
        let _ = writeln!(
            out,
            "<polygon fill=\"{}\" points=\"{}\"><title>{}</title></polygon>",
            COLORS[k % COLORS.len()],
            pts.trim_end(),
            escape(name)
        );
        below = above;
    }
    out.push_str("</svg>\n");
    let first = t.points.iter().find_map(|p| p.entry).unwrap_or(0);
    let last = t.points.last().and_then(|p| p.entry).unwrap_or(0);
    let _ = writeln!(
        out,
        "<p class=\"axis\">x: trace entries {first}–{last} (list order) · y: 0–{} allocated</p>",
        Bytes(max_total as u64)
    );
    out
}

fn sites(s: &Section<'_>) -> String {
    let mut out = String::new();
    if s.report.sites_at_peak.is_empty() {
        return out;
    }
    out.push_str(
        "<table><tr><th>allocation site at the allocated peak</th><th>bytes</th>\
         <th>allocations</th></tr>\n",
    );
    for site in &s.report.sites_at_peak {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&site.site),
            Bytes(site.bytes),
            site.count
        );
    }
    out.push_str("</table>\n");
    out
}

fn table(s: &Section<'_>) -> String {
    let c = &s.report.categories;
    let mut out = String::from(
        "<table><tr><th>category</th><th>at allocated peak</th><th>at dynamic peak</th>\
         <th>own peak</th></tr>\n",
    );
    for (k, name) in s.timeline.categories.iter().enumerate() {
        let get = |m: &std::collections::BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "<tr><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            COLORS[k % COLORS.len()],
            escape(name),
            Bytes(get(&c.at_allocated_peak)),
            Bytes(get(&c.at_dynamic_peak)),
            Bytes(get(&c.peaks))
        );
    }
    out.push_str("</table>\n");
    out
}

/// The whole page: the profile document, with `timelines[i][j]` the
/// timeline of device `j` of snapshot `i`.
pub fn render(doc: &ProfileDocument, timelines: &[Vec<Timeline>]) -> String {
    let sections = doc.snapshots.iter().zip(timelines).flat_map(|(a, ts)| {
        a.devices.iter().zip(ts).map(|(d, t)| Section {
            path: &a.path,
            report: d,
            timeline: t,
        })
    });
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>memgate profile</title>\n<style>\
         body{font-family:sans-serif;margin:1.5em;color:#222}\
         table{border-collapse:collapse;margin:.5em 0 2em}\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
         td:first-child,th:first-child{text-align:left}\
         .sw{display:inline-block;width:.8em;height:.8em;margin-right:.4em}\
         svg{border:1px solid #ddd;max-width:100%;height:auto}.axis{color:#666;font-size:.85em}\
         </style></head><body>\n<h1>memgate profile</h1>\n",
    );
    for s in sections {
        let s = &s;
        let f = &s.report.figures;
        let _ = writeln!(
            out,
            "<h2>{} — dev{}</h2>\n<p>allocated peak {} · dynamic peak {} · reserved peak {} · \
             rules {} · {} trace entries, {} samples drawn (each the highest moment of its \
             stretch of entries)</p>",
            escape(s.path),
            s.report.device,
            Bytes(f.allocated_peak),
            Bytes(f.dynamic_peak),
            Bytes(f.reserved_peak),
            escape(&s.report.categories.rules),
            f.trace_entries,
            s.timeline.points.len()
        );
        out.push_str(&svg(s.timeline));
        out.push_str(&table(s));
        out.push_str(&sites(s));
    }
    out.push_str("</body></html>\n");
    out
}
