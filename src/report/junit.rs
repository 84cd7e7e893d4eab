//! JUnit XML: one `<testsuite>` per target, one `<testcase>` per
//! (snapshot, device, check), named without values so CI can track them.
//! Written by `quick-junit`, which escapes markup (no CDATA to break out
//! of) and can give every outcome its reason.
//!
//! What CI tools show decides the shape: GitLab, dorny/test-reporter and
//! mikepenz/action-junit-report show a passing case's name but none of its
//! `<system-out>`, so a warning is a passing case whose name ends in
//! ` [warning]`, with the sentence in `<system-out>`. `testcase@file` is a
//! source file to those tools: it names the budget file (with `line`) of a
//! check that has a budget key, never a snapshot or summary.

use std::collections::HashSet;
use std::time::Duration;

use chrono::DateTime;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::escape;
use super::finding::sentence;
use super::regression;
use super::{case_label, top_growth};
use crate::compare::{Check, DeviceVerdict, Finding, SnapshotVerdict, Status, Verdict};

/// What a warned case's name ends in.
pub const WARNING_SUFFIX: &str = " [warning]";
/// What the name of a case a waiver lets through ends in.
pub const WAIVED_SUFFIX: &str = " [waived]";

/// One line of user data for XML: control characters escaped as on a
/// terminal (a name cannot start a line in a CI log that shows it), and
/// nothing XML 1.0 cannot hold.
fn text(s: &str) -> String {
    escape::xml(&escape::terminal(s)).into_owned()
}

/// A failure or error with its type, one-line message and body.
fn non_success(kind: NonSuccessKind, ty: &str, message: &str, body: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status
        .set_type(ty)
        .set_message(message)
        .set_description(body);
    status
}

fn skipped(message: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::skipped();
    status.set_message(message);
    status
}

/// The budget-file line a check's verdict comes from, as the `file` and
/// `line` attributes CI annotations read.
fn at_budget_line(case: &mut TestCase, c: &Check) {
    if let Some(at) = &c.config_line {
        case.extra
            .insert("file".into(), text(&at.file).as_str().into());
        case.extra
            .insert("line".into(), at.line.to_string().as_str().into());
    }
}

fn is_leak_fit(f: &Finding) -> bool {
    matches!(f, Finding::LeakFit { .. })
}

/// The outcome of one check across a target's ranks.
fn rank_case(name: String, c: &Check) -> TestCase {
    let line = text(&format!("{} {}: {}", super::RANKS_LABEL, c.id, sentence(c)));
    let status = match c.status {
        Status::Fail => non_success(NonSuccessKind::Failure, "memory-imbalance", &line, &line),
        Status::Error => non_success(NonSuccessKind::Error, "error", &line, &line),
        Status::Skipped => skipped(&line),
        Status::Warn | Status::Waived | Status::Pass | Status::Reported => {
            TestCaseStatus::success()
        }
    };
    let mut case = TestCase::new(name, status);
    match c.status {
        Status::Warn => case.set_system_out(format!("warning: {line}")),
        // The figures across ranks are read even where they pass.
        Status::Pass => case.set_system_out(line.clone()),
        _ => &mut case,
    };
    at_budget_line(&mut case, c);
    case
}

