//! The small traps of a first run: report directories are created, every
//! report written is named on stderr, `snapshots` and `diff` take
//! directories, and `diff` pairs the files of two runs by name.

use predicates::str::contains;

use crate::common;

use common::{Workdir, CONFIG, MIB};

#[test]
fn report_directories_are_created_and_every_report_is_named_on_stderr() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let out = w
        .check()
        .args(["--junit", "out/deep/j.xml", "--markdown", "out/r.md"])
        .args(["--json", "v.json", "--html", "pages/p.html"])
        .args(["--metrics", "out/m.txt"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    for p in [
        "out/deep/j.xml",
        "out/r.md",
        "v.json",
        "pages/p.html",
        "out/m.txt",
    ] {
        assert!(w.path(p).is_file(), "{p} not written");
        assert!(err.contains(&format!("wrote {p}\n")), "{p}: {err}");
    }
}

#[test]
fn a_snapshots_directory_in_the_budget_file_judges_the_files_in_it() {
    let w = Workdir::new(&CONFIG.replace("\"snaps/*.json\"", "\"snaps/\""));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.rank("rank1", Some(100 * MIB), 100 * MIB);
    let out = w.check().args(["--json", "v.json"]).assert().code(0);
    drop(out);
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    let names: Vec<&str> = v["targets"][0]["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rank0", "rank1"]);
    // On the command line too.
    w.check().arg("snaps").assert().code(0);
}

#[test]
fn diff_takes_directories_and_globs_and_pairs_the_files_by_name() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 150 * MIB);
    w.rank("rank1", Some(100 * MIB), 100 * MIB);
    let run = |a: &str, b: &str| {
        common::memgate()
            .current_dir(w.path(""))
            .args(["diff", a, b, "--format", "json"])
            .output()
            .unwrap()
    };
    for (a, b) in [("golden", "snaps"), ("golden/*.json", "snaps/*.json")] {
        let out = run(a, b);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("rank0") && text.contains("rank1"), "{text}");
    }
    // A name on one side only is an error naming it.
    std::fs::remove_file(w.path("snaps/rank1.json")).unwrap();
    common::memgate()
        .current_dir(w.path(""))
        .args(["diff", "golden", "snaps"])
        .assert()
        .code(2)
        .stderr(contains("rank1"));
}
