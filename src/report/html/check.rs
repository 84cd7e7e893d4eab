//! `memgate check --html`: the page of [`super::render`] for a whole gate
//! run. One section per target, snapshot and device, failures first: the
//! checks with their verdicts, the current run's chart with the baseline's
//! allocated and reserved bytes drawn over it on the same axis (when the
//! baseline is a snapshot), and the category and site deltas. Verdicts are
//! coloured badges with an icon, and a summary table at the top links every
//! section. A target with `[target.ranks]` has a section of its ranks too
//! (`ranks.rs`), in the same order by verdict.

use crate::vocab::Device;
use std::fmt::Write as _;

use super::badge::badge;
use super::{chart, data, device_heading, foot, head, peaks_table, ranks, Section};
use crate::analysis::{DeviceReport, Timeline};
use crate::compare::{
    CheckId, DeviceVerdict, RanksVerdict, SnapshotVerdict, Status, TargetVerdict, Verdict,
};
use crate::report::escape::html as escape;
use crate::report::exporter::Charted;
use crate::report::finding::{self, value};
use crate::units::{ByteDelta, Bytes};
use crate::vocab::{Figure, Unit};

impl<'a> Charted<'a> {
    fn device(&self, id: Device) -> Option<(&'a DeviceReport, &'a Timeline)> {
        let k = self.devices.iter().position(|d| d.device == id)?;
        Some((&self.devices[k], self.timelines.get(k)?))
    }
}

/// A device's verdict: its worst check's.
fn device_status(d: &DeviceVerdict) -> Status {
    d.checks
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(Status::Pass)
}

/// The budgets the chart can show as lines: those of the allocated and
/// reserved peaks (the curves it draws), with their headroom.
fn budget_lines(d: &DeviceVerdict) -> Vec<data::BudgetLine> {
    d.checks
        .iter()
        .filter(|c| c.unit == Unit::Bytes)
        .filter_map(|c| {
            let CheckId::Figure(f @ (Figure::AllocatedPeak | Figure::ReservedPeak)) = c.id else {
                return None;
            };
            let budget = c.budget?;
            Some(data::BudgetLine {
                check: f.id().to_string(),
                bytes: budget,
                headroom: i64::try_from(i128::from(budget) - i128::from(c.current))
                    .unwrap_or(i64::MIN),
            })
        })
        .collect()
}

fn checks_table(out: &mut String, d: &DeviceVerdict) {
    if !d.trace_complete {
        out.push_str(&super::lower_bound_notes(&[crate::report::LOWER_BOUNDS]));
    }
    out.push_str(
        "<table class=\"checks\"><caption>Checks</caption><tr><th>check</th><th>verdict</th>\
         <th>current</th><th>baseline</th><th>budget</th><th>why</th></tr>\n",
    );
    let mut checks: Vec<_> = d.checks.iter().collect();
    checks.sort_by_key(|c| std::cmp::Reverse(c.status));
    for c in checks {
        let opt = |v: Option<u64>| v.map_or_else(|| "–".to_string(), |v| value(c.unit, v));
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"stack\">{}</td></tr>",
            c.status.id(),
            escape(&c.id.to_string()),
            badge(c.status),
            finding::current(c),
            opt(c.baseline),
            opt(c.budget),
            escape(&finding::sentence(c))
        );
    }
    out.push_str("</table>\n");
}

fn deltas(out: &mut String, d: &DeviceVerdict) {
    out.push_str(&super::pools::pools_table(&d.pools));
    let cell = |v: Option<u64>| v.map_or_else(|| "–".to_string(), |v| Bytes(v).to_string());
    out.push_str(
        "<table class=\"deltas\"><caption>Categories at the allocated peak</caption><tr>\
         <th>category</th><th>baseline</th><th>current</th><th>change</th></tr>\n",
    );
    // As the Markdown report: a category at 0 B on both sides is not a row.
    let rows = d
        .categories
        .iter()
        .filter(|c| c.current > 0 || c.baseline.unwrap_or(0) > 0);
    let hidden = d.categories.len() - rows.clone().count();
    for c in rows {
        let change = c.baseline.map_or_else(String::new, |b| {
            ByteDelta(i128::from(c.current) - i128::from(b)).to_string()
        });
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{change}</td></tr>",
            escape(&c.category),
            cell(c.baseline),
            Bytes(c.current)
        );
    }
    out.push_str("</table>\n");
    if hidden > 0 {
        let rows = crate::units::counted(
            hidden as u64,
            "zero-byte category row",
            "zero-byte category rows",
        );
        let _ = writeln!(out, "<p class=\"note\">{rows} hidden.</p>");
    }
    let shown = d
        .categories
        .iter()
        .filter(|c| c.current > 0 || c.baseline.unwrap_or(0) > 0);
    out.push_str(&super::legend(shown.map(|c| c.category.as_str())));
    if d.sites.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"deltas\"><caption>Allocation sites at the allocated peak (largest \
         growth first)</caption><tr><th>site</th><th>baseline</th><th>current</th>\
         <th>change</th></tr>\n",
    );
    for s in &d.sites {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            super::folded_path(&s.site),
            cell(s.baseline),
            cell(s.current),
            ByteDelta(s.growth())
        );
    }
    out.push_str("</table>\n");
    out.push_str(&super::legend(d.sites.iter().map(|s| s.site.as_str())));
}

