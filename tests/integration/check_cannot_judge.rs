//! When `check` cannot judge at all (bad budget file, nothing matched, an
//! unusable report path) it still writes what it can, so CI shows why the
//! job is red: JUnit `<error>`, a one-line Markdown report and step
//! summary, `verdict=error` in `GITHUB_OUTPUT`. The exit code stays 2.

use crate::common;

use common::{Workdir, CONFIG, MIB};

fn in_actions(w: &Workdir, reports: &[&str]) -> String {
    let out = w
        .check()
        .args(reports)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", w.path("step-summary.md"))
        .env("GITHUB_OUTPUT", w.path("github-output.txt"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).unwrap()
}

/// The one `<error>` case of the JUnit report, with its message.
fn junit_error(xml: &str) -> String {
    let doc = roxmltree::Document::parse(xml).expect("well-formed XML");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1, "{xml}");
    let error = cases[0]
        .children()
        .find(|n| n.has_tag_name("error"))
        .unwrap_or_else(|| panic!("no <error>:\n{xml}"));
    error.attribute("message").unwrap().to_string()
}

#[test]
fn a_bad_budget_file_still_writes_junit_markdown_step_summary_and_outputs_saying_why() {
    let w = Workdir::new(&CONFIG.replace("tolerance = \"5%\"", "tolerance = \"5%\"\nbogus = 1"));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let stdout = in_actions(
        &w,
        &[
            "--junit",
            "junit.xml",
            "--markdown",
            "report.md",
            "--json",
            "v.json",
        ],
    );
    let message = junit_error(&w.read("junit.xml"));
    assert!(message.contains("memgate.toml:3:1"), "{message}");
    assert!(message.contains("bogus"), "{message}");
    for f in ["report.md", "step-summary.md"] {
        let md = w.read(f);
        assert_eq!(md.lines().count(), 1, "{f}: {md}");
        assert!(
            md.starts_with("## memgate: 💥 error — could not judge: "),
            "{f}: {md}"
        );
        assert!(md.contains("bogus"), "{f}: {md}");
    }
    assert_eq!(
        w.read("github-output.txt"),
        "verdict=error\nregressions=0\nreport=report.md\n"
    );
    assert!(
        stdout.starts_with("::error title=memgate could not judge::memgate.toml:3:1"),
        "{stdout}"
    );
    assert!(!w.path("v.json").exists(), "no verdict, no verdict JSON");
}

#[test]
fn a_pattern_that_matched_no_snapshot_says_so_in_every_report() {
    let w = Workdir::new(CONFIG);
    in_actions(&w, &["--junit", "junit.xml", "--markdown", "report.md"]);
    let message = junit_error(&w.read("junit.xml"));
    assert!(message.contains("the pattern matches no file"), "{message}");
    assert!(w.read("report.md").contains("matches no file"));
    assert!(w.read("github-output.txt").starts_with("verdict=error\n"));
}

#[test]
fn a_target_with_nothing_to_judge_says_so_in_every_report() {
    let w = Workdir::new(&CONFIG.replace("snapshots = \"snaps/*.json\"", "snapshots = []"));
    in_actions(&w, &["--junit", "junit.xml", "--markdown", "report.md"]);
    let message = junit_error(&w.read("junit.xml"));
    assert!(
        message.starts_with("target train: no snapshot to judge"),
        "{message}"
    );
    assert!(w.read("step-summary.md").contains("no snapshot to judge"));
    assert!(w.read("github-output.txt").starts_with("verdict=error\n"));
}

#[test]
fn an_unusable_report_path_does_not_stop_the_other_reports() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    // A file where the report's directory would be created.
    std::fs::write(w.path("missing"), "").unwrap();
    in_actions(
        &w,
        &["--junit", "missing/junit.xml", "--markdown", "report.md"],
    );
    let md = w.read("report.md");
    assert!(md.contains("missing/junit.xml"), "{md}");
    assert!(md.contains("missing is not a directory"), "{md}");
    assert!(w.path("missing").is_file());
    assert!(w.read("step-summary.md").contains("missing/junit.xml"));
}

#[test]
fn a_report_path_that_is_an_input_is_never_written_even_to_say_why() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let before = w.read("snaps/rank0.json");
    in_actions(
        &w,
        &["--junit", "junit.xml", "--markdown", "snaps/rank0.json"],
    );
    assert_eq!(w.read("snaps/rank0.json"), before, "the snapshot is intact");
    let message = junit_error(&w.read("junit.xml"));
    assert!(message.contains("would overwrite the input"), "{message}");
    assert_eq!(
        w.read("github-output.txt"),
        "verdict=error\nregressions=0\nreport=\n"
    );
}

#[test]
fn two_reports_on_one_path_write_neither_but_the_step_summary_says_why() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    in_actions(&w, &["--junit", "same.txt", "--markdown", "same.txt"]);
    assert!(!w.path("same.txt").exists());
    assert!(w
        .read("step-summary.md")
        .contains("give each report its own path"));
}
