//! `memgate init` tells the truth: on every real snapshot we hold and on
//! each shape a first-time user brings (a trace that started mid-run, no
//! history, an OOM inside, no device, sizes a hundredfold apart, a linked
//! golden directory), `init` then `check` exits 0, or `init` refuses the
//! snapshot in one line naming it; and `init`'s last line states the
//! outcome `check` then has. The synthetic snapshots are built here, their
//! figures known by construction.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::common;

const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;

/// `memgate ARGS` in `dir`, outside any CI environment.
fn run(dir: &Path, args: &[&str]) -> Output {
    common::memgate()
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The exit code `init`'s last line announces for `check`.
fn announced(init: &Output) -> Option<i32> {
    let out = text(&init.stdout);
    let last = out.lines().last()?;
    if !last.starts_with("judged in process: `memgate check --config") {
        return None;
    }
    if last.contains("` passes on these snapshots") {
        Some(0)
    } else if last.contains("FAILS (exit 1)") {
        Some(1)
    } else if last.contains("(exit 2)") {
        Some(2)
    } else {
        None
    }
}

/// `init SNAPSHOTS` then `check` in `dir`: either `init` refused (exit 2,
/// no budget file, one error line per refused snapshot naming it) and the
/// refused names are returned, or `check` passes as `init` said it would.
fn init_then_check(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut full = vec!["init"];
    full.extend_from_slice(args);
    let init = run(dir, &full);
    let (out, err) = (text(&init.stdout), text(&init.stderr));
    let refused: Vec<String> = err
        .lines()
        .filter(|l| l.contains(": not budgeted: "))
        .map(String::from)
        .collect();
    assert_eq!(
        err.lines().count(),
        refused.len(),
        "init's errors are refusals only:\n{err}"
    );
    if !dir.join("memgate.toml").exists() {
        assert_eq!(init.status.code(), Some(2), "{out}{err}");
        assert!(
            !refused.is_empty(),
            "nothing written, nothing refused:\n{out}{err}"
        );
        return refused;
    }
    let check = run(dir, &["check"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "check after init:\n{}{}\ninit:\n{out}",
        text(&check.stdout),
        text(&check.stderr)
    );
    assert_eq!(
        announced(&init),
        check.status.code(),
        "init announced another outcome than check has:\ninit:\n{out}{err}\ncheck:\n{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    let want = if refused.is_empty() { 0 } else { 2 };
    assert_eq!(init.status.code(), Some(want), "{out}{err}");
    refused
}

fn real_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if dir.is_dir() {
        return Some(dir);
    }
    eprintln!(
        "SKIPPED: ../shared not found at {}: init was not tried on the real snapshots",
        dir.display()
    );
    None
}

#[cfg(unix)] // symlinks to the real snapshots
#[test]
fn init_then_check_passes_on_every_real_snapshot_or_init_refuses_it_by_name() {
    let Some(real) = real_dir() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&real)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= 16, "{} real snapshots", files.len());
    let refused: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = files
            .iter()
            .map(|f| {
                s.spawn(move || {
                    let tmp = tempfile::tempdir().unwrap();
                    let name = f.file_name().unwrap().to_str().unwrap();
                    std::os::unix::fs::symlink(f, tmp.path().join(name)).unwrap();
                    init_then_check(tmp.path(), &[name])
                })
            })
            .collect();
        jobs.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    // The fixtures README: the one file with no device is the only one
    // with nothing to judge.
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("nodevice_angelolmn_hitsbe.pickle: not budgeted: it holds no device"),
        "{refused:?}"
    );
}

/// A snapshot of one device: a segment of `segment` bytes holding one
/// live block of `live` bytes, and `trace`.
fn snapshot(segment: u64, live: u64, trace: &[Value]) -> Value {
    let frames = json!([{"name": "train_step", "filename": "/srv/app/train.py", "line": 7}]);
    let trace: Vec<Value> = trace
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut e = e.clone();
            e["stream"] = json!(0);
            e["time_us"] = json!(1_000 + i);
            e["frames"] = frames.clone();
            e
        })
        .collect();
    json!({
        "segments": [{
            "device": 0, "address": BASE, "total_size": segment,
            "allocated_size": live, "active_size": live, "requested_size": live,
            "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
            "is_expandable": false, "frames": frames,
            "blocks": [
                {"address": BASE, "size": live, "requested_size": live,
                 "state": "active_allocated", "frames": frames},
                {"address": BASE + live, "size": segment - live, "requested_size": 0,
                 "state": "inactive", "frames": frames},
            ],
        }],
        "device_traces": [trace],
    })
}

