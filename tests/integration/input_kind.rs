//! Each input's kind (snapshot or memgate summary) is decided once, from
//! its content: a summary is known whatever its key order, a snapshot JSON
//! is never taken for one, and errors still name the file.

use crate::common;
use memgate::Device;

use common::{device, fixture, sites, summary, Workdir, CONFIG, MIB};
use memgate::analysis::RuleSet;
use memgate::baseline::{self, Summary};
use memgate::input::{self, Input};
use predicates::prelude::*;
use predicates::str::contains;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The value with every object's keys sorted, as `jq -S` writes it.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Write `s` as `jq -S` would; its `kind` then comes after the devices.
fn write_sorted(w: &Workdir, rel: &str, s: &Summary) {
    let text = serde_json::to_string_pretty(&sorted(serde_json::to_value(s).unwrap())).unwrap();
    let kind_at = text.find("\"kind\"").unwrap();
    assert!(kind_at > text.find("\"devices\"").unwrap() && kind_at > 512);
    std::fs::write(w.path(rel), text).unwrap();
}

/// Sites enough that a summary's devices fill more than its first 512 bytes.
fn many_sites(peak: u64) -> Vec<(&'static str, u64)> {
    let names = ["a (x.py)", "b (x.py)", "c (x.py)", "d (x.py)", "e (x.py)"];
    let mut v = sites(peak);
    v.extend(names.iter().map(|n| (*n, MIB)));
    v
}

fn rank_summary(peak: u64) -> Summary {
    summary("rank0.pickle", vec![device(0, peak, &many_sites(peak))])
}

#[test]
fn a_summary_reordered_like_jq_s_is_accepted_as_a_baseline_with_the_same_verdict() {
    let plain = Workdir::new(CONFIG);
    plain.write_summary("snaps/rank0.json", &rank_summary(140 * MIB));
    plain.write_summary("golden/rank0.json", &rank_summary(100 * MIB));
    let reordered = Workdir::new(CONFIG);
    write_sorted(&reordered, "snaps/rank0.json", &rank_summary(140 * MIB));
    write_sorted(&reordered, "golden/rank0.json", &rank_summary(100 * MIB));

    let want = plain.check().assert().code(1).get_output().clone();
    let got = reordered.check().assert().code(1).get_output().clone();
    assert_eq!(
        String::from_utf8_lossy(&got.stdout),
        String::from_utf8_lossy(&want.stdout)
    );
    assert!(String::from_utf8_lossy(&got.stdout).contains("overall-, dynamic-, allocated-peak"));
    assert!(matches!(
        input::read(&reordered.path("golden/rank0.json")).unwrap(),
        Input::Summary(_)
    ));
    let read = baseline::read_summary(&reordered.path("golden/rank0.json")).unwrap();
    assert_eq!(read, rank_summary(100 * MIB));
}

#[test]
fn diff_reads_a_reordered_summary_as_a_summary() {
    let w = Workdir::new(CONFIG);
    write_sorted(&w, "golden/rank0.json", &rank_summary(100 * MIB));
    w.write_summary("snaps/rank0.json", &rank_summary(112 * MIB));
    common::memgate()
        .current_dir(w.path(""))
        .args(["diff", "golden/rank0.json", "snaps/rank0.json"])
        .assert()
        .success()
        .stdout(contains("+12 MiB"));
}

/// A JSON snapshot whose first bytes mention the summary kind and a
/// `schema_version`, as a frame's file and function may.
const SNAPSHOT_NAMING_SUMMARY: &str = r#"{"device_traces": [[
  {"action": "alloc", "addr": 1024, "size": 4096, "stream": 0,
   "frames": [{"filename": "memgate-summary.py", "name": "schema_version", "line": 1}]}
]], "segments": []}"#;

#[test]
fn a_snapshot_json_is_never_taken_for_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    std::fs::write(&path, SNAPSHOT_NAMING_SUMMARY).unwrap();
    match input::read(&path).unwrap() {
        Input::Snapshot(s) => assert_eq!(s.trace(Device::new(0)).len(), 1),
        Input::Summary(_) => panic!("a snapshot read as a summary"),
    }
    common::memgate()
        .args(["diff"])
        .arg(&path)
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("dynamic-peak"));
}

#[test]
fn an_input_that_is_neither_names_the_file_in_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let cases = [
        (bad("broken.json", "{\"kind\": "), "invalid JSON"),
        (
            bad(
                "verdict.json",
                r#"{"kind": "memgate-verdict", "schema_version": 1}"#,
            ),
            "not a memgate summary",
        ),
        (
            bad(
                "future.json",
                r#"{"schema_version": 9, "kind": "memgate-summary"}"#,
            ),
            "summary schema_version 9",
        ),
        (
            bad("nokind.json", r#"{"schema_version": 1}"#),
            "not a memgate summary",
        ),
        (dir.path().join("missing.json"), "no such file"),
    ];
    for (path, what) in cases {
        let e = input::read(&path).unwrap_err().to_string();
        let name = path.display().to_string();
        assert!(e.starts_with(&format!("{name}: ")), "{e}");
        assert!(e.contains(what), "{e}");
        common::memgate()
            .arg("diff")
            .arg(&path)
            .arg(fixture("npu.pickle"))
            .assert()
            .code(2)
            .stderr(contains(name.as_str()).and(contains(what)));
    }
}

#[test]
fn the_summary_digest_covers_bytes_after_the_pickles_stop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trailing.pickle");
    let mut bytes = std::fs::read(fixture("npu.pickle")).unwrap();
    bytes.extend_from_slice(&[0u8; 3000]);
    std::fs::write(&path, &bytes).unwrap();
    let s = memgate::commands::summarize::summarize_file(&path, &RuleSet::builtin_default(), 5)
        .unwrap();
    let want: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(s.provenance.sha256, want);
    assert_eq!(s.provenance.size, bytes.len() as u64);
}
