//! GitLab's Code Quality report (`artifacts: reports: codequality`, Code
//! Climate JSON as GitLab reads it) of `check --codequality`: one issue per
//! check that did not pass and per snapshot that could not be judged, each
//! pointing at the budget file's line of the limit it broke (the file's
//! first line when no key says it), so the merge request shows it beside
//! the budget. GitLab Free shows this report in the merge request widget.
//!
//! An issue's fingerprint hashes what was judged (check, target, snapshot,
//! device), never a value, so GitLab sees the same regression across runs
//! as one issue. A failure is `critical`, a warning `minor`, a snapshot or
//! gate that could not be judged `blocker`.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::case_label;
use super::escape::terminal;
use super::finding::sentence;
use crate::compare::{Status, Verdict};

/// The Code Quality report of `check --codequality`.
pub(crate) struct CodeQuality;

impl super::exporter::Exporter for CodeQuality {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, reasons: &[String], _: i64) -> Option<String> {
        Some(error_report(reasons))
    }
}

/// The first 32 hex digits of the SHA-256 of `parts`, each ended by a NUL.
fn fingerprint(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn issue(
    check: &str,
    description: String,
    severity: &str,
    path: &str,
    line: usize,
    fp: String,
) -> Value {
    json!({
        "description": description,
        "check_name": check,
        "fingerprint": fp,
        "severity": severity,
        "location": { "path": path, "lines": { "begin": line.max(1) } },
    })
}

fn text(issues: Vec<Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Array(issues))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

pub(crate) fn render(v: &Verdict) -> String {
    let mut issues = Vec::new();
    for t in &v.targets {
        for s in &t.snapshots {
            if let Some(e) = &s.error {
                let description =
                    terminal(&format!("{} {}: could not be judged: {e}", t.name, s.name))
                        .into_owned();
                let fp = fingerprint(&["memgate/not-judged", &t.name, &s.name]);
                issues.push(issue(
                    "memgate/not-judged",
                    description,
                    "blocker",
                    &v.config,
                    1,
                    fp,
                ));
            }
        }
    }
    for (t, s, d, c) in v.checks().filter(|x| x.3.status >= Status::Warn) {
        let severity = match c.status {
            Status::Warn => "minor",
            // A failure a waiver lets through stays on the merge request.
            Status::Waived => "info",
            Status::Fail => "critical",
            _ => "blocker",
        };
        let (path, line) = c
            .config_line
            .as_ref()
            .map_or((v.config.as_str(), 1), |l| (l.file.as_str(), l.line));
        let id = c.id.to_string();
        let description = terminal(&format!(
            "{} {} {id}: {}",
            t.name,
            case_label(s, d),
            sentence(c)
        ))
        .into_owned();
        let check = format!("memgate/{}", terminal(&id));
        let device = d.device.to_string();
        let fp = fingerprint(&[&check, &t.name, &s.name, &device]);
        issues.push(issue(&check, description, severity, path, line, fp));
    }
    text(issues)
}

/// `PATH:LINE:COL: message` (the budget-file errors) as its path and line.
fn located(reason: &str) -> Option<(&str, usize)> {
    let (head, _) = reason.split_once(": ")?;
    let mut parts = head.rsplitn(3, ':');
    let _col: usize = parts.next()?.parse().ok()?;
    let line: usize = parts.next()?.parse().ok()?;
    Some((parts.next().filter(|p| !p.is_empty())?, line))
}

/// The gate could not judge at all: one `blocker` per reason, at the
/// budget-file line the reason names (`memgate.toml` line 1 otherwise), so
/// the widget is never empty when nothing was judged.
pub(crate) fn error_report(reasons: &[String]) -> String {
    let issues = reasons
        .iter()
        .map(|r| {
            let (path, line) = located(r).unwrap_or(("memgate.toml", 1));
            let fp = fingerprint(&["memgate/could-not-judge", r]);
            let description = terminal(r).into_owned();
            issue(
                "memgate/could-not-judge",
                description,
                "blocker",
                path,
                line,
                fp,
            )
        })
        .collect();
    text(issues)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_error_points_at_its_file_and_line() {
        assert_eq!(
            located("a/m.toml:12:3: unknown key"),
            Some(("a/m.toml", 12))
        );
        assert_eq!(located("C:\\m.toml:2:1: x"), Some(("C:\\m.toml", 2)));
        assert_eq!(located("nothing to judge: no targets"), None);
        let doc: Value = serde_json::from_str(&error_report(&["m.toml:4:1: bad".into()])).unwrap();
        assert_eq!(doc[0]["location"]["path"], "m.toml");
        assert_eq!(doc[0]["location"]["lines"]["begin"], 4);
        assert_eq!(doc[0]["severity"], "blocker");
    }

    #[test]
    fn fingerprints_differ_by_part_boundaries() {
        assert_ne!(fingerprint(&["ab", "c"]), fingerprint(&["a", "bc"]));
        assert_eq!(fingerprint(&["x"]).len(), 32);
    }
}
