//! Issue 11: a gate people can trust. Each test is a scenario that passed
//! silently, hung or lost a file before.

use crate::common;
use memgate::Device;

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
    let bin = common::memgate_path();
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

#[test]
fn a_target_with_an_empty_snapshot_list_is_an_error_not_a_pass() {
    let w = Workdir::new(&CONFIG.replace(r#"snapshots = "snaps/*.json""#, "snapshots = []"));
    w.check()
        .assert()
        .code(2)
        .stderr(contains("target train: no snapshot to judge"));
}

#[test]
fn a_snapshot_without_any_device_is_an_error_not_a_pass() {
    let w = Workdir::new(CONFIG);
    std::fs::write(
        w.path("snaps/rank0.json"),
        r#"{"segments": [], "device_traces": []}"#,
    )
    .unwrap();
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(2)
        .stderr(contains("holds no device"));
    let v: serde_json::Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    assert_eq!(v["verdict"], "error");
}

#[test]
fn a_device_the_snapshot_lacks_is_an_error_naming_what_it_holds() {
    let config = CONFIG.replace(
        "baseline = \"golden/\"\n",
        "baseline = \"golden/\"\ndevice = 0\n",
    );
    let w = Workdir::new(&config);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    // rank1's file holds only dev1: it must not drop out of the gate.
    let mut d = common::device(1, 900 * MIB, &common::sites(900 * MIB));
    d.device = Device::new(1);
    w.write_summary(
        "snaps/rank1.json",
        &common::summary("rank1.pickle", vec![d]),
    );
    w.check().assert().code(2).stderr(contains(
        "asks for dev0 (`device = 0`), but the snapshot holds only dev1",
    ));
}

#[test]
fn a_quoted_budget_without_a_unit_is_an_error_asking_for_one() {
    let w = Workdir::new(&CONFIG.replace(r#"overall-peak = "1 GiB""#, r#"overall-peak = "5""#));
    w.check()
        .arg("--validate")
        .assert()
        .code(2)
        .stderr(contains("\"5\" has no unit"));
}

// Unix permission bits and symlinks (src/platform has the Windows side).
#[cfg(unix)]
#[test]
fn a_double_star_over_a_symlink_loop_ends_and_each_file_is_judged_once() {
    let config = CONFIG.replace(
        r#"snapshots = "snaps/*.json""#,
        r#"snapshots = ["snaps/**/*.json", "snaps/rank0.json"]"#,
    );
    let w = Workdir::new(&config);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::os::unix::fs::symlink(w.path("snaps"), w.path("snaps/loop")).unwrap();
    w.check()
        .args(["--json", "verdict.json"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(0);
    let v: serde_json::Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let snaps = v["targets"][0]["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
}

// Unix file names are bytes; Windows names are UTF-16 and cannot hold this one.
#[cfg(unix)]
#[test]
fn a_file_name_that_is_not_utf8_is_an_error_not_dropped() {
    use std::os::unix::ffi::OsStrExt;
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let bad = w
        .path("snaps")
        .join(std::ffi::OsStr::from_bytes(b"rank\xff.json"));
    std::fs::copy(w.path("snaps/rank0.json"), bad).unwrap();
    w.check()
        .assert()
        .code(2)
        .stderr(contains("is not a UTF-8 name"));
}

#[test]
fn a_fifo_or_a_device_as_snapshot_is_refused_at_once_with_exit_2() {
    let w = Workdir::new(CONFIG);
    let fifo = w.path("snaps/rank0.pickle");
    common::mkfifo(&fifo);
    for target in [fifo.to_str().unwrap(), "/dev/zero"] {
        common::memgate()
            .args(["peak", target])
            .timeout(std::time::Duration::from_secs(5))
            .assert()
            .code(2)
            .stderr(contains("not a regular file"));
    }
}

#[test]
fn a_target_that_judges_no_check_is_an_error_not_a_pass() {
    let config = r#"[defaults]
figures = []

[[target]]
name = "train"
snapshots = "snaps/*.json"
"#;
    let w = Workdir::new(config);
    w.rank("rank0", None, 100 * MIB);
    w.check()
        .assert()
        .code(2)
        .stderr(contains("no check to judge"));
}

#[test]
fn summarize_refuses_to_write_a_summary_over_its_own_input() {
    let w = Workdir::new(CONFIG);
    std::fs::copy(common::fixture("main.json"), w.path("snaps/main.json")).unwrap();
    let before = std::fs::read(w.path("snaps/main.json")).unwrap();
    common::memgate()
        .current_dir(w.tmp.path())
        .args(["summarize", "snaps/main.json", "-o", "snaps"])
        .assert()
        .code(2)
        .stderr(contains("would overwrite the input"));
    assert_eq!(std::fs::read(w.path("snaps/main.json")).unwrap(), before);
}

#[test]
fn a_fifo_as_baseline_or_in_the_baseline_directory_is_refused_not_ignored() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", None, 100 * MIB);
    common::mkfifo(&w.path("golden/rank0.json"));
    w.check()
        .timeout(std::time::Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains("is a FIFO (named pipe), not a regular file"));
    w.check()
        .args(["--baseline", "golden/rank0.json"])
        .timeout(std::time::Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains("is a FIFO (named pipe), not a regular file"));
}
