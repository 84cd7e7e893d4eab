//! `memgate check --metrics`: GitLab's metrics report, written atomically in
//! every outcome (what was measured when a snapshot could not be read, the
//! verdict alone when nothing could be judged).

use crate::common;
use crate::common::memgate_at_root as memgate;

use std::path::PathBuf;

use common::{Workdir, CONFIG, MIB};

/// Sample lines (no `#` metadata, no `# EOF`).
fn samples(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

fn example_metrics(config: &str, code: i32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("metrics.txt");
    memgate()
        .args(["check", "--config", config, "--metrics"])
        .arg(&file)
        .assert()
        .code(code);
    std::fs::read_to_string(&file).unwrap()
}

#[test]
fn the_bundled_examples_metrics_report_is_stable() {
    let text = example_metrics("examples/memgate.toml", 0);
    insta::assert_snapshot!("metrics_bundled_example", text);
}

#[test]
fn every_sample_of_the_regressed_example_has_a_unique_key_and_the_verdict_is_fail() {
    let text = example_metrics("examples/memgate-regressed.toml", 1);
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains("memgate_verdict{memgate_verdict=\"fail\"} 1\n"));
    let lines = samples(&text);
    let keys: std::collections::HashSet<&str> = lines
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().0)
        .collect();
    assert_eq!(keys.len(), lines.len(), "{text}");
    // Both ranks, current and baseline of the budgeted figure, and its limit.
    for family in [
        "memgate_figure_bytes",
        "memgate_baseline_bytes",
        "memgate_limit_bytes",
    ] {
        for (snapshot, device) in [("rank0", 0), ("rank1", 1)] {
            let key = format!(
                "{family}{{target=\"toy-gpt-2rank\",snapshot=\"{snapshot}\",device=\"{device}\",figure=\"allocated-peak\"}} "
            );
            assert!(text.contains(&key), "no {key}in\n{text}");
        }
    }
}

#[test]
fn a_snapshot_that_cannot_be_read_leaves_the_others_figures_and_an_error_verdict() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(w.path("snaps/rank1.json"), b"{ not json").unwrap();
    w.check().args(["--metrics", "m.txt"]).assert().code(2);
    let text = w.read("m.txt");
    assert!(
        text.contains("memgate_verdict{memgate_verdict=\"error\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "memgate_figure_bytes{target=\"train\",snapshot=\"rank0\",device=\"0\",figure=\"overall-peak\"} "
        ),
        "{text}"
    );
    assert!(!text.contains("snapshot=\"rank1\""), "{text}");
}

#[test]
fn a_gate_that_cannot_judge_replaces_an_old_report_with_the_error_verdict_alone() {
    let w = Workdir::new("[defaults]\nunknown-key = 1\n");
    std::fs::write(
        w.path("m.txt"),
        "memgate_verdict{memgate_verdict=\"pass\"} 1\n",
    )
    .unwrap();
    w.check().args(["--metrics", "m.txt"]).assert().code(2);
    let text = w.read("m.txt");
    assert_eq!(
        samples(&text),
        [
            "memgate_verdict{memgate_verdict=\"pass\"} 0",
            "memgate_verdict{memgate_verdict=\"warn\"} 0",
            "memgate_verdict{memgate_verdict=\"fail\"} 0",
            "memgate_verdict{memgate_verdict=\"error\"} 1",
        ]
    );
    assert!(text.ends_with("# EOF\n"));
    let names: Vec<_> = std::fs::read_dir(w.tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[test]
fn the_metrics_report_may_not_overwrite_an_input_or_share_a_path_with_another_report() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let before = w.read("snaps/rank0.json");
    w.check()
        .args(["--metrics", "snaps/rank0.json"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--metrics"));
    assert_eq!(w.read("snaps/rank0.json"), before);
    w.check()
        .args(["--metrics", "same.txt", "--junit", "same.txt"])
        .assert()
        .code(2);
    assert!(!w.path("same.txt").exists());
}
