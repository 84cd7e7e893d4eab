//! JUnit XML: one `<testsuite>` per target, one `<testcase>` per
//! (snapshot, device, check), named without values so CI can track them.
//! Written by `quick-junit`, which escapes text (no CDATA to break out of)
//! and can give every outcome its reason.

use std::collections::HashSet;
use std::time::Duration;

use chrono::DateTime;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::finding::sentence;
use super::{case_label, sanitize, top_growth};
use crate::compare::{Check, DeviceVerdict, SnapshotVerdict, Status, Verdict};

/// A failure or error with its type, one-line message and body.
fn non_success(kind: NonSuccessKind, ty: &str, message: &str, body: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status
        .set_type(ty)
        .set_message(message)
        .set_description(body);
    status
}

/// The outcome of one check; a warning passes but stays visible in the
/// case's output, where CI tools show it.
fn case(name: String, s: &SnapshotVerdict, d: &DeviceVerdict, c: &Check) -> TestCase {
    let line = sanitize(&format!("{} {}: {}", case_label(s, d), c.id, sentence(c)));
    let status = match c.status {
        Status::Fail => {
            let mut body = line.clone();
            let growth = top_growth(d, 5);
            if !growth.is_empty() {
                body.push_str("\n\nTop growing allocation sites:\n");
                body.push_str(&growth.join("\n"));
            }
            non_success(NonSuccessKind::Failure, "memory-regression", &line, &body)
        }
        Status::Error => non_success(NonSuccessKind::Error, "error", &line, &line),
        Status::Skipped => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(line.as_str());
            status
        }
        Status::Warn | Status::Pass => TestCaseStatus::success(),
    };
    let mut case = TestCase::new(name, status);
    if c.status == Status::Warn {
        case.set_system_out(format!("warning: {line}"));
    }
    case
}

/// The JUnit document of a verdict.
pub fn render(v: &Verdict) -> String {
    let stamp = DateTime::from_timestamp(v.generated_at, 0).unwrap_or_default();
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
        let mut suite = TestSuite::new(sanitize(&t.name));
        suite.set_timestamp(stamp).set_time(Duration::ZERO);
        for s in &t.snapshots {
            let class = sanitize(&format!("{}.{}", t.name, s.name));
            let mut cases = Vec::new();
            if let Some(e) = &s.error {
                let line = sanitize(&format!("{}: could not be judged: {e}", s.name));
                let status =
                    non_success(NonSuccessKind::Error, "unreadable-snapshot", &line, &line);
                cases.push(TestCase::new(unique(&class, "load".into()), status));
            }
            for d in &s.devices {
                for c in &d.checks {
                    let name = unique(&class, sanitize(&format!("dev{}.{}", d.device, c.id)));
                    cases.push(case(name, s, d, c));
                }
            }
            for mut case in cases {
                case.set_classname(class.as_str()).set_time(Duration::ZERO);
                case.extra
                    .insert("file".into(), sanitize(&s.path).as_str().into());
                suite.add_test_case(case);
            }
        }
        report.add_test_suite(suite);
    }
    // Serializing into memory fails only on a bug in the writer; the report
    // would then say so instead of being silently empty.
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit report could not be written: {e} -->\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Counts, Finding, TargetVerdict};
    use crate::vocab::Unit;

    fn check(id: &str, status: Status, findings: Vec<Finding>) -> Check {
        Check {
            id: id.into(),
            status,
            unit: Unit::Count,
            current: 3,
            baseline: None,
            budget: Some(2),
            tolerance: None,
            findings,
            config_line: None,
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
            device: 0,
            trace_complete: true,
            warnings: Vec::new(),
            checks: vec![
                check("alloc-events", Status::Fail, vec![over.clone()]),
                check("trace-entries", Status::Warn, vec![over]),
                check(
                    "dynamic-peak",
                    Status::Skipped,
                    vec![Finding::NothingToCompare { current: 3 }],
                ),
            ],
            categories: Vec::new(),
            sites: Vec::new(),
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
            "rank1.pickle: truncated at ]]> byte 3\u{0}".into(),
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
        let failure = child(case("dev0.alloc-events", "train.rank0"), "failure").unwrap();
        assert_eq!(failure.attribute("type"), Some("memory-regression"));
        let message = "rank0 ]]> <b>& dev0 alloc-events: 3 is over its budget of 2 by 1";
        assert_eq!(failure.attribute("message"), Some(message));
        assert_eq!(failure.text(), Some(message));

        let warned = case("dev0.trace-entries", "train.rank0");
        assert!(child(warned, "failure").is_none());
        let out = child(warned, "system-out").unwrap().text().unwrap();
        assert!(out.starts_with("warning: rank0"), "{out}");

        let skipped = child(case("dev0.dynamic-peak", "train.rank0"), "skipped").unwrap();
        assert_eq!(
            skipped.attribute("message"),
            Some("rank0 ]]> <b>& dev0 dynamic-peak: 3 (no budget and no baseline to compare with)")
        );

        let error = child(case("load", "train.rank1"), "error").unwrap();
        assert_eq!(error.attribute("type"), Some("unreadable-snapshot"));
        assert_eq!(
            error.text(),
            Some("rank1: could not be judged: rank1.pickle: truncated at ]]> byte 3")
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
    }
}
