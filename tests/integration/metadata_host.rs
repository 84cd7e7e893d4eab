//! User metadata groups and pinned host memory (docs/figures.md#user-metadata-groups,
//! #pinned-host-memory), against the figures `tests/fixtures/gen/metadata_host.py`
//! computed while writing its snapshots (`metadata_host.json`), and on a real
//! snapshot's `user_metadata` (skipped loudly without ../shared).

use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, json_of, memgate, real_fixture};

/// What the generator expects of snapshot `name`.
fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture("metadata_host.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()[name].clone()
}

fn first_device(args: &[&str]) -> Value {
    json_of(args)["snapshots"][0]["devices"][0].clone()
}

/// The first device of `memgate profile --format json --group-by BY PATH`.
fn grouped(by: &str, path: &str) -> Value {
    first_device(&["profile", "--format", "json", "--group-by", by, path])
}

fn path(name: &str) -> String {
    fixture(&format!("{name}.pickle")).display().to_string()
}

/// `memgate check --config FILE` with `toml` written beside a copy of
/// `name`'s snapshot, in `dir`: the exit code and stdout.
fn check(dir: &Path, name: &str, toml: &str) -> (i32, String) {
    std::fs::copy(fixture(&format!("{name}.pickle")), dir.join("rank0.pickle")).unwrap();
    let config = dir.join("memgate.toml");
    let head = "[[target]]\nname = \"t\"\nsnapshots = [\"rank0.pickle\"]\n[target.budget]\n";
    std::fs::write(&config, format!("{head}{toml}")).unwrap();
    let out = memgate()
        .current_dir(dir)
        .args(["check", "--config", "memgate.toml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().unwrap(), stdout)
}

#[test]
fn group_by_user_metadata_sums_at_the_allocated_peak_equal_the_generators() {
    let want = expected("metadata");
    for by in ["user-metadata", "user-metadata.owner"] {
        let d = grouped(by, &path("metadata"));
        assert_eq!(d["figures"]["allocated-peak"], want["allocated-peak"]);
        assert_eq!(d["categories"]["rules"], by);
        assert_eq!(d["categories"]["at-allocated-peak"], want[by], "{by}");
        let sum: u64 = want[by]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            Some(sum),
            want["allocated-peak"].as_u64(),
            "{by}: the groups cover the peak"
        );
    }
}

#[test]
fn an_annotate_note_names_the_untagged_allocation_it_points_at() {
    let d = grouped("user-metadata", &path("metadata"));
    let groups = &d["categories"]["at-allocated-peak"];
    assert_eq!(groups[r#"{"owner":"vision","note":"kv-cache"}"#], 7 << 20);
    // The second note on it, and a note on a tagged allocation, name nothing.
    assert!(groups.get(r#"{"owner":"ignored"}"#).is_none());
    assert!(groups.get("ignored: it has its own").is_none());
}

#[test]
fn a_user_metadata_key_longer_than_64_bytes_is_refused_naming_the_limit() {
    let key = format!("user-metadata.{}", "k".repeat(65));
    let out = memgate()
        .args(["profile", "--group-by", &key, &path("metadata")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 to 64 bytes long"), "{stderr}");
}

#[test]
fn a_real_snapshot_without_metadata_puts_its_whole_peak_in_one_group() {
    let Some(p) = real_fixture(
        "wedsonlin_medium_1024_training.pickle",
        "user-metadata groups",
    ) else {
        return;
    };
    let d = grouped("user-metadata", p.to_str().unwrap());
    // The fixtures README: allocated-peak 24207167496; every entry's
    // `user_metadata` is empty.
    assert_eq!(
        d["categories"]["at-allocated-peak"],
        serde_json::json!({"N/A": 24_207_167_496u64})
    );
}

#[test]
fn the_host_figures_equal_the_generators() {
    for name in ["host", "host_only"] {
        let want = expected(name);
        let d = first_device(&["peak", "--format", "json", &path(name)]);
        let host = &d["host"];
        assert_eq!(
            host["allocated-peak"], want["host-allocated-peak"],
            "{name}"
        );
        assert_eq!(host["reserved-peak"], want["host-reserved-peak"], "{name}");
        assert_eq!(host["trace-entries"], want["host-trace-entries"], "{name}");
        assert_eq!(
            host["live-at-device-peak"], want["host-live-at-device-peak"],
            "{name}"
        );
        assert_eq!(host["only"].as_bool().unwrap_or(false), name == "host_only");
    }
    let d = first_device(&["peak", "--format", "json", &path("host")]);
    assert_eq!(
        d["figures"]["allocated-peak"],
        expected("host")["allocated-peak"]
    );
}

#[test]
fn a_host_peak_budget_fails_when_the_host_peak_is_over_and_passes_at_it() {
    let peak = expected("host")["host-allocated-peak"].as_u64().unwrap();
    let live = expected("host")["host-live-at-device-peak"]
        .as_u64()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let over = format!(
        "host-allocated-peak = {}\nallocated-peak = \"1 GiB\"\n",
        peak - 1
    );
    let (code, out) = check(dir.path(), "host", &over);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL t rank0 dev0 host-allocated-peak"),
        "{out}"
    );
    let at = format!("host-allocated-peak = {peak}\nhost-live-at-device-peak = {live}\n");
    let (code, out) = check(dir.path(), "host", &at);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_host_only_snapshot_is_judged_on_its_host_figures_and_init_agrees_with_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("host_only.pickle"), dir.path().join("rank0.pickle")).unwrap();
    let init = memgate()
        .current_dir(dir.path())
        .args(["init", "rank0.pickle"])
        .output()
        .unwrap();
    assert_eq!(
        init.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let toml = std::fs::read_to_string(dir.path().join("memgate.toml")).unwrap();
    assert!(toml.contains("host-allocated-peak = "), "{toml}");
    let out = memgate()
        .current_dir(dir.path())
        .args(["check", "--config", "memgate.toml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("host-allocated-peak 8 MiB"), "{stdout}");
    // Over its host budget, it fails by name.
    let peak = expected("host_only")["host-allocated-peak"]
        .as_u64()
        .unwrap();
    let (code, out) = check(
        dir.path(),
        "host_only",
        &format!("host-allocated-peak = {}\n", peak - 1),
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL t rank0 dev0 host-allocated-peak"),
        "{out}"
    );
}

#[test]
fn a_figure_budgeted_on_a_snapshot_that_lacks_it_cannot_be_judged() {
    // A device figure on a host-only snapshot; a host figure on one
    // without host memory.
    for (name, toml, why) in [
        (
            "host_only",
            "allocated-peak = \"1 GiB\"\n",
            "records no device, only pinned host memory",
        ),
        (
            "metadata",
            "host-allocated-peak = \"1 GiB\"\n",
            "records no pinned host memory",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (code, out) = check(dir.path(), name, toml);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(out.contains(why), "{name}: {out}");
    }
}

#[test]
fn a_category_rule_matches_user_metadata_as_well_as_frames() {
    // No frame says "vision" (every stack is `step` in train.py): the
    // allocations whose metadata does are the rule's.
    let want = expected("metadata")["user-metadata.owner"]["vision"].clone();
    let d = first_device(&[
        "profile",
        "--format",
        "json",
        "--categories",
        r#"{"vision": "vision", "train": "train\\.py"}"#,
        &path("metadata"),
    ]);
    let cats = &d["categories"]["at-allocated-peak"];
    assert_eq!(cats["vision"], want);
    // The frame rule takes the rest.
    let rest = expected("metadata")["allocated-peak"].as_u64().unwrap() - want.as_u64().unwrap();
    assert_eq!(cats["train"], rest);
}

#[test]
fn the_live_stacks_carry_their_allocations_metadata() {
    // Grouped by stack alone, as Mosaic groups them: each group says how
    // its bytes split by metadata.
    let d = first_device(&[
        "peak",
        "--format",
        "json",
        "--top",
        "100",
        &path("metadata"),
    ]);
    let mut by_meta = serde_json::Map::new();
    for g in d["stacks-at-peak"].as_array().unwrap() {
        for (name, bytes) in g["user-metadata"].as_object().unwrap() {
            let sum = by_meta.get(name).and_then(Value::as_u64).unwrap_or(0);
            by_meta.insert(name.clone(), (sum + bytes.as_u64().unwrap()).into());
        }
    }
    assert_eq!(
        Value::Object(by_meta),
        expected("metadata")["user-metadata"]
    );
    let text = memgate()
        .args(["peak", &path("metadata")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("user metadata: {\"owner\":\"vision\",\"note\":\"kv-cache\"} (7 MiB)"),
        "{text}"
    );
}

#[test]
fn host_segments_without_an_address_and_a_size_are_left_out_with_a_warning_never_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, segments: Value| {
        let snap = serde_json::json!({
            "segments": [],
            "device_traces": [],
            "host_segments": segments,
            "host_traces": [
                {"action": "alloc", "addr": 16384, "size": 3000, "stream": 0},
                {"action": "free_completed", "addr": 16384, "size": 3000, "stream": 0},
            ],
        });
        let path = dir.path().join(name);
        std::fs::write(&path, snap.to_string()).unwrap();
        path
    };
    let path = write(
        "missing.json",
        serde_json::json!([
            {"address": 4096, "size": 8192, "allocated": true, "frames": []},
            {"size": 1u64 << 40},
            {"address": 8192},
            7,
        ]),
    );
    let text = memgate()
        .args(["peak", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("warning: 3 `host_segments` items have no integer"),
        "{text}"
    );
    // The kept segment is live from the start (8192 B); the trace adds 3000.
    let v = json_of(&["peak", "--format", "json", path.to_str().unwrap()]);
    let host = &v["snapshots"][0]["devices"][0]["host"];
    assert_eq!(host["allocated-peak"], 8192 + 3000);
    assert_eq!(host["reserved-peak"], 8192);
    assert_eq!(host["only"], true);
    // A size of the wrong type is refused, naming the file and the item.
    let path = write(
        "typed.json",
        serde_json::json!([{"address": "4096", "size": 1}]),
    );
    let out = memgate()
        .args(["peak", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("typed.json") && stderr.contains("host_segments[0] `address`"),
        "{stderr}"
    );
}