fn alloc(off: u64, size: u64) -> Value {
    json!({"action": "alloc", "addr": BASE + off, "size": size})
}

fn free(off: u64, size: u64) -> Value {
    json!({"action": "free_completed", "addr": BASE + off, "size": size})
}

/// A whole run: `live` allocated and kept, `extra` allocated and freed;
/// its allocated peak is `live + extra`.
fn whole(live: u64, extra: u64) -> Value {
    let trace = [alloc(0, live), alloc(live, extra), free(live, extra)];
    snapshot(2 * (live + extra), live, &trace)
}

fn write(dir: &Path, name: &str, v: &Value) {
    std::fs::create_dir_all(dir.join("snaps")).unwrap();
    std::fs::write(dir.join("snaps").join(name), v.to_string()).unwrap();
}

/// A trace that frees 30 MiB it never saw allocated (the ring buffer
/// dropped that), then allocates and frees 20 MiB.
fn wrapped_trace() -> [Value; 3] {
    [
        free(64 * MIB, 30 * MIB),
        alloc(64 * MIB, 20 * MIB),
        free(64 * MIB, 20 * MIB),
    ]
}

/// `init` then `check` on the one snapshot `v` (as `snaps/NAME`), which
/// must pass; the budget file written.
fn budget_for(dir: &Path, name: &str, v: &Value) -> String {
    write(dir, name, v);
    let path = format!("snaps/{name}");
    assert!(init_then_check(dir, &[&path]).is_empty());
    std::fs::read_to_string(dir.join("memgate.toml")).unwrap()
}

#[test]
fn a_trace_that_started_mid_run_is_budgeted_on_its_exact_figures_only() {
    let tmp = tempfile::tempdir().unwrap();
    let wrapped = snapshot(256 * MIB, 64 * MIB, &wrapped_trace());
    let toml = budget_for(tmp.path(), "wrapped.json", &wrapped);
    // Exact there: the segment (256 MiB, + 10% = 281.6 → 290 MiB) and the
    // memory live throughout (64 MiB → 70.4 → 71 MiB).
    assert!(toml.contains("reserved-peak = \"290 MiB\""), "{toml}");
    assert!(toml.contains("static-memory = \"71 MiB\""), "{toml}");
    for lower_bound in ["allocated-peak =", "oom-events =", "baseline ="] {
        assert!(!toml.contains(lower_bound), "{lower_bound} in\n{toml}");
    }
    let said = text(&run(tmp.path(), &["check"]).stdout);
    assert!(said.contains("started mid-run"), "{said}");
}

#[test]
fn a_wrapped_device_beside_one_without_history_is_budgeted_on_segments_for_both() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v = snapshot(256 * MIB, 64 * MIB, &wrapped_trace());
    // Device 1: a segment of its own, 8 MiB live, no trace at all.
    let mut idle = v["segments"][0].clone();
    let base = BASE + (1 << 40);
    idle["device"] = json!(1);
    idle["address"] = json!(base);
    idle["total_size"] = json!(32 * MIB);
    idle["allocated_size"] = json!(8 * MIB);
    idle["blocks"][0]["address"] = json!(base);
    idle["blocks"][0]["size"] = json!(8 * MIB);
    idle["blocks"][0]["requested_size"] = json!(8 * MIB);
    idle["blocks"][1]["address"] = json!(base + 8 * MIB);
    idle["blocks"][1]["size"] = json!(24 * MIB);
    v["segments"].as_array_mut().unwrap().push(idle);
    v["device_traces"].as_array_mut().unwrap().push(json!([]));
    let toml = budget_for(tmp.path(), "two.json", &v);
    assert!(toml.contains("require-trace = false"), "{toml}");
    assert!(!toml.contains("allocated-peak ="), "{toml}");
}