/// The HTML page of `check --html`.
pub(crate) struct Page;

impl crate::report::exporter::Exporter for Page {
    fn render(&self, v: &Verdict, cx: &crate::report::exporter::Context<'_, '_>) -> String {
        render_check(v, cx.charted, cx.x_axis)
    }

    fn render_error(&self, reasons: &[String], _: i64) -> Option<String> {
        Some(render_check_error(reasons))
    }
}

/// The page of a gate that could not judge at all (bad budget file,
/// nothing to judge, an unusable report path): the verdict `error` and
/// every reason, so the artifact a job keeps still says why.
pub fn render_check_error(reasons: &[String]) -> String {
    let mut out = head("memgate check");
    out.push_str(
        "<section class=\"case error\">\n<h2>ERROR — the gate could not judge</h2>\n<ul>\n",
    );
    for r in reasons {
        let _ = writeln!(out, "<li>{}</li>", escape(r));
    }
    out.push_str("</ul>\n</section>\n");
    foot(
        &mut out,
        &data::PageData {
            x: super::XAxis::Auto.id(),
            devices: Vec::new(),
        },
    );
    out
}

/// The page of the gate run `v`; `charted(t, path)` is what target `t`
/// analysed of the file `path` (a snapshot: summaries have no chart).
pub fn render_check<'a>(
    v: &Verdict,
    charted: &dyn Fn(usize, &str) -> Option<Charted<'a>>,
    x: super::XAxis,
) -> String {
    let mut out = head("memgate check");
    let _ = writeln!(
        out,
        "<p class=\"verdict\">verdict: {} · {} target(s)</p>",
        badge(v.verdict),
        v.targets.len()
    );
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (t, target) in v.targets.iter().enumerate() {
        for s in &target.snapshots {
            if s.devices.is_empty() {
                cases.push((t, &target.name, s, None));
            }
            cases.extend(
                s.devices
                    .iter()
                    .map(|d| (t, target.name.as_str(), s, Some(d))),
            );
        }
    }
    let status = |c: &Case<'_>| c.3.map_or(c.2.status, device_status);
    // Failures first; the run's order otherwise.
    cases.sort_by_key(|c| std::cmp::Reverse(status(c)));
    let mut page = data::PageData {
        x: x.id(),
        devices: Vec::new(),
    };
    // The rank sections of the targets that have them, merged into the
    // cases by verdict (before the cases of the same verdict).
    let ranked = ranks::targets(v);
    summary(&mut out, &cases, &status, &ranked);
    let mut next_ranks = ranked.iter().peekable();
    for (n, case) in cases.iter().enumerate() {
        let st = status(case);
        while let Some((rt, rtarget, r)) = next_ranks.next_if(|(_, _, r)| r.status >= st) {
            ranks::section(&mut out, *rt, rtarget, r);
        }
        case_section(&mut out, &mut page, n, *case, st, charted);
    }
    for (rt, rtarget, r) in next_ranks {
        ranks::section(&mut out, *rt, rtarget, r);
    }
    // The finer zoom level costs about three times the samples: a page of
    // many charts goes without it.
    if page.devices.len() > FINE_CHARTS {
        page.devices
            .iter_mut()
            .for_each(data::DeviceData::drop_fine);
    }
    foot(&mut out, &page);
    out
}

