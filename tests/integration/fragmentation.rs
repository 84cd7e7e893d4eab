//! The fragmentation figures and each OOM's cached free bytes, largest free
//! block and cause (docs/figures.md#fragmentation, #oom-cause) against the
//! independent replay `tests/fixtures/gen/fragmentation.py`: its output for
//! the synthetic fixtures (`synthetic/fragmentation.json`, including the
//! three OOMs it generates) and for the real snapshots of `../shared`
//! (`real-fragmentation.json`; skipped, loudly, when `../shared` is absent).

use std::path::{Path, PathBuf};

use memgate::analysis::{analyze, DeviceReport, Figure, OomCause, RuleSet};
use memgate::snapshot;
use serde_json::Value;

use crate::common::{json_of, real_fixture};

const FIGURES: [Figure; 4] = [
    Figure::CachedFreeAtReservedPeak,
    Figure::SegmentAllocs,
    Figure::SegmentFrees,
    Figure::SegmentAllocsWithFreeCache,
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected(file: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(fixtures().join(file)).unwrap();
    let v: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    v.into_iter().collect()
}

/// Every device of `file` (under `dir`) against the replay's `devices`.
fn agrees(dir: &Path, file: &str, devices: &Value) {
    let snap = snapshot::load(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let got = analyze(&snap, &RuleSet::builtin_default(), 5);
    let devices = devices.as_array().unwrap();
    let ids: Vec<u64> = devices
        .iter()
        .map(|d| d["device"].as_u64().unwrap())
        .collect();
    let got_ids: Vec<u64> = got.iter().map(|d| u64::from(d.device.get())).collect();
    assert_eq!(got_ids, ids, "{file}: devices");
    for (d, e) in got.iter().zip(devices) {
        device_agrees(file, d, e);
    }
}

fn device_agrees(file: &str, d: &DeviceReport, e: &Value) {
    for f in FIGURES {
        assert_eq!(
            f.of(&d.figures),
            e["figures"][f.id()].as_u64().unwrap(),
            "{file} dev{}: {f}",
            d.device
        );
    }
    let ooms = e["oom"].as_array().unwrap();
    assert_eq!(d.oom.len(), ooms.len(), "{file}: OOMs detailed");
    for (o, x) in d.oom.iter().zip(ooms) {
        assert_eq!(o.entry, x["entry"].as_u64().unwrap(), "{file}: OOM entry");
        assert_eq!(o.requested, x["requested"].as_u64().unwrap(), "{file}");
        assert_eq!(o.cached_free, x["cached-free"].as_u64().unwrap(), "{file}");
        let largest = x["largest-free-block"].as_u64().unwrap();
        assert_eq!(o.largest_free_block, largest, "{file}: OOM {}", o.entry);
        let cause = o.cause.map(OomCause::id);
        assert_eq!(cause, x["cause"].as_str(), "{file}: OOM {} cause", o.entry);
    }
}

#[test]
fn the_synthetic_fixtures_agree_with_the_independent_replay() {
    let list = expected("synthetic/fragmentation.json");
    // Every synthetic snapshot is covered, the generated OOMs among them.
    for name in [
        "oom_fragmented.pickle",
        "oom_capacity.pickle",
        "oom_expandable.pickle",
    ] {
        assert!(list.iter().any(|(n, _)| n == name), "{name} missing");
    }
    assert!(list.len() >= 26, "{} files", list.len());
    for (name, devices) in &list {
        agrees(&fixtures().join("synthetic"), name, devices);
    }
}

#[test]
fn the_generated_ooms_are_told_apart_by_cause() {
    let cause = |name: &str| {
        let snap = snapshot::load(&fixtures().join("synthetic").join(name)).unwrap();
        let d = &analyze(&snap, &RuleSet::builtin_default(), 5)[0];
        (
            d.oom[0].cause,
            d.oom[0].cached_free,
            d.oom[0].largest_free_block,
        )
    };
    const MIB: u64 = 1 << 20;
    assert_eq!(
        cause("oom_fragmented.pickle"),
        (Some(OomCause::Fragmentation), 11 * MIB, 2 * MIB)
    );
    assert_eq!(
        cause("oom_capacity.pickle"),
        (Some(OomCause::Capacity), 2 * MIB, 2 * MIB)
    );
    assert_eq!(
        cause("oom_expandable.pickle"),
        (Some(OomCause::Fragmentation), 8 * MIB, 6 * MIB)
    );
}

#[test]
fn the_real_snapshots_agree_with_the_independent_replay() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if !dir.is_dir() {
        eprintln!(
            "SKIPPED: ../shared not found at {}: the real-snapshot fragmentation figures were not checked",
            dir.display()
        );
        return;
    }
    let list = expected("real-fragmentation.json");
    assert_eq!(list.len(), 10, "every real snapshot, the NPU ones included");
    for (name, devices) in &list {
        agrees(&dir, name, devices);
    }
}

#[test]
fn peak_and_summaries_carry_the_oom_cause() {
    let file = fixtures().join("synthetic/oom_fragmented.pickle");
    let file = file.to_str().unwrap();
    let v = json_of(&["peak", "--format", "json", file]);
    let dev = &v["snapshots"][0]["devices"][0];
    assert_eq!(dev["figures"]["segment-allocs-with-free-cache"], 1);
    let oom = &dev["oom"][0];
    assert_eq!(oom["cause"], "fragmentation");
    assert_eq!(oom["largest-free-block"], 2 * 1024 * 1024);
    let text = crate::common::memgate()
        .args(["peak", file])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("cause: fragmentation (11 MiB cached free, largest free block 2 MiB)"),
        "{text}"
    );
    assert!(
        text.contains(
            "cached free at the reserved peak: 12 MiB (12582912 bytes), 55% of reserved; \
             segments: 2 allocated (1 while the free cache covered the request), 0 freed"
        ),
        "{text}"
    );
}

