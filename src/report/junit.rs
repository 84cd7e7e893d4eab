//! JUnit XML: one `<testsuite>` per target, one `<testcase>` per
//! (snapshot, device, check), named without values so CI can track them.

use std::collections::HashSet;

use junit_report::{Duration, OffsetDateTime, Report, TestCase, TestSuite};

use super::finding::sentence;
use super::{case_label, sanitize, top_growth};
use crate::compare::{Status, Verdict};

/// Text for a CDATA body: `junit-report` writes it raw, so a `]]>` in a
/// frame name would end the section early; split it across two sections.
fn cdata(text: &str) -> String {
    sanitize(text).replace("]]>", "]]]]><![CDATA[>")
}

/// The JUnit document of a verdict.
pub fn render(v: &Verdict) -> String {
    let stamp =
        OffsetDateTime::from_unix_timestamp(v.generated_at).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let mut report = Report::new();
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
        let mut suite = TestSuite::new(&sanitize(&t.name));
        suite.set_timestamp(stamp);
        for s in &t.snapshots {
            let class = sanitize(&format!("{}.{}", t.name, s.name));
            if let Some(e) = &s.error {
                let line = sanitize(&format!("{}: could not be judged: {e}", s.name));
                let name = unique(&class, "load".into());
                let mut case = TestCase::error(&name, Duration::ZERO, "unreadable-snapshot", &line);
                case.set_classname(&class);
                case.set_filepath(&sanitize(&s.path));
                case.set_system_out(&cdata(&line));
                suite.add_testcase(case);
                continue;
            }
            for d in &s.devices {
                for c in &d.checks {
                    let name = unique(&class, sanitize(&format!("dev{}.{}", d.device, c.id)));
                    let line = sanitize(&format!("{} {}: {}", case_label(s, d), c.id, sentence(c)));
                    let mut case = match c.status {
                        Status::Fail => {
                            let mut case = TestCase::failure(
                                &name,
                                Duration::ZERO,
                                "memory-regression",
                                &line,
                            );
                            let mut body = line.clone();
                            let growth = top_growth(d, 5);
                            if !growth.is_empty() {
                                body.push_str("\n\nTop growing allocation sites:\n");
                                body.push_str(&growth.join("\n"));
                            }
                            case.set_system_out(&cdata(&body));
                            case
                        }
                        Status::Error => {
                            let mut case = TestCase::error(&name, Duration::ZERO, "error", &line);
                            case.set_system_out(&cdata(&line));
                            case
                        }
                        Status::Skipped => TestCase::skipped(&name),
                        Status::Warn => {
                            let mut case = TestCase::success(&name, Duration::ZERO);
                            case.set_system_out(&cdata(&format!("warning: {line}")));
                            case
                        }
                        Status::Pass => TestCase::success(&name, Duration::ZERO),
                    };
                    case.set_classname(&class);
                    case.set_filepath(&sanitize(&s.path));
                    suite.add_testcase(case);
                }
            }
        }
        report.add_testsuite(suite);
    }
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = report.write_xml(&mut buf);
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    text.push('\n');
    text
}