#[test]
fn files_listed_by_name_match_themselves_even_with_glob_characters_in_the_name() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "rank[0].json", &whole(64 * MIB, 16 * MIB));
    write(
        tmp.path(),
        "wrapped *?.json",
        &snapshot(256 * MIB, 64 * MIB, &wrapped_trace()),
    );
    assert!(init_then_check(tmp.path(), &["snaps/*.json"]).is_empty());
    let toml = std::fs::read_to_string(tmp.path().join("memgate.toml")).unwrap();
    assert!(
        toml.contains(r#"snapshots = ["snaps/rank[[]0[]].json"]"#),
        "{toml}"
    );
    assert!(
        toml.contains(r#"snapshots = ["snaps/wrapped [*][?].json"]"#),
        "{toml}"
    );
}

#[test]
fn a_dump_without_history_is_budgeted_on_its_segments_and_says_require_trace_false() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = budget_for(
        tmp.path(),
        "dump.json",
        &snapshot(128 * MIB, 100 * MIB, &[]),
    );
    assert!(toml.contains("require-trace = false"), "{toml}");
    assert!(toml.contains("_record_memory_history"), "{toml}");
    // 128 MiB + 10% = 140.8 → 150 MiB; 100 MiB + 10% = 110 MiB.
    assert!(toml.contains("reserved-peak = \"150 MiB\""), "{toml}");
    assert!(toml.contains("static-memory = \"110 MiB\""), "{toml}");
    assert!(!toml.contains("allocated-peak ="), "{toml}");
}

#[test]
fn an_oom_already_in_the_snapshot_is_budgeted_at_todays_count_never_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v = whole(64 * MIB, 16 * MIB);
    let oom = json!({"action": "oom", "device_free": 1024, "size": 1u64 << 30,
                     "stream": 0, "time_us": 2_000, "frames": []});
    v["device_traces"][0].as_array_mut().unwrap().push(oom);
    let toml = budget_for(tmp.path(), "ran_out.json", &v);
    assert!(toml.contains("\noom-events = 1\n"), "{toml}");
    assert!(!toml.contains("oom-events = 0"), "{toml}");
}

#[test]
fn a_snapshot_with_no_device_is_refused_by_name_and_nothing_is_written_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "empty.json",
        &json!({"segments": [], "device_traces": []}),
    );
    let refused = init_then_check(tmp.path(), &["snaps/empty.json"]);
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains("snaps/empty.json: not budgeted"),
        "{refused:?}"
    );
    assert!(!tmp.path().join("golden").exists());

    // Beside a good one: the good one is budgeted (and listed by name, so
    // that check does not read the refused one), init still exits 2.
    write(tmp.path(), "good.json", &whole(64 * MIB, 16 * MIB));
    let refused = init_then_check(tmp.path(), &["snaps/*.json"]);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(!tmp.path().join("golden/empty.json").exists());
    assert!(tmp.path().join("golden/good.json").exists());
}

#[test]
fn snapshots_a_hundredfold_apart_get_a_target_each_and_the_small_one_still_fails_when_it_doubles() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "big.json", &whole(40 << 30, 8 << 30));
    write(tmp.path(), "small.json", &whole(300 * MIB, 150 * MIB));
    assert!(init_then_check(tmp.path(), &["snaps/*.json"]).is_empty());
    let toml = std::fs::read_to_string(tmp.path().join("memgate.toml")).unwrap();
    // 48 GiB + 10% = 52.8 → 53 GiB; 450 MiB + 10% = 495 → 500 MiB.
    assert!(toml.contains("allocated-peak = \"53 GiB\""), "{toml}");
    assert!(toml.contains("allocated-peak = \"500 MiB\""), "{toml}");
    assert_eq!(toml.matches("[[target]]").count(), 2, "{toml}");
    // The small run doubling fails its own budget.
    write(tmp.path(), "small.json", &whole(300 * MIB, 600 * MIB));
    let check = run(tmp.path(), &["check"]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
}