/// `check` on synthetic `rank0.pickle` with `cached-free-at-reserved-peak`
/// budgeted as `LIMIT`: the exit code and the check's JSON.
fn free_cache_budget(limit: &str) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let snap = fixtures().join("synthetic/rank0.pickle");
    let config = format!(
        "[[target]]\nname = \"t\"\nsnapshots = {snap:?}\n\n[target.budget]\n\
         cached-free-at-reserved-peak = \"{limit}\"\n",
        snap = snap.to_str().unwrap()
    );
    std::fs::write(dir.path().join("m.toml"), config).unwrap();
    let out = crate::common::memgate()
        .current_dir(dir.path())
        .args(["check", "--config", "m.toml", "--json", "v.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let v: Value = std::fs::read(dir.path().join("v.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(Value::Null);
    let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let check = checks
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == "cached-free-at-reserved-peak")
        .cloned()
        .unwrap_or(Value::Null);
    (out.status.code(), check, stderr)
}

#[test]
fn a_budget_on_the_share_of_reserved_held_free_passes_and_fails_as_written() {
    // The independent replay's free cache, the generator's reserved peak.
    let frag = expected("synthetic/fragmentation.json");
    let free = frag.iter().find(|(f, _)| f == "rank0.pickle").unwrap().1[0]["figures"]
        ["cached-free-at-reserved-peak"]
        .as_u64()
        .unwrap();
    let gen = expected("synthetic/expected.json");
    let reserved = gen.iter().find(|(f, _)| f == "rank0.pickle").unwrap().1["devices"][0]
        ["figures"]["reserved-peak"]
        .as_u64()
        .unwrap();
    // The share rounded up passes; one point under it fails.
    let share = (free * 100).div_ceil(reserved);
    for (pct, code, status) in [(share, 0, "pass"), (share - 1, 1, "fail")] {
        let (rc, check, err) = free_cache_budget(&format!("{pct}% of reserved"));
        assert_eq!(rc, Some(code), "{pct}%: {check} {err}");
        assert_eq!(check["status"], status, "{pct}%");
        assert_eq!(check["current"], free);
        assert_eq!(
            check["budget"],
            reserved * pct / 100,
            "{pct}% of {reserved}"
        );
        assert_eq!(check["budget-written"], format!("{pct}% of reserved"));
    }
}

#[test]
fn a_share_of_reserved_on_another_figure_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.toml"),
        "[[target]]\nname = \"t\"\nsnapshots = \"x.pickle\"\n\n[target.budget]\n\
         allocated-peak = \"20% of reserved\"\n",
    )
    .unwrap();
    crate::common::memgate()
        .current_dir(dir.path())
        .args(["check", "--config", "m.toml"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "m.toml:6:18: `target.budget.allocated-peak`: \"20% of reserved\": a share of the \
             reserved peak budgets `cached-free-at-reserved-peak` only",
        ));
}

/// The share `peak --format json` gives beside the bytes, for device 0 of
/// `path`: the independent replay's cached free bytes over the reserved
/// peak the generator (synthetic) or the fixtures README (real) states.
fn share_agrees(path: &Path, cached_free: u64, reserved_peak: u64) {
    let v = json_of(&["peak", "--format", "json", path.to_str().unwrap()]);
    let dev = &v["snapshots"][0]["devices"][0];
    let keys: Vec<&String> = dev.as_object().unwrap().keys().collect();
    let at = keys.iter().position(|k| *k == "figures").unwrap();
    assert_eq!(
        keys[at + 1],
        "shares",
        "{}: right after the figures",
        path.display()
    );
    let share = dev["shares"]["cached-free-at-reserved-peak"]
        .as_f64()
        .unwrap();
    assert_eq!(
        share,
        cached_free as f64 / reserved_peak as f64,
        "{}",
        path.display()
    );
}

#[test]
fn peak_json_gives_the_cached_free_share_of_the_reserved_peak_beside_the_bytes() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("synthetic/expected.json")).unwrap(),
    )
    .unwrap();
    let reserved = expected["main.json"]["devices"][0]["figures"]["reserved-peak"]
        .as_u64()
        .unwrap();
    let replay = expected_of("synthetic/fragmentation.json", "main.json");
    share_agrees(&fixtures().join("synthetic/main.json"), replay, reserved);
    let name = "zidongliu_decomfl.pickle";
    let Some(real) = real_fixture(name, "the real snapshot's share check") else {
        return;
    };
    // shared/fixtures/README.md: zidongliu_decomfl's reserved peak.
    let replay = expected_of("real-fragmentation.json", name);
    share_agrees(&real, replay, 1_897_922_560);
}

/// The replay's `cached-free-at-reserved-peak` of `name`'s first device.
fn expected_of(file: &str, name: &str) -> u64 {
    let (_, devices) = expected(file).into_iter().find(|(n, _)| n == name).unwrap();
    devices[0]["figures"]["cached-free-at-reserved-peak"]
        .as_u64()
        .unwrap()
}
