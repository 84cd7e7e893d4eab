//! The loader against independent counts: the generator's expectations for
//! the committed synthetic fixtures, and CPython's `pickle.load` reading of
//! the shared real and format fixtures (skipped, loudly, without ../shared).

use crate::common::memgate;
use std::path::{Path, PathBuf};

use memgate::document::SnapshotInventory;
use memgate::snapshot;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn synthetic() -> PathBuf {
    root().join("tests/fixtures/synthetic")
}

fn shared() -> Option<PathBuf> {
    let p = root().join("../shared/fixtures");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("SKIPPED: ../shared/fixtures not found; real-snapshot conformance not checked");
        None
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// `inspect`'s JSON object of one snapshot.
fn inspect_json(path: &Path, snap: &snapshot::Snapshot) -> Value {
    serde_json::to_value(SnapshotInventory::of(path, snap)).unwrap()
}

/// Compare the inspect fields that an expectation object carries.
fn assert_counts(file: &str, got: &Value, want: &Value) {
    for key in [
        "shape",
        "segments",
        "blocks",
        "unique-frames",
        "unique-stacks",
    ] {
        assert_eq!(got[key], want[key], "{file}: {key}");
    }
    if let Some(p) = want.get("pickle-protocol").filter(|p| !p.is_null()) {
        assert_eq!(&got["pickle-protocol"], p, "{file}: pickle-protocol");
    }
    let gd = got["devices"].as_array().unwrap();
    let wd = want["devices"].as_array().unwrap();
    assert_eq!(gd.len(), wd.len(), "{file}: number of devices");
    for (g, w) in gd.iter().zip(wd) {
        for key in ["device", "segments", "trace-entries", "actions"] {
            assert_eq!(g[key], w[key], "{file}: device {}: {key}", w["device"]);
        }
    }
}

#[test]
fn every_synthetic_fixture_has_the_counts_its_generator_expects() {
    let expected = read_json(&synthetic().join("expected.json"));
    let files = expected.as_object().unwrap();
    assert!(files.len() >= 20, "the generator writes every shape");
    for (file, want) in files {
        let path = synthetic().join(file);
        let snap = snapshot::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_counts(file, &inspect_json(&path, &snap), want);
    }
}

#[test]
fn every_shared_fixture_reads_like_python_reads_it() {
    let Some(shared) = shared() else { return };
    let expected = read_json(&root().join("tests/fixtures/shared-counts.json"));
    let mut checked = 0;
    for (file, want) in expected.as_object().unwrap() {
        let path = shared.join(file);
        let result = snapshot::load(&path);
        if want.get("python-error").is_some() {
            assert!(result.is_err(), "{file}: Python fails on it, so must we");
            continue;
        }
        let snap = result.unwrap_or_else(|e| panic!("{e}"));
        assert_counts(file, &inspect_json(&path, &snap), want);
        checked += 1;
    }
    assert!(checked >= 14, "checked {checked} files");
}

#[test]
fn the_real_fixtures_have_the_readme_frame_and_stack_counts() {
    let Some(shared) = shared() else { return };
    let table = [
        ("wedsonlin_medium_1024_training.pickle", 538, 189),
        ("cranberrii_ftcourse.pickle", 551, 153),
        ("muduard_layoutediting_list.pkl", 34, 12),
        ("zidongliu_decomfl.pickle", 137, 206),
        ("select_n_04d383c.pickle", 415, 116),
        ("select_n_1f2f548.pickle", 348, 97),
        ("select_n_dec166a.pickle", 0, 1),
    ];
    for (file, frames, stacks) in table {
        let snap = snapshot::load(&shared.join("real").join(file)).unwrap();
        assert_eq!(snap.unique_frames_and_stacks(), (frames, stacks), "{file}");
    }
}

#[test]
fn the_same_snapshot_in_protocols_2_to_5_json_and_jit_form_is_the_same_model() {
    let base = snapshot::load(&synthetic().join("main_proto4.pickle")).unwrap();
    for file in [
        "main_proto2.pickle",
        "main_proto3.pickle",
        "main_proto5.pickle",
        "main.json",
        "main_jit.pickle",
    ] {
        let other = snapshot::load(&synthetic().join(file)).unwrap();
        assert_eq!(other.segments, base.segments, "{file}");
        for d in base.devices() {
            assert_eq!(other.trace(d).len(), base.trace(d).len(), "{file}");
            for (a, b) in other.trace(d).iter().zip(base.trace(d)) {
                assert_eq!(
                    (a.action(), a.addr, a.size, a.time_us),
                    (b.action(), b.addr, b.size, b.time_us),
                    "{file}"
                );
                let fa: Vec<String> = other
                    .stack(a.stack)
                    .iter()
                    .map(|f| other.frame_label(*f))
                    .collect();
                let fb: Vec<String> = base
                    .stack(b.stack)
                    .iter()
                    .map(|f| base.frame_label(*f))
                    .collect();
                assert_eq!(fa, fb, "{file}");
            }
        }
    }
}

#[test]
fn every_prefix_of_a_small_snapshot_is_an_error_never_a_panic() {
    let bytes = std::fs::read(synthetic().join("v1_13_list.pickle")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pickle");
    for n in 0..bytes.len() {
        std::fs::write(&path, &bytes[..n]).unwrap();
        let err = snapshot::load(&path).expect_err("a prefix must not load");
        assert!(
            err.to_string().starts_with(&path.display().to_string()),
            "{err}"
        );
    }
}

#[test]
fn inspect_json_has_the_spec_keys() {
    let out = memgate()
        .args(["inspect", "--format", "json"])
        .arg(synthetic().join("v2_1_multidevice.pickle"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    let s = &v["snapshots"][0];
    for key in [
        "pickle-protocol",
        "shape",
        "segments",
        "blocks",
        "unique-frames",
        "unique-stacks",
    ] {
        assert!(!s[key].is_null(), "{key}");
    }
    for d in s["devices"].as_array().unwrap() {
        assert!(d["device"].is_u64() && d["trace-entries"].is_u64() && d["actions"].is_object());
    }
}

#[test]
fn inspect_accepts_quoted_globs() {
    let pattern = synthetic().join("main_proto*.pickle");
    let out = memgate()
        .args(["inspect", "--format", "json"])
        .arg(pattern)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["snapshots"].as_array().unwrap().len(), 4);
}

/// One `error: <path>: …` line and exit code 2.
fn assert_refused(path: &Path, needle: &str) {
    let out = memgate().arg("inspect").arg(path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", path.display());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("error: {}: ", path.display())),
        "{err}"
    );
    assert!(err.contains(needle), "{err}");
}

#[test]
fn unreadable_inputs_exit_2_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pickle");
    std::fs::write(&empty, b"").unwrap();
    assert_refused(&empty, "empty");
    let zip = dir.path().join("model.pt");
    std::fs::write(&zip, b"PK\x03\x04rest of a torch.save archive").unwrap();
    assert_refused(&zip, "torch.save");
    // A directory stands for its files; one with none is refused by name.
    let none = dir.path().join("no-files");
    std::fs::create_dir(&none).unwrap();
    assert_refused(&none, "directory");
    assert_refused(&dir.path().join("missing.pickle"), "no such file");
    let cut = dir.path().join("cut.pickle");
    let bytes = std::fs::read(synthetic().join("main_proto4.pickle")).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(&cut, "byte offset");
}

#[test]
fn a_bad_file_among_good_ones_still_prints_the_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pickle");
    std::fs::write(&empty, b"").unwrap();
    let out = memgate()
        .args(["inspect", "--format", "json"])
        .arg(synthetic().join("rank0.pickle"))
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["snapshots"].as_array().unwrap().len(), 1);
}
