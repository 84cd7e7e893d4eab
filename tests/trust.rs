//! Issue 11: a gate people can trust. Each test is a scenario that passed
//! silently, hung or lost a file before.

mod common;

use common::{Workdir, CONFIG, MIB};
use predicates::str::contains;

#[test]
fn a_report_path_that_is_an_input_is_refused_before_anything_is_written() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let golden = w.read("golden/rank0.json");
    w.check()
        .args(["--json", "golden/rank0.json"])
        .assert()
        .code(2)
        .stderr(contains("would overwrite the input"));
    assert_eq!(
        w.read("golden/rank0.json"),
        golden,
        "the golden was changed"
    );
    w.check()
        .args(["--markdown", "memgate.toml"])
        .assert()
        .code(2)
        .stderr(contains("would overwrite the input"));
}

#[test]
fn two_reports_on_one_path_are_refused() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check()
        .args(["--json", "out.txt", "--markdown", "./out.txt"])
        .assert()
        .code(2)
        .stderr(contains("--json out.txt is also the --markdown file"));
    assert!(!w.path("out.txt").exists());
}

#[test]
fn a_report_sent_to_a_closed_stdout_is_an_error_not_a_silent_loss() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let bin = assert_cmd::cargo::cargo_bin("memgate");
    // `>&-`: the shell closes descriptor 1 before memgate starts.
    let status = std::process::Command::new("sh")
        .current_dir(w.tmp.path())
        .arg("-c")
        .arg(format!("'{}' check --json - >&- 2>err.txt", bin.display()))
        .env("SOURCE_DATE_EPOCH", common::EPOCH)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(w.read("err.txt").contains("stdout is closed"));
}

#[test]
fn a_report_replaces_the_previous_one_whole() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(w.path("verdict.json"), "x".repeat(1 << 20)).unwrap();
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let v: serde_json::Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    assert_eq!(v["verdict"], "pass");
    let left: Vec<_> = std::fs::read_dir(w.tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}