/// Section `n` of the page: one case (target, snapshot, device) with its
/// verdict `st`, its checks, and its chart (added to `page`) when the
/// snapshot was charted.
fn case_section<'p, 'a: 'p>(
    out: &mut String,
    page: &mut data::PageData<'p>,
    n: usize,
    (t, target, s, d): Case<'p>,
    st: Status,
    charted: &dyn Fn(usize, &str) -> Option<Charted<'a>>,
) {
    let _ = writeln!(
        out,
        "<section class=\"case {}\" id=\"case-{n}\">\n<h2>{} · {} · {} — {}</h2>",
        st.id(),
        badge(st),
        escape(target),
        escape(&s.name),
        d.map_or_else(|| "no device".to_string(), |d| super::device_name(d.device))
    );
    let _ = writeln!(
        out,
        "<p>current: {}<br>baseline: {}</p>",
        escape(&s.path),
        s.baseline.as_deref().map_or_else(|| "none".into(), escape)
    );
    if let Some(e) = &s.error {
        let _ = writeln!(
            out,
            "<p><strong>not judged</strong>: {}</p>",
            escape(&e.to_string())
        );
    }
    let Some(d) = d else {
        out.push_str("</section>\n");
        return;
    };
    checks_table(out, d);
    let Some((report, timeline)) = charted(t, &s.path).and_then(|c| c.device(d.device)) else {
        deltas(out, d);
        out.push_str("</section>\n");
        return;
    };
    let k = page.devices.len();
    let mut data = data::DeviceData::new(&s.path, report, timeline);
    data.budgets = budget_lines(d);
    let base = s.baseline.as_deref().and_then(|b| {
        let (_, bt) = charted(t, b)?.device(d.device)?;
        Some((b, bt))
    });
    let overlaid = base.map(|(b, bt)| data.with_baseline(b, bt));
    let aligned = data.baseline_alignment();
    page.devices.push(data);
    let sec = Section {
        path: &s.path,
        report,
        timeline,
    };
    device_heading(out, k, &sec);
    out.push_str(&chart(k, &s.path, d.device));
    let note = match (overlaid, aligned) {
        (Some(true), Some(how)) => {
            format!("The grey lines are the baseline on the same axis, {how}.")
        }
        (Some(true), None) => "The grey lines are the baseline on the same axis.".to_string(),
        (Some(false), _) => "The baseline is not drawn: it has no trace entries.".to_string(),
        (None, _) => "The baseline is not drawn: there is none, or it is a summary \
                      (figures only)."
            .to_string(),
    };
    let _ = writeln!(out, "<p class=\"note\">{note}</p>");
    deltas(out, d);
    out.push_str(&peaks_table(&sec));
    out.push_str("</section>\n</section>\n");
}

/// Most charts a check page draws with their finer zoom level.
const FINE_CHARTS: usize = 16;

type Case<'v> = (
    usize,
    &'v str,
    &'v SnapshotVerdict,
    Option<&'v DeviceVerdict>,
);

/// The table at the top: every target, snapshot and device with its
/// verdict, failures first, each linking to its section.
/// Each target's ranks have a row too, before the cases of the same verdict.
fn summary(
    out: &mut String,
    cases: &[Case<'_>],
    status: &dyn Fn(&Case<'_>) -> Status,
    ranked: &[(usize, &TargetVerdict, &RanksVerdict)],
) {
    out.push_str(
        "<table class=\"summary\"><caption>Targets, snapshots and devices</caption><tr>\
         <th>verdict</th><th>target</th><th>snapshot</th><th>device</th><th>checks failed</th>\
         </tr>\n",
    );
    let mut next_ranks = ranked.iter().peekable();
    for (n, c) in cases.iter().enumerate() {
        while let Some((t, target, r)) = next_ranks.next_if(|(_, _, r)| r.status >= status(c)) {
            ranks::summary_row(out, *t, target, r);
        }
        let (_, target, s, d) = *c;
        let failed = d.map_or(0, |d| {
            d.checks.iter().filter(|c| c.status == Status::Fail).count()
        });
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><a href=\"#case-{n}\">{}</a></td><td><a href=\"#case-{n}\">{}\
             </a></td><td><a href=\"#case-{n}\">{}</a></td><td>{failed}</td></tr>",
            badge(status(c)),
            escape(target),
            escape(&s.name),
            d.map_or_else(|| "no device".to_string(), |d| format!("dev{}", d.device))
        );
    }
    for (t, target, r) in next_ranks {
        ranks::summary_row(out, *t, target, r);
    }
    out.push_str("</table>\n");
}
