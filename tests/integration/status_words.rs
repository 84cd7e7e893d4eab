//! Status words that mean one thing: a budget-only target whose checks pass
//! is `pass` in every report, its unbudgeted figures `reported` (never
//! `skipped`), and the Markdown hides rows that say nothing, with a count.

use crate::common;

use common::{Workdir, MIB};

/// One target with budgets and no baseline at all.
const BUDGET_ONLY: &str = r#"[[target]]
name = "train"
snapshots = "snaps/*.json"

[target.budget]
allocated-peak = "1 GiB"
"#;

#[test]
fn a_budget_only_target_that_passes_is_pass_in_every_format() {
    let w = Workdir::new(BUDGET_ONLY);
    w.rank("rank0", None, 100 * MIB);
    let out = w
        .check()
        .args(["--json", "v.json", "--junit", "j.xml", "--markdown", "r.md"])
        .args(["--html", "p.html"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains("SKIP"), "{stdout}");
    assert!(
        stdout.contains("memgate: pass: 0 failed, 0 warned, 2 passed"),
        "{stdout}"
    );

    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["verdict"], "pass");
    assert_eq!(v["targets"][0]["status"], "pass", "{v:#}");
    assert_eq!(v["targets"][0]["snapshots"][0]["status"], "pass");
    assert_eq!(v["counts"]["skipped"], 0);
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap();
    for c in checks {
        let judged = c["id"] == "allocated-peak" || c["id"] == "oom-events";
        let want = if judged { "pass" } else { "reported" };
        assert_eq!(c["status"], want, "{c}");
    }
    let reported = checks.iter().filter(|c| c["status"] == "reported").count();
    assert!(reported > 0);
    assert_eq!(v["counts"]["reported"], reported);

    let md = w.read("r.md");
    assert!(md.contains("### ✅ pass `train`"), "{md}");
    assert!(!md.contains("skipped"), "{md}");
    assert!(
        md.contains(&format!(
            "_{reported} figures with neither budget nor baseline are reported"
        )),
        "{md}"
    );
    assert!(
        !md.contains("ℹ️ reported |"),
        "reported rows are not listed: {md}"
    );

    let html = w.read("p.html");
    assert!(html.contains("<section class=\"case pass\""), "{html}");
    assert!(!html.contains("SKIPPED"));

    let junit = w.read("j.xml");
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    assert_eq!(
        (count("skipped"), count("failure"), count("error")),
        (0, 0, 0),
        "{junit}"
    );
    assert_eq!(count("testcase"), checks.len());
}

#[test]
fn the_markdown_of_the_bundled_regressed_example_has_no_zero_byte_rows() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("r.md");
    common::memgate_at_root()
        .args([
            "check",
            "--config",
            "examples/memgate-regressed.toml",
            "--markdown",
        ])
        .arg(&md)
        .assert()
        .code(1);
    let md = std::fs::read_to_string(md).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| rank")).collect();
    assert!(!rows.is_empty(), "{md}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let zero = |c: &str| c == "0 B" || c == "0" || c.starts_with("0 B (");
        // Both tables have the baseline and the current value in their
        // third and fourth columns: both zero is a row that says nothing.
        assert!(!(zero(cells[3]) && zero(cells[4])), "{row}");
    }
    assert!(md.contains("zero-byte category rows hidden._"), "{md}");
    assert!(
        md.contains("passing checks at zero (current and baseline 0) hidden._"),
        "{md}"
    );
}

#[test]
fn two_snapshots_with_one_key_are_judged_once_as_repeated_runs_of_that_name() {
    let w = Workdir::new(&BUDGET_ONLY.replace("snaps/*.json", "snaps/*/*.json"));
    for (dir, peak) in [("a", MIB), ("b", 3 * MIB)] {
        std::fs::create_dir(w.path(&format!("snaps/{dir}"))).unwrap();
        let s = common::summary(
            "rank0.pickle",
            vec![common::device(0, peak, &common::sites(peak))],
        );
        w.write_summary(&format!("snaps/{dir}/rank0.json"), &s);
    }
    w.check().args(["--json", "v.json"]).assert().code(0);
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    let snapshots = v["targets"][0]["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{v}");
    assert_eq!(snapshots[0]["name"], "rank0");
    let c = &snapshots[0]["devices"][0]["checks"][0];
    let repeats = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "repeats")
        .unwrap();
    assert_eq!(repeats["runs"], 2);
    assert!(!w.read("v.json").contains("rank0#2"));
}
