//! The short human summary printed after a check: one line per finding
//! that did not pass (its figures, change, headroom and top site), one
//! compact line per device that passed, then the verdict. Colour only when
//! asked ([`colour_wanted`]).

use anstyle::{AnsiColor, Style};

use super::case_label;
use super::escape::terminal as one_line;
use super::finding::sentence;
use super::regression;
use crate::compare::{Status, Verdict};

fn paint(text: &str, status: Status, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let style = match status {
        Status::Pass => AnsiColor::Green.on_default(),
        Status::Reported | Status::Skipped => Style::new().dimmed(),
        Status::Warn | Status::Waived => AnsiColor::Yellow.on_default(),
        Status::Fail | Status::Error => AnsiColor::Red.on_default(),
    };
    format!("{style}{text}{style:#}")
}

/// Whether the summary is coloured, by the conventions anstream follows:
/// `NO_COLOR` (set, not empty) turns colour off whatever else is set;
/// `CLICOLOR_FORCE` (not `0`) turns it on even in a pipe, as for a CI log
/// that renders it; `CLICOLOR=0` turns it off on a terminal; otherwise a
/// terminal gets colour. (Only the command line asks.)
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn colour_wanted(out_is_terminal: bool) -> bool {
    if anstyle_query::no_color() {
        return false;
    }
    // anstyle-query takes any value as forcing; the convention's `0` does not.
    let forced = std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| v != "0");
    if anstyle_query::clicolor_force() && forced {
        return true;
    }
    out_is_terminal && anstyle_query::clicolor() != Some(false)
}

fn label(s: Status) -> &'static str {
    match s {
        Status::Reported => "REPORTED",
        Status::Pass => "PASS",
        Status::Skipped => "SKIP",
        Status::Warn => "WARN",
        Status::Waived => "WAIVED",
        Status::Fail => "FAIL",
        Status::Error => "ERROR",
    }
}

/// At most this many lines before the verdict; the reports have the rest.
pub const MAX_LINES: usize = 20;

pub fn render(v: &Verdict, color: bool) -> String {
    let mut lines: Vec<String> = Vec::new();
    // Devices that passed: one compact line each, after what did not.
    let mut passes: Vec<String> = Vec::new();
    for t in &v.targets {
        for s in &t.snapshots {
            if let Some(e) = &s.error {
                let tag = paint(label(Status::Error), Status::Error, color);
                let e = e.to_string();
                let (t, s, e) = (one_line(&t.name), one_line(&s.name), one_line(&e));
                lines.push(format!("{tag} {t} {s}: {e}\n"));
            }
            for d in &s.devices {
                // One line per finding: its echoes are said in its names.
                for c in d.checks.iter().filter(|c| {
                    (c.status >= Status::Warn || c.always_listed()) && c.echo_of.is_none()
                }) {
                    let tag = paint(label(c.status), c.status, color);
                    lines.push(format!(
                        "{tag} {} {} {}{}: {}{}\n",
                        one_line(&t.name),
                        one_line(&case_label(s, d)),
                        one_line(&regression::names(c)),
                        regression::change(c),
                        one_line(&sentence(c)),
                        regression::top_site(c)
                    ));
                }
                if let Some(summary) = regression::pass_summary(d) {
                    let tag = paint(label(Status::Pass), Status::Pass, color);
                    passes.push(format!(
                        "{tag} {} {}: {}\n",
                        one_line(&t.name),
                        one_line(&case_label(s, d)),
                        one_line(&summary)
                    ));
                }
            }
        }
    }
    lines.extend(rank_lines(v, color));
    for w in super::noise::unused_waivers(v) {
        lines.push(format!("note: {}\n", one_line(&w)));
    }
    lines.extend(no_story_notes(v));
    // A lower bound is said whatever the checks' status: a pass on one
    // is no pass on the real figure.
    for t in &v.targets {
        for s in &t.snapshots {
            for d in s.devices.iter().filter(|d| !d.trace_complete) {
                lines.push(format!(
                    "note: {} {}: {}\n",
                    one_line(&t.name),
                    one_line(&case_label(s, d)),
                    super::LOWER_BOUNDS
                ));
            }
        }
    }
    lines.extend(passes);
    let more = lines.len().saturating_sub(MAX_LINES);
    let mut out: String = lines.into_iter().take(MAX_LINES).collect();
    if more > 0 {
        out.push_str(&format!("… and {more} more (see the reports)\n"));
    }
    let verdict = paint(&format!("memgate: {}", v.verdict.id()), v.verdict, color);
    out.push_str(&format!("{verdict}: {}\n", super::counts_phrase(&v.counts)));
    out
}

/// One line per rank check that did not pass.
fn rank_lines(v: &Verdict, color: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for t in &v.targets {
        for c in t.ranks.iter().flat_map(|r| &r.checks) {
            if c.status >= Status::Warn {
                let tag = paint(label(c.status), c.status, color);
                lines.push(format!(
                    "{tag} {} {} {}: {}\n",
                    one_line(&t.name),
                    super::RANKS_LABEL,
                    one_line(&c.id.to_string()),
                    one_line(&sentence(c))
                ));
            }
        }
    }
    lines
}

/// The top sites the finding lines name that are memory with no story,
/// explained (docs/figures.md#memory-with-no-story).
fn no_story_notes(v: &Verdict) -> Vec<String> {
    let listed = v
        .targets
        .iter()
        .flat_map(|t| &t.snapshots)
        .flat_map(|s| &s.devices)
        .flat_map(|d| &d.checks)
        .filter(|c| (c.status >= Status::Warn || c.always_listed()) && c.echo_of.is_none());
    let named: Vec<&str> = listed.filter_map(regression::top_site_name).collect();
    super::notes(named).into_iter().map(|n| n + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_added_only_when_asked_for() {
        assert_eq!(paint("FAIL", Status::Fail, false), "FAIL");
        assert_eq!(paint("FAIL", Status::Fail, true), "\u{1b}[31mFAIL\u{1b}[0m");
    }
}