/// The outcome of one check; a warning passes, its name and output say so.
fn case(name: String, s: &SnapshotVerdict, d: &DeviceVerdict, c: &Check) -> TestCase {
    if let Some(lead) = &c.echo_of {
        // The same regression as its finding's case, which fails once.
        let why = format!("same regression as dev{}.{lead}", d.device);
        return TestCase::new(name, skipped(&text(&why)));
    }
    let line = text(&format!(
        "{} {}{}: {}{}",
        case_label(s, d),
        regression::names(c),
        regression::change(c),
        sentence(c),
        regression::top_site(c)
    ));
    let status = match c.status {
        Status::Fail => {
            let mut body = line.clone();
            if !d.trace_complete {
                body.push_str(&format!("\n\nnote: {}", super::LOWER_BOUNDS));
            }
            let rows = regression::cause_lines(c, regression::CAUSE_ROWS, text);
            let shown = if let Some(heading) = regression::cause_heading(c) {
                body.push_str(&format!("\n\n{heading}\n"));
                let rows: Vec<String> = rows.iter().map(|r| format!("  {r}")).collect();
                body.push_str(&rows.join("\n"));
                regression::cause_sites(c, regression::CAUSE_ROWS)
            } else {
                // No baseline to read a cause from: where the bytes are.
                let growth = top_growth(d, 5);
                if !growth.is_empty() {
                    body.push_str("\n\nTop growing allocation sites:\n");
                    let growth: Vec<String> = growth.iter().map(|l| text(l)).collect();
                    body.push_str(&growth.join("\n"));
                }
                let grew = d.sites.iter().filter(|s| s.growth() > 0).take(5);
                grew.map(|s| s.site.clone()).collect()
            };
            for note in super::notes(shown.iter().map(String::as_str)) {
                body.push_str(&format!("\n{note}"));
            }
            non_success(NonSuccessKind::Failure, "memory-regression", &line, &body)
        }
        Status::Error => non_success(NonSuccessKind::Error, "error", &line, &line),
        Status::Skipped => skipped(&line),
        Status::Warn | Status::Waived | Status::Pass | Status::Reported => {
            TestCaseStatus::success()
        }
    };
    let mut case = TestCase::new(name, status);
    let said = if c.status == Status::Warn {
        Some(format!("warning: {line}"))
    } else if c.status == Status::Waived {
        // A failure let through: the case passes, its output says why.
        Some(format!("waived: {line}"))
    } else if c.status == Status::Reported {
        // Given, not judged: a passing case whose output says so, never a
        // skip beside a green verdict.
        Some(format!("reported, not judged: {line}"))
    } else if c.status == Status::Pass && c.findings.iter().any(is_leak_fit) {
        // The residual is read beside the figure, even where it passes.
        Some(line.clone())
    } else {
        None
    };
    // A lower bound is said on every case of its device that passes.
    let note = (!d.trace_complete && c.status <= Status::Waived)
        .then(|| format!("note: {}", super::LOWER_BOUNDS));
    let said: Vec<String> = said.into_iter().chain(note).collect();
    if !said.is_empty() {
        case.set_system_out(said.join("\n"));
    }
    at_budget_line(&mut case, c);
    case
}

/// The JUnit document when the gate could not judge at all (bad budget
/// file, nothing to judge, an unusable report path): one `<error>` case
/// saying why, so a red job's test report is not empty.
pub fn error_report(reasons: &[String], generated_at: i64) -> String {
    let lines: Vec<String> = reasons.iter().map(|r| text(r)).collect();
    let status = non_success(
        NonSuccessKind::Error,
        "could-not-judge",
        &lines.join("; "),
        &lines.join("\n"),
    );
    let mut case = TestCase::new("could-not-judge", status);
    case.set_classname("memgate").set_time(Duration::ZERO);
    let mut suite = TestSuite::new("memgate");
    suite
        .set_timestamp(stamp(generated_at))
        .set_time(Duration::ZERO);
    suite.add_test_case(case);
    let mut report = Report::new("memgate");
    report.add_test_suite(suite);
    serialize(&report)
}

fn stamp(generated_at: i64) -> DateTime<chrono::Utc> {
    DateTime::from_timestamp(generated_at, 0).unwrap_or_default()
}

// Serializing into memory fails only on a bug in the writer; the report
// would then say so instead of being silently empty.
fn serialize(report: &Report) -> String {
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit report could not be written: {e} -->\n"))
}

/// The JUnit report of `check --junit`.
pub(crate) struct Junit;

impl super::exporter::Exporter for Junit {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, reasons: &[String], generated_at: i64) -> Option<String> {
        Some(error_report(reasons, generated_at))
    }
}

