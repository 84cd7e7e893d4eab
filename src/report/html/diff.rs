//! `memgate diff --html`: the page of [`super::render`] for two analyses
//! of the same job. Each device of NEW is charted with BASE's allocated and
//! reserved bytes drawn over it on the same axis (seconds since each run's
//! first timed entry, or entries applied), followed by the peaks that moved
//! and the figure, category and site deltas as tables.

use crate::vocab::Device;
use std::fmt::Write as _;

use super::{
    chart, data, device_heading, device_name, foot, head, lower_bound_notes, peaks_table, Section,
};
use crate::analysis::diff::Delta;
use crate::analysis::{DeviceReport, Figure, Timeline};
use crate::document::{DiffDevice, DiffDocument};
use crate::report::diff::{delta_texts, spot};
use crate::report::diff_lower_bounds;
use crate::report::escape::html as escape;
use crate::report::peak::peak_name;
use crate::units::{ByteDelta, Bytes};

/// One side of a diff: the file as given, its device reports and, when it
/// is a snapshot (a summary has no trace), each device's timeline.
pub struct DiffSide<'a> {
    pub path: &'a str,
    pub devices: &'a [DeviceReport],
    pub timelines: Option<&'a [Timeline]>,
}

impl<'a> DiffSide<'a> {
    fn device(&self, id: Device) -> Option<(&'a DeviceReport, Option<&'a Timeline>)> {
        let k = self.devices.iter().position(|d| d.device == id)?;
        Some((&self.devices[k], self.timelines.and_then(|t| t.get(k))))
    }
}

fn delta_cells(d: &Delta, bytes: bool) -> String {
    let [b, n, c, pct] = delta_texts(d, bytes);
    format!(
        "<td>{}</td><td>{b}</td><td>{n}</td><td>{c}</td><td>{pct}</td>",
        escape(&d.id)
    )
}

fn deltas(out: &mut String, dd: &DiffDevice) {
    let d = &dd.diff;
    for m in &d.peak_moved {
        let _ = writeln!(
            out,
            "<p><strong>{} peak moved</strong>: {} → {}</p>",
            peak_name(m.peak),
            escape(&spot(&m.base)),
            escape(&spot(&m.new))
        );
    }
    let head = "<tr><th>id</th><th>base</th><th>new</th><th>change</th><th>%</th></tr>";
    let _ = writeln!(
        out,
        "<table class=\"deltas\"><caption>Figures</caption>{head}"
    );
    for f in &d.figures {
        let bytes = Figure::from_id(&f.id).is_some_and(|f| f.is_bytes());
        let _ = writeln!(out, "<tr>{}</tr>", delta_cells(f, bytes));
    }
    out.push_str("</table>\n");
    let _ = writeln!(
        out,
        "<table class=\"deltas\"><caption>Categories at the allocated peak (largest change \
         first)</caption>{head}"
    );
    let changed: Vec<&Delta> = d.categories.iter().filter(|c| c.delta != 0).collect();
    if changed.is_empty() {
        out.push_str("<tr><td colspan=\"5\">no change</td></tr>\n");
    }
    for c in changed {
        let _ = writeln!(out, "<tr>{}</tr>", delta_cells(c, true));
    }
    out.push_str("</table>\n");
    out.push_str(
        "<table class=\"deltas\"><caption>Allocation sites at the allocated peak (largest \
         change first)</caption><tr><th>site</th><th>change</th><th>base</th><th>new</th>\
         <th>delta</th></tr>\n",
    );
    if d.sites.is_empty() && dd.more_sites == 0 {
        out.push_str("<tr><td colspan=\"5\">no change</td></tr>\n");
    }
    for s in &d.sites {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            super::folded_path(&s.site),
            s.change.id(),
            Bytes(s.base),
            Bytes(s.new),
            ByteDelta(s.delta)
        );
    }
    if dd.more_sites > 0 {
        let _ = writeln!(
            out,
            "<tr><td colspan=\"5\">… {} more (--top)</td></tr>",
            dd.more_sites
        );
    }
    out.push_str("</table>\n");
}

/// The page of `doc`: per device, NEW's chart with BASE drawn over it
/// (where both are snapshots), then the deltas.
pub fn render_diff(
    doc: &DiffDocument,
    base: &DiffSide<'_>,
    new: &DiffSide<'_>,
    x: super::XAxis,
) -> String {
    let mut out = head("memgate diff");
    let _ = writeln!(
        out,
        "<p>base: {}<br>new: {}{}</p>",
        escape(&doc.base),
        escape(&doc.new),
        doc.window
            .as_deref()
            .map_or_else(String::new, |w| format!("<br>window: {}", escape(w)))
    );
    let mut page = data::PageData {
        x: x.id(),
        devices: Vec::new(),
    };
    for dd in &doc.devices {
        let id = dd.diff.device;
        let b = base.device(id);
        // NEW's chart when it has one, else BASE's.
        let drawn = match new.device(id) {
            Some((r, Some(t))) => Some((new.path, r, t, b.and_then(|b| b.1))),
            Some((_, None)) | None => match b {
                Some((r, Some(t))) => Some((base.path, r, t, None)),
                _ => None,
            },
        };
        let Some((path, report, timeline, over)) = drawn else {
            let _ = writeln!(
                out,
                "<section><h2>{}</h2>\n<p class=\"note\">No chart: neither side is a \
                 snapshot with this device (a summary holds figures, not a trace).</p>",
                device_name(id)
            );
            out.push_str(&lower_bound_notes(&diff_lower_bounds(dd.diff.complete)));
            deltas(&mut out, dd);
            out.push_str("</section>\n");
            continue;
        };
        let s = Section {
            path,
            report,
            timeline,
        };
        let k = page.devices.len();
        let mut d = data::DeviceData::new(path, report, timeline);
        let overlaid = over.map(|t| d.with_baseline(base.path, t));
        let aligned = d.baseline_alignment();
        page.devices.push(d);
        device_heading(&mut out, k, &s);
        out.push_str(&lower_bound_notes(&diff_lower_bounds(dd.diff.complete)));
        out.push_str(&chart(k, path, id));
        let note = match overlaid {
            Some(true) => format!(
                "The grey lines are the baseline {} on the same axis{}.",
                escape(base.path),
                aligned.map(|how| format!(", {how}")).unwrap_or_default()
            ),
            Some(false) => "The baseline is not drawn: it has no trace entries.".to_string(),
            None => "The baseline is not drawn: it is a summary (figures only) or lacks this \
                     device."
                .to_string(),
        };
        let _ = writeln!(out, "<p class=\"note\">{note}</p>");
        deltas(&mut out, dd);
        out.push_str(&peaks_table(&s));
        out.push_str("</section>\n");
    }
    foot(&mut out, &page);
    out
}
