//! The Markdown report (step summary, MR/PR comment): verdict line, one
//! table per target, why each check did not pass, categories, site diffs.
//! Kept under a size limit by dropping the least important sections first.

use similar::TextDiff;

use super::escape::{markdown as md, markdown_code, terminal};
use super::finding::{current, delta, sentence, value};
use super::{case_label, regression, site_listing};
use crate::compare::{Check, SnapshotVerdict, Status, TargetVerdict, Verdict};
use crate::units::ByteDelta;
use crate::vocab::NoStory;

/// GitHub's step-summary limit.
pub const STEP_SUMMARY_LIMIT: usize = 1 << 20;
/// A PR / MR comment (`--comment-size`).
pub const COMMENT_LIMIT: usize = 65_536;

/// How many sites each side of a site diff lists.
const SITES_LISTED: usize = 20;

fn badge(s: Status) -> &'static str {
    match s {
        Status::Reported => "ℹ️ reported",
        Status::Pass => "✅ pass",
        Status::Skipped => "⏭️ skipped",
        Status::Warn => "⚠️ warn",
        Status::Waived => "🔕 waived",
        Status::Fail => "❌ fail",
        Status::Error => "💥 error",
    }
}

/// A table cell or inline text: no pipe, newline or markup from user data
/// ([`md`] escapes them).
fn cell(text: &str) -> String {
    md(text).into_owned()
}

/// A sentence of memgate's, its code in backticks (`max_entries`): each
/// part between two backticks a code span, the rest text, both escaped as
/// [`cell`] and [`markdown_code`] do; an unpaired backtick stays text. A
/// name from the snapshot inside the sentence can only move where a span
/// starts, never add markup.
fn prose(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, part) in parts.iter().enumerate() {
        let spanned = i % 2 == 1 && i + 1 < parts.len() && !part.is_empty();
        if spanned {
            out.push_str(&markdown_code(part));
        } else if i % 2 == 1 {
            out.push_str(&md(&format!("`{part}")));
            if i + 1 < parts.len() {
                out.push_str(&md("`"));
            }
        } else {
            out.push_str(&md(part));
        }
    }
    out
}

/// A code span holding `text` as it is: control characters escaped as on a
/// terminal, and delimiters longer than any backtick run inside.
fn code(text: &str) -> String {
    let text = terminal(text);
    let ticks = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// The verdict line (also the first line of every rendering).
pub fn verdict_line(v: &Verdict) -> String {
    format!(
        "## memgate: {} — {}",
        badge(v.verdict),
        super::counts_phrase(&v.counts)
    )
}

fn row(s: &SnapshotVerdict, d: &crate::compare::DeviceVerdict, c: &Check) -> String {
    labelled_row(&case_label(s, d), c)
}

fn labelled_row(label: &str, c: &Check) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    // The budget as written, and the share of it used.
    let budget = regression::budget(c).map(|b| {
        let used = c.headroom.and_then(|h| h.fraction_used);
        let b = cell(&b);
        used.map_or(b.clone(), |f| format!("{b} ({:.0}%)", f * 100.0))
    });
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        cell(label),
        markdown_code(&regression::names(c)),
        opt(c.baseline.map(|b| value(c.unit, b))),
        current(c),
        opt(c.delta().map(|d| delta(c.unit, d))),
        opt(c.delta_pct().map(|p| format!("{p:+.1}%"))),
        opt(budget),
        badge(c.status)
    )
}