/// The JUnit document of a verdict.
pub fn render(v: &Verdict) -> String {
    let stamp = stamp(v.generated_at);
    let mut report = Report::new("memgate");
    // (classname, name) pairs handed out so far: CI tools merge duplicates.
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut unique = |class: &str, name: String| -> String {
        let mut candidate = name.clone();
        let mut n = 1;
        while !seen.insert((class.to_string(), candidate.clone())) {
            n += 1;
            candidate = format!("{name} ({n})");
        }
        candidate
    };
    for t in &v.targets {
        let mut suite = TestSuite::new(text(&t.name));
        suite.set_timestamp(stamp).set_time(Duration::ZERO);
        for s in &t.snapshots {
            let class = text(&format!("{}.{}", t.name, s.name));
            let mut cases = Vec::new();
            if let Some(e) = &s.error {
                let line = text(&format!("{}: could not be judged: {e}", s.name));
                let status =
                    non_success(NonSuccessKind::Error, "unreadable-snapshot", &line, &line);
                cases.push(TestCase::new(unique(&class, "load".into()), status));
            }
            for d in &s.devices {
                for c in &d.checks {
                    let warned = match c.status {
                        Status::Warn => WARNING_SUFFIX,
                        // A passing case must not hide the failure it is.
                        Status::Waived => WAIVED_SUFFIX,
                        _ => "",
                    };
                    let name = unique(
                        &class,
                        format!("dev{}.{}{warned}", d.device, text(&c.id.to_string())),
                    );
                    cases.push(case(name, s, d, c));
                }
            }
            for mut case in cases {
                case.set_classname(class.as_str()).set_time(Duration::ZERO);
                suite.add_test_case(case);
            }
        }
        let class = text(&format!("{}.{}", t.name, super::RANKS_LABEL));
        for c in t.ranks.iter().flat_map(|r| &r.checks) {
            let warned = if c.status == Status::Warn {
                WARNING_SUFFIX
            } else {
                ""
            };
            let name = unique(&class, format!("{}{warned}", text(&c.id.to_string())));
            let mut case = rank_case(name, c);
            case.set_classname(class.as_str()).set_time(Duration::ZERO);
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    serialize(&report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Counts, Finding, SnapshotError, TargetVerdict};
    use crate::vocab::Unit;

    fn check(id: &str, status: Status, findings: Vec<Finding>) -> Check {
        Check {
            budget: Some(2),
            findings,
            ..Check::new(id.into(), status, Unit::Count, 3)
        }
    }

    /// A verdict with one check of each outcome and a snapshot that could
    /// not be read; names carry what XML and terminals must not see raw.
    fn verdict() -> Verdict {
        let over = Finding::OverBudget {
            limit: 2,
            current: 3,
            over: 1,
        };
        let device = DeviceVerdict {
            peak_phase: None,
            oom: Vec::new(),
            device: crate::vocab::Device::new(0),
            trace_complete: true,
            warnings: Vec::new(),
            checks: vec![
                Check {
                    config_line: Some(crate::budget::Loc {
                        file: "memgate.toml".into(),
                        line: 7,
                        col: 16,
                    }),
                    ..check("alloc-events", Status::Fail, vec![over.clone()])
                },
                check("trace-entries", Status::Warn, vec![over]),
                check(
                    "dynamic-peak",
                    Status::Skipped,
                    vec![Finding::NothingToCompare { current: 3 }],
                ),
            ],
            categories: Vec::new(),
            sites: Vec::new(),
            window: None,
            pools: Vec::new(),
        };
        let judged = SnapshotVerdict {
            name: "rank0 ]]> <b>&\u{1b}[31m\u{7}".into(),
            path: "rank0.pickle".into(),
            status: Status::Fail,
            baseline: None,
            error: None,
            devices: vec![device],
        };
        let unreadable = crate::compare::unreadable(
            "rank1".into(),
            "rank1.pickle".into(),
            None,
            SnapshotError::Unreadable("rank1.pickle: truncated at ]]> byte 3\u{0}".into()),
        );
        Verdict {
            schema_version: crate::compare::SCHEMA_VERSION,
            kind: "memgate-verdict",
            verdict: Status::Error,
            generated_at: 0,
            config: "memgate.toml".into(),
            tolerance: 5.0,
            noise_floor: 0,
            counts: Counts::default(),
            targets: vec![TargetVerdict::new("train".into(), vec![judged, unreadable])],
            waivers: Vec::new(),
        }
    }

    fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, tag: &str) -> Option<roxmltree::Node<'a, 'i>> {
        n.children().find(|c| c.has_tag_name(tag))
    }

    #[test]
    fn every_outcome_is_written_with_its_reason_and_the_xml_is_well_formed() {
        let xml = render(&verdict());
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let case = |name: &str, class_prefix: &str| {
            doc.descendants()
                .find(|n| {
                    n.attribute("name") == Some(name)
                        && n.attribute("classname")
                            .is_some_and(|c| c.starts_with(class_prefix))
                })
                .unwrap_or_else(|| panic!("no case {name}:\n{xml}"))
        };
        let failed = case("dev0.alloc-events", "train.rank0");
        let failure = child(failed, "failure").unwrap();
        assert_eq!(failure.attribute("type"), Some("memory-regression"));
        let message =
            "rank0 ]]> <b>&\\u{1b}[31m\\u{7} dev0 alloc-events: 3 is over its budget of 2 by 1";
        assert_eq!(failure.attribute("message"), Some(message));
        assert_eq!(failure.text(), Some(message));

        assert_eq!(failed.attribute("file"), Some("memgate.toml"));
        assert_eq!(failed.attribute("line"), Some("7"));

        let warned = case("dev0.trace-entries [warning]", "train.rank0");
        assert!(warned.attribute("file").is_none(), "no budget key, no file");
        assert!(child(warned, "failure").is_none());
        let out = child(warned, "system-out").unwrap().text().unwrap();
        assert!(out.starts_with("warning: rank0"), "{out}");

        let skipped = child(case("dev0.dynamic-peak", "train.rank0"), "skipped").unwrap();
        assert_eq!(
            skipped.attribute("message"),
            Some(
                "rank0 ]]> <b>&\\u{1b}[31m\\u{7} dev0 dynamic-peak: 3 (no budget and no baseline to compare with)"
            )
        );

        let error = child(case("load", "train.rank1"), "error").unwrap();
        assert_eq!(error.attribute("type"), Some("unreadable-snapshot"));
        assert_eq!(
            error.text(),
            Some("rank1: could not be judged: rank1.pickle: truncated at ]]> byte 3\\u{0}")
        );
    }

    #[test]
    fn the_suite_counts_each_outcome_and_the_time_stamp_is_the_verdicts() {
        let mut v = verdict();
        v.generated_at = 1_700_000_000;
        let xml = render(&v);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        let attr = |k: &str| suite.attribute(k).unwrap();
        assert_eq!(
            [
                attr("tests"),
                attr("failures"),
                attr("errors"),
                attr("skipped")
            ],
            ["4", "1", "1", "1"]
        );
        assert!(attr("timestamp").starts_with("2023-11-14T22:13:20"));
        assert!(!xml.contains('\u{1b}') && !xml.contains('\u{7}') && !xml.contains('\u{0}'));
        assert!(!xml.contains("file=\"rank"), "no case points at a snapshot");
    }

    #[test]
    fn a_name_with_a_newline_stays_on_one_line_in_every_field() {
        let mut v = verdict();
        v.targets[0].name = "train\n::error::forged\u{fffe}".into();
        let xml = render(&v);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        for n in doc.descendants() {
            for a in n.attributes() {
                assert!(!a.value().contains('\n'), "{}={:?}", a.name(), a.value());
            }
        }
        assert!(xml.contains("train\\n::error::forged"), "{xml}");
        assert!(!xml.lines().any(|l| l.starts_with("::error")), "{xml}");
    }

    #[test]
    fn a_gate_that_could_not_judge_writes_one_error_case_with_every_reason() {
        let reasons = [
            "memgate.toml:3:1: unknown key `x`".to_string(),
            "b\nc".into(),
        ];
        let xml = error_report(&reasons, 0);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 1);
        let error = child(cases[0], "error").unwrap();
        assert_eq!(
            error.attribute("message"),
            Some("memgate.toml:3:1: unknown key `x`; b\\nc")
        );
        assert_eq!(
            error.text(),
            Some("memgate.toml:3:1: unknown key `x`\nb\\nc")
        );
    }
}