#[test]
fn a_snapshot_half_the_largest_shares_its_target_and_one_just_under_half_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    // Allocated peaks 400, 200 and 199 MiB.
    write(tmp.path(), "a.json", &whole(300 * MIB, 100 * MIB));
    write(tmp.path(), "b.json", &whole(150 * MIB, 50 * MIB));
    write(tmp.path(), "c.json", &whole(150 * MIB, 49 * MIB));
    assert!(init_then_check(tmp.path(), &["snaps/*.json"]).is_empty());
    let toml = std::fs::read_to_string(tmp.path().join("memgate.toml")).unwrap();
    assert!(
        toml.contains("snapshots = [\"snaps/a.json\", \"snaps/b.json\"]"),
        "{toml}"
    );
    assert!(toml.contains("snapshots = [\"snaps/c.json\"]"), "{toml}");
    // 400 MiB + 10% = 440 MiB; 199 MiB + 10% = 218.9 → 220 MiB.
    assert!(toml.contains("allocated-peak = \"440 MiB\""), "{toml}");
    assert!(toml.contains("allocated-peak = \"220 MiB\""), "{toml}");
    for (dir, file) in [("traced-1", "a"), ("traced-1", "b"), ("traced-2", "c")] {
        assert!(tmp
            .path()
            .join(format!("golden/{dir}/{file}.json"))
            .exists());
    }
}

#[test]
fn an_existing_golden_summary_is_kept_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "r0.json", &whole(64 * MIB, 16 * MIB));
    std::fs::create_dir(tmp.path().join("golden")).unwrap();
    std::fs::write(tmp.path().join("golden/r0.json"), "{\"mine\": 1}").unwrap();
    let init = run(tmp.path(), &["init", "snaps/r0.json"]);
    assert_eq!(init.status.code(), Some(2));
    let err = text(&init.stderr);
    assert!(
        err.contains(
            "golden/r0.json exists; memgate init does not replace a golden summary (--force does)"
        ),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("golden/r0.json")).unwrap(),
        "{\"mine\": 1}"
    );
    assert!(!tmp.path().join("memgate.toml").exists());
    assert!(init_then_check(tmp.path(), &["snaps/r0.json", "--force"]).is_empty());
}

/// `init --force` in `dir` refuses, saying `says`, and writes no budget.
fn refused_even_with_force(dir: &Path, says: &str) {
    let init = run(dir, &["init", "snaps/r0.json", "--force"]);
    assert_eq!(init.status.code(), Some(2));
    let err = text(&init.stderr);
    assert!(err.contains(says), "{err}");
    assert!(!dir.join("memgate.toml").exists());
}

#[cfg(unix)] // symlinks
#[test]
fn init_never_writes_through_a_symlinked_golden_directory_or_a_hard_linked_golden() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    write(&dir, "r0.json", &whole(64 * MIB, 16 * MIB));
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("golden")).unwrap();
    refused_even_with_force(
        &dir,
        "golden is a symbolic link; memgate init never writes through a link",
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

    // A golden that is a hard link of a file outside: replacing it would
    // leave that file as it was but the golden no longer shared.
    std::fs::remove_file(dir.join("golden")).unwrap();
    std::fs::create_dir(dir.join("golden")).unwrap();
    let outside = elsewhere.join("r0.json");
    std::fs::write(&outside, "outside").unwrap();
    std::fs::hard_link(&outside, dir.join("golden/r0.json")).unwrap();
    refused_even_with_force(&dir, "golden/r0.json is a file with other hard links");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside");

    // A budget file that is a symbolic link to one outside.
    std::fs::remove_file(dir.join("golden/r0.json")).unwrap();
    let budget = elsewhere.join("memgate.toml");
    std::fs::write(&budget, "# theirs\n").unwrap();
    std::os::unix::fs::symlink(&budget, dir.join("memgate.toml")).unwrap();
    let init = run(&dir, &["init", "snaps/r0.json", "--force"]);
    assert_eq!(init.status.code(), Some(2));
    assert!(text(&init.stderr).contains("memgate.toml is a symbolic link"));
    assert_eq!(std::fs::read_to_string(&budget).unwrap(), "# theirs\n");
    assert!(!dir.join("golden/r0.json").exists());
}
