//! GitHub Actions: `GITHUB_OUTPUT` lines and `::error` annotations that
//! point at the budget-file line of each violated key. Names are escaped as
//! for a terminal first ([`terminal`]), so no name can end a line
//! and start a workflow command of its own.

use super::case_label;
use super::escape::terminal;
use super::finding::sentence;
use super::regression;
use crate::compare::{Check, Status, Verdict};

/// At most this many annotations; the last one summarises the rest.
pub const MAX_ANNOTATIONS: usize = 10;

/// Lines for `GITHUB_OUTPUT`: `verdict`, `regressions`, `report`.
pub fn outputs(v: &Verdict, report: Option<&str>) -> String {
    format!(
        "verdict={}\nregressions={}\nreport={}\n",
        v.verdict.id(),
        v.regressions(),
        terminal(report.unwrap_or(""))
    )
}

/// `GITHUB_OUTPUT` lines when the gate could not judge at all (no verdict):
/// the same keys, so a workflow reading them sees `error`, not nothing.
pub fn error_outputs(report: Option<&str>) -> String {
    format!(
        "verdict={}\nregressions=0\nreport={}\n",
        Status::Error.id(),
        terminal(report.unwrap_or(""))
    )
}

/// The `::error` line saying why the gate could not judge at all.
pub fn error_annotation(why: &str) -> String {
    format!("::error title=memgate could not judge::{}", data(why))
}

/// Workflow-command escaping of a message: control characters are already
/// escapes, so only `%` needs GitHub's own escape.
fn data(text: &str) -> String {
    terminal(text).replace('%', "%25")
}

/// Workflow-command escaping of a property value.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `::error` / `::warning` lines, failures first, at most [`MAX_ANNOTATIONS`].
pub fn annotations(v: &Verdict) -> Vec<String> {
    let mut all: Vec<(Status, String)> = Vec::new();
    for t in &v.targets {
        for s in &t.snapshots {
            if let Some(e) = &s.error {
                let msg = format!("{} {}: could not be judged: {e}", t.name, s.name);
                all.push((
                    Status::Error,
                    format!("::error title=memgate::{}", data(&msg)),
                ));
            }
        }
    }
    // One annotation per finding: its echoes are named in it.
    for (t, s, d, c) in v
        .checks()
        .filter(|x| x.3.status >= Status::Warn && x.3.echo_of.is_none())
    {
        let mut msg = format!(
            "{} {} {}{}: {}{}",
            t.name,
            case_label(s, d),
            regression::names(c),
            regression::change(c),
            sentence(c),
            regression::top_site(c)
        );
        // A top site that is memory with no story, explained on the spot.
        for note in super::notes(regression::top_site_name(c)) {
            msg.push_str(&format!(" ({note})"));
        }
        all.push((c.status, annotation(c, &msg)));
    }
    for t in &v.targets {
        for c in t.ranks.iter().flat_map(|r| &r.checks) {
            if c.status < Status::Warn {
                continue;
            }
            let msg = format!(
                "{} {} {}: {}",
                t.name,
                super::RANKS_LABEL,
                c.id,
                sentence(c)
            );
            all.push((c.status, annotation(c, &msg)));
        }
    }
    all.sort_by_key(|a| std::cmp::Reverse(a.0));
    if all.len() > MAX_ANNOTATIONS {
        let rest = all.len() - (MAX_ANNOTATIONS - 1);
        all.truncate(MAX_ANNOTATIONS - 1);
        let msg = format!("{rest} more checks did not pass; see the memgate report");
        all.push((
            Status::Error,
            format!("::error title=memgate::{}", data(&msg)),
        ));
    }
    all.into_iter().map(|(_, line)| line).collect()
}
/// The workflow command of a check that did not pass: a warning or an
/// error at its budget-file line, titled by the check's id.
fn annotation(c: &Check, msg: &str) -> String {
    let kind = if matches!(c.status, Status::Warn | Status::Waived) {
        "warning"
    } else {
        "error"
    };
    let at = c.config_line.as_ref().map_or(String::new(), |l| {
        format!("file={},line={},col={},", property(&l.file), l.line, l.col)
    });
    let title = property(&format!("memgate {}", c.id));
    format!("::{kind} {at}title={title}::{}", data(msg))
}
