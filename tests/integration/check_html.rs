//! `check --html`: one page of the whole gate run, failures first, each
//! device's current timeline with the baseline's drawn over it when the
//! baseline is a snapshot, and the Markdown report linking to the page.

use crate::common;

use std::path::Path;

use common::page_data;

fn examples() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
}

#[test]
fn the_page_puts_failures_first_and_draws_each_snapshot_baseline_under_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let (page, md) = (dir.path().join("run.html"), dir.path().join("run.md"));
    common::memgate()
        .current_dir(examples())
        .args(["check", "--config", "memgate-regressed.toml"])
        .args(["--baseline", "snapshots/", "--html"])
        .arg(&page)
        .arg("--markdown")
        .arg(&md)
        .assert()
        .code(1);
    let html = std::fs::read_to_string(&page).unwrap();
    let data = page_data(&html);
    let devices = data["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2, "one chart per rank's device");
    for d in devices {
        let over = &d["baseline"];
        let snap = d["snapshot"].as_str().unwrap();
        let want = snap.replace("snapshots-regressed/", "snapshots/");
        assert_eq!(over["snapshot"], want.as_str(), "{snap}");
        assert!(over["x"].as_array().unwrap().len() > 1);
    }
    // Cases in verdict order, worst first: every FAIL before any PASS.
    let statuses: Vec<&str> = html
        .match_indices("<section class=\"case ")
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert!(statuses.first() == Some(&"fail"), "{statuses:?}");
    let mut sorted = statuses.clone();
    sorted.sort_by_key(|s| {
        ["error", "fail", "warn", "skipped", "pass", "reported"]
            .iter()
            .position(|x| x == s)
    });
    assert_eq!(statuses, sorted);
    assert!(html.contains("<caption>Checks</caption>"));
    let md = std::fs::read_to_string(&md).unwrap();
    // Beside the report: linked by its name.
    let link = "Interactive page of this run: [run.html](<run.html>)";
    assert!(md.contains(link), "{md}");
}

/// `check` on the regressed example from `cwd`, writing the Markdown
/// report and the page where given; the report's text.
fn linked(cwd: &Path, md: &str, page: &str) -> String {
    common::memgate()
        .current_dir(cwd)
        .arg("check")
        .arg("--config")
        .arg(examples().join("memgate-regressed.toml"))
        .args(["--markdown", md, "--html", page])
        .assert()
        .code(1);
    std::fs::read_to_string(cwd.join(md)).unwrap()
}

#[test]
fn the_markdown_report_links_the_page_from_its_own_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reports/md")).unwrap();
    let md = linked(dir.path(), "reports/memgate.md", "reports/memgate.html");
    assert!(md.contains("[memgate.html](<memgate.html>)"), "{md}");
    assert!(!md.contains("reports/memgate.html"), "{md}");
    let md = linked(dir.path(), "reports/md/memgate.md", "./page.html");
    assert!(md.contains("[../../page.html](<../../page.html>)"), "{md}");
    // The report on stdout has no folder: the page as given.
    let out = common::memgate()
        .current_dir(dir.path())
        .arg("check")
        .arg("--config")
        .arg(examples().join("memgate-regressed.toml"))
        .args(["--markdown", "-", "--html", "reports/p.html"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[reports/p.html](<reports/p.html>)"),
        "{text}"
    );
}

#[test]
fn a_gate_that_cannot_judge_still_writes_a_page_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memgate.toml");
    std::fs::write(
        &config,
        "[[target]]\nname = \"t\"\nsnapshots = \"<b>x</b>/*.pickle\"\n",
    )
    .unwrap();
    let page = dir.path().join("run.html");
    common::memgate()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .arg("--html")
        .arg(&page)
        .assert()
        .code(2);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("the gate could not judge"), "{html}");
    // The reason names the pattern, escaped.
    assert!(html.contains("&lt;b&gt;x&lt;/b&gt;/*.pickle"), "{html}");
    assert!(!html.contains("<b>x</b>"), "{html}");
    assert!(html.contains("Content-Security-Policy"));
    assert_eq!(page_data(&html)["devices"], serde_json::json!([]));
}

#[test]
fn the_page_may_not_replace_an_input() {
    let config = examples().join("memgate.toml");
    let before = std::fs::read(&config).unwrap();
    common::memgate()
        .current_dir(examples())
        .args([
            "check",
            "--config",
            "memgate.toml",
            "--html",
            "memgate.toml",
        ])
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read(&config).unwrap(),
        before,
        "the input is untouched"
    );
}