/// One target's figure table; `all`: passing rows too.
fn table(t: &TargetVerdict, all: bool) -> String {
    let mut out = format!("### {} {}\n\n", badge(t.status), code(&t.name));
    out.push_str("| snapshot | check | baseline | current | Δ | Δ% | budget | status |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    let (mut hidden, mut zero, mut reported, mut no_pct) = (0, 0, 0, false);
    let mut echoes = 0;
    for s in &t.snapshots {
        if let Some(e) = &s.error {
            out.push_str(&format!(
                "| {} | — | | | | | | {}: {} |\n",
                cell(&s.name),
                badge(Status::Error),
                cell(&e.to_string())
            ));
        }
        for d in &s.devices {
            for c in &d.checks {
                let listed = c.status > Status::Skipped || c.always_listed();
                if c.echo_of.is_some() {
                    // One row per finding: its name lists this check.
                    echoes += 1;
                } else if !listed && c.status == Status::Reported {
                    reported += 1;
                } else if !listed && at_zero(c) {
                    zero += 1;
                } else if listed || all {
                    no_pct |= c.delta_pct().is_none();
                    out.push_str(&row(s, d, c));
                } else {
                    hidden += 1;
                }
            }
        }
    }
    for c in t.ranks.iter().flat_map(|r| &r.checks) {
        if all || c.status > Status::Skipped {
            out.push_str(&labelled_row(super::RANKS_LABEL, c));
        } else {
            hidden += 1;
        }
    }
    let mut notes = Vec::new();
    if echoes > 0 {
        notes.push(format!(
            "{echoes} checks moved with a finding above by the same bytes at the same peak: \
             each is listed in its finding's row."
        ));
    }
    if no_pct {
        notes.push(
            "Δ% is — where there is no baseline, or the baseline is zero (no percentage of zero)."
                .to_string(),
        );
    }
    if hidden > 0 {
        notes.push(format!("{hidden} passing checks not listed."));
    }
    if zero > 0 {
        notes.push(format!(
            "{zero} passing checks at zero (current and baseline 0) hidden."
        ));
    }
    if reported > 0 {
        notes.push(format!(
            "{reported} figures with neither budget nor baseline are reported, not judged, and not listed (the JSON and HTML reports have them)."
        ));
    }
    for n in notes {
        out.push_str(&format!("\n_{n}_\n"));
    }
    for s in &t.snapshots {
        for d in &s.devices {
            let label = cell(&case_label(s, d));
            if !d.trace_complete {
                out.push_str(&format!("\n_{label}: {}._\n", super::LOWER_BOUNDS));
            }
            for w in &d.warnings {
                out.push_str(&format!("\n_{label}: warning: {}_\n", cell(w)));
            }
        }
    }
    out.push('\n');
    out.push_str(&super::ranks::markdown(t));
    out
}

/// A passing check that reads zero, as does its baseline: a row that says
/// nothing (hidden, counted).
fn at_zero(c: &Check) -> bool {
    c.status == Status::Pass && c.current == 0 && c.baseline.unwrap_or(0) == 0
}

fn reasons(t: &TargetVerdict) -> String {
    let mut lines = String::new();
    for c in t.ranks.iter().flat_map(|r| &r.checks) {
        if c.status >= Status::Warn {
            lines.push_str(&format!(
                "- **{}**: {}\n",
                markdown_code(&c.id.to_string()),
                prose(&sentence(c))
            ));
        }
    }
    for s in &t.snapshots {
        for d in &s.devices {
            for c in d
                .checks
                .iter()
                .filter(|c| (c.status >= Status::Warn || c.always_listed()) && c.echo_of.is_none())
            {
                lines.push_str(&format!(
                    "- **{} {}{}**: {}\n",
                    cell(&case_label(s, d)),
                    markdown_code(&regression::names(c)),
                    cell(&regression::change(c)),
                    prose(&sentence(c))
                ));
                let cause = regression::cause_lines(c, regression::CAUSE_ROWS, markdown_code);
                if let Some(heading) = regression::cause_heading(c) {
                    lines.push_str(&format!("  - {}\n", prose(&heading)));
                    for r in cause {
                        lines.push_str(&format!("    - {r}\n"));
                    }
                    let sites = regression::cause_sites(c, regression::CAUSE_ROWS);
                    for note in super::notes(sites.iter().map(String::as_str)) {
                        lines.push_str(&format!("  - _{}_\n", cell(&note)));
                    }
                }
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("<details open><summary>Why</summary>\n\n{lines}\n</details>\n\n")
}

/// Each device's memory pools (docs/figures.md#pools), for the devices
/// with more than the default pool.
fn pools(t: &TargetVerdict) -> String {
    let mut rows = String::new();
    for s in &t.snapshots {
        for d in &s.devices {
            for p in &d.pools {
                rows.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} |\n",
                    cell(&case_label(s, d)),
                    cell(&p.name),
                    p.kind.id(),
                    crate::units::Bytes(p.allocated_peak),
                    crate::units::Bytes(p.reserved_peak),
                    crate::units::Bytes(p.at_allocated_peak),
                    crate::units::Bytes(p.cached_free_at_reserved_peak),
                ));
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<details open><summary>Memory pools: {}</summary>\n\n\
         | snapshot | pool | kind | allocated peak | reserved peak | at the device's allocated peak | cached free at its reserved peak |\n\
         |---|---|---|---:|---:|---:|---:|\n{rows}\n</details>\n\n",
        cell(&t.name)
    )
}

fn categories(t: &TargetVerdict) -> String {
    let mut rows = String::new();
    let mut zero = 0;
    for s in &t.snapshots {
        for d in &s.devices {
            for r in &d.categories {
                if r.current == 0 && r.baseline.unwrap_or(0) == 0 {
                    zero += 1;
                    continue;
                }
                let delta = r
                    .baseline
                    .map(|b| ByteDelta(i128::from(r.current) - i128::from(b)));
                rows.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    cell(&case_label(s, d)),
                    cell(&r.category),
                    r.baseline
                        .map_or("—".into(), |b| crate::units::Bytes(b).to_string()),
                    crate::units::Bytes(r.current),
                    delta.map_or("—".into(), |d| d.to_string()),
                ));
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let names = t
        .snapshots
        .iter()
        .flat_map(|s| &s.devices)
        .flat_map(|d| &d.categories)
        .filter(|r| r.current > 0 || r.baseline.unwrap_or(0) > 0)
        .map(|r| r.category.as_str());
    let legend = legend(names);
    let hidden = match zero {
        0 => String::new(),
        1 => "_1 zero-byte category row hidden._\n\n".to_string(),
        n => format!("_{n} zero-byte category rows hidden._\n\n"),
    };
    format!(
        "<details><summary>Categories at the allocated peak: {}</summary>\n\n\
         | snapshot | category | baseline | current | Δ |\n|---|---|---:|---:|---:|\n{rows}\n{legend}{hidden}</details>\n\n",
        cell(&t.name)
    )
}

/// One italic line per name of memory with no story among `shown`, saying
/// what it is (docs/figures.md#memory-with-no-story), then a blank line.
fn legend<'a>(shown: impl IntoIterator<Item = &'a str>) -> String {
    let lines: String = NoStory::among(shown)
        .iter()
        .map(|n| format!("_`{}`: {}._  \n", n.id(), cell(n.meaning())))
        .collect();
    if lines.is_empty() {
        lines
    } else {
        lines + "\n"
    }
}

/// A fence longer than any backtick run in the text.
fn fence(text: &str) -> String {
    "`".repeat(longest_backtick_run(text).max(2) + 1)
}

fn site_diffs(t: &TargetVerdict) -> String {
    let mut out = String::new();
    for s in t.snapshots.iter().filter(|s| s.baseline.is_some()) {
        for d in &s.devices {
            let top = |f: fn(&crate::compare::SiteRow) -> Option<u64>| {
                let listing = site_listing(&d.sites, f);
                listing
                    .lines()
                    .take(SITES_LISTED)
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
            };
            let (old, new) = (top(|r| r.baseline), top(|r| r.current));
            if old == new {
                continue;
            }
            let diff = TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(3)
                .header("baseline", "current")
                .to_string();
            let f = fence(&diff);
            let shown = d
                .sites
                .iter()
                .filter(|r| r.current.is_some() || r.baseline.is_some());
            let legend = legend(shown.map(|r| r.site.as_str()));
            out.push_str(&format!(
                "<details><summary>Allocation sites at the peak: {}</summary>\n\n{f}diff\n{diff}{f}\n\n{legend}</details>\n\n",
                cell(&case_label(s, d))
            ));
        }
    }
    out
}

/// The one-line report when the gate could not judge at all (bad budget
/// file, nothing to judge, an unusable report path): why, so the step
/// summary of a red job is not empty.
pub fn error_report(reasons: &[String]) -> String {
    let why: Vec<String> = reasons.iter().map(|r| cell(r)).collect();
    format!(
        "## memgate: {} — could not judge: {}\n",
        badge(Status::Error),
        why.join("; ")
    )
}

/// The Markdown report of `check --markdown`, linking to the run's page
/// when one is written beside it.
pub(crate) struct Markdown;

impl super::exporter::Exporter for Markdown {
    fn render(&self, v: &Verdict, cx: &super::exporter::Context<'_, '_>) -> String {
        let link = cx.page.map(page_link).unwrap_or_default();
        render(v, cx.markdown_limit.saturating_sub(link.len())) + &link
    }

    fn render_error(&self, reasons: &[String], _: i64) -> Option<String> {
        Some(error_report(reasons))
    }
}

/// Renders one optional section of a target.
type Section = fn(&TargetVerdict) -> String;

/// The report, at most `limit` bytes. Site diffs go first, then category
/// tables, then passing rows, then the reasons; the report says so.
/// The line linking the Markdown report to the run's HTML page (`check
/// --html`), as a CI artifact beside it: `path` as given.
pub fn page_link(path: &str) -> String {
    let text = md(path);
    if path.contains(['<', '>', '\n', '\r']) {
        return format!("\nInteractive page of this run: {text}\n");
    }
    format!("\nInteractive page of this run: [{text}](<{path}>)\n")
}

pub fn render(v: &Verdict, limit: usize) -> String {
    let mut head = format!("{}\n\n", verdict_line(v));
    for w in super::noise::unused_waivers(v) {
        head.push_str(&format!("> ⚠️ {}\n\n", cell(&w)));
    }
    let sections: [(&str, Section); 4] = [
        ("the reasons", reasons),
        ("the pool tables", pools),
        ("the category tables", categories),
        ("the allocation-site diffs", site_diffs),
    ];
    // (passing rows too, how many sections), most complete first.
    let attempts = [
        (true, 4),
        (true, 3),
        (true, 2),
        (true, 1),
        (false, 1),
        (false, 0),
    ];
    for (all, keep) in attempts {
        let mut text = head.clone();
        for t in &v.targets {
            text.push_str(&table(t, all));
            for (_, section) in &sections[..keep] {
                text.push_str(&section(t));
            }
        }
        // The pool tables are named only where there were some to leave out
        // (a run without private pools reads as it did before pools).
        let mut dropped: Vec<&str> = (sections[keep..].iter().rev())
            .filter(|(n, s)| *n != "the pool tables" || v.targets.iter().any(|t| !s(t).is_empty()))
            .map(|(n, _)| *n)
            .collect();
        if !all {
            dropped.insert(dropped.len().saturating_sub(1), "the passing checks");
        }
        if !dropped.is_empty() {
            text.push_str(&format!(
                "_Left out to stay under {limit} bytes: {}. The JSON and JUnit reports have everything._\n",
                dropped.join(", ")
            ));
        }
        if text.len() <= limit {
            return text;
        }
    }
    let note = "\n\n_Truncated to stay under the size limit; the JSON and JUnit reports have everything._\n";
    let mut text = head;
    for t in &v.targets {
        text.push_str(&table(t, false));
    }
    let mut cut = limit.saturating_sub(note.len()).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(note);
    text
}

#[cfg(test)]
mod prose_tests {
    use super::prose;

    #[test]
    fn code_in_a_sentence_is_a_code_span_and_the_rest_is_escaped() {
        assert_eq!(
            prose("record it with a larger `max_entries` in *torch*"),
            r"record it with a larger `max_entries` in \*torch\*"
        );
    }

    #[test]
    fn a_name_with_backticks_can_move_a_span_but_never_add_markup() {
        // An unpaired backtick stays text; `|` never ends a table cell.
        let odd = prose("phase `a|b` and `c");
        assert_eq!(odd, r"phase a\|b and \`c");
        // Markup inside a span is shown as code, as names are.
        assert_eq!(prose("x `<img src=y>` z"), "x `<img src=y>` z");
        assert_eq!(prose("x <img src=y> z"), "x &lt;img src=y&gt; z");
        assert_eq!(prose("``"), r"\`\`");
    }
}
