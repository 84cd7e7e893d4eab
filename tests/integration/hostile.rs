//! Hostile and broken input (SECURITY.md): every file here must be judged
//! "could not judge" (exit 2) with one stderr line naming it, or loaded, in
//! little time and memory, never running anything and never panicking.
//!
//! Small inputs are committed (tests/hostile/gen.py writes them); the ones
//! that only make sense large are built here in a scratch directory.

// The pickle builders below write lengths and small counters that fit their
// opcode's field by construction (each input is sized by the test itself).
#![allow(clippy::cast_possible_truncation)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value as J;

/// What a run of `memgate inspect` left behind.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident set of the child in KiB, when `/usr/bin/time` exists.
    max_rss_kib: Option<u64>,
    /// The child's user + system CPU time, when `/usr/bin/time` exists: what
    /// the work-bound tests compare, as other processes on a loaded machine
    /// stretch wall time but not the child's own CPU time.
    cpu: Option<Duration>,
    elapsed: Duration,
}

/// Memory no input here may make memgate use (generous, not a benchmark).
const RSS_CEILING_KIB: u64 = 512 * 1024;

fn hostile_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile")
}

fn fixture(name: &str) -> PathBuf {
    hostile_dir().join(name)
}

fn manifest() -> serde_json::Map<String, J> {
    let text = std::fs::read_to_string(fixture("manifest.json")).unwrap();
    match serde_json::from_str(&text).unwrap() {
        J::Object(m) => m,
        _ => panic!("manifest.json is not an object"),
    }
}

/// Run `memgate inspect PATH` in `cwd`, under `/usr/bin/time` when present.
fn inspect_in(path: &Path, cwd: &Path) -> Run {
    run_in(cwd, &["inspect".as_ref(), path.as_os_str()])
}

/// Run `memgate ARGS` in `cwd`, under `/usr/bin/time` when present.
fn run_in(cwd: &Path, args: &[&std::ffi::OsStr]) -> Run {
    let bin = common::memgate_path();
    let time = Path::new("/usr/bin/time");
    let rss_file = cwd.join(".memgate-max-rss");
    let mut cmd = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f")
            .arg("%M %U %S")
            .arg("-o")
            .arg(&rss_file)
            .arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    cmd.args(args).current_dir(cwd);
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let elapsed = start.elapsed();
    // `time` writes "RSS_KIB USER_S SYS_S" as its last line.
    let measured = std::fs::read_to_string(&rss_file).ok().and_then(|t| {
        let line = t.lines().last()?.to_string();
        let f: Vec<&str> = line.split_whitespace().collect();
        let kib: u64 = f.first()?.parse().ok()?;
        let secs = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        let cpu = match (secs(1), secs(2)) {
            (Some(u), Some(s)) => Some(Duration::from_secs_f64(u + s)),
            _ => None,
        };
        Some((kib, cpu))
    });
    let max_rss_kib = measured.map(|(kib, _)| kib);
    let cpu = measured.and_then(|(_, cpu)| cpu);
    let _ = std::fs::remove_file(&rss_file);
    Run {
        // `time` reports the child's exit code as its own.
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        max_rss_kib,
        cpu,
        elapsed,
    }
}

fn inspect(path: &Path) -> Run {
    let dir = tempfile::tempdir().unwrap();
    inspect_in(path, dir.path())
}

/// Exit 2, one stderr line `error: <path>: …` holding every word, no panic,
/// and memory under the ceiling.
fn assert_refused(run: &Run, path: &Path, words: &[&str]) {
    let label = path.display();
    assert!(
        !run.stderr.contains("panicked"),
        "{label}: panicked: {}",
        run.stderr
    );
    assert_eq!(run.code, Some(2), "{label}: stderr {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{label}: not one stderr line: {lines:?}");
    let prefix = format!("error: {}: ", path.display());
    assert!(
        lines[0].starts_with(&prefix),
        "{label}: does not name the file: {}",
        lines[0]
    );
    for w in words {
        assert!(lines[0].contains(w), "{label}: no {w:?} in {}", lines[0]);
    }
    assert_rss(run, path);
}

fn assert_rss(run: &Run, path: &Path) {
    if let Some(kib) = run.max_rss_kib {
        assert!(
            kib < RSS_CEILING_KIB,
            "{}: peak RSS {kib} KiB (ran {:?})",
            path.display(),
            run.elapsed
        );
    }
}

fn words(expect: &J) -> Vec<String> {
    expect["contains"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Check every manifest entry whose file name starts with one of `prefixes`.
fn check_group(prefixes: &[&str]) -> usize {
    let mut n = 0;
    for (name, expect) in manifest() {
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        n += 1;
        let path = fixture(&name);
        let run = inspect(&path);
        match expect["kind"].as_str().unwrap() {
            "ok" => {
                assert_eq!(run.code, Some(0), "{name}: {}", run.stderr);
                assert_rss(&run, &path);
            }
            "error" => {
                let w = words(&expect);
                let w: Vec<&str> = w.iter().map(String::as_str).collect();
                assert_refused(&run, &path, &w);
            }
            "refused" => {
                let op = expect["opcode"].as_str().unwrap();
                let offset = expect["offset"].as_u64().unwrap();
                let want = format!("refused opcode {op} at byte offset {offset}");
                assert_refused(&run, &path, &[&want]);
            }
            other => panic!("{name}: unknown kind {other}"),
        }
    }
    assert!(n > 0, "no fixture starts with {prefixes:?}");
    n
}

// ---------------------------------------------------------------------------
// Code-running opcodes
// ---------------------------------------------------------------------------

#[test]
fn every_code_running_opcode_is_refused_by_name_and_offset_and_its_payload_never_runs() {
    let mut n = 0;
    for (name, expect) in manifest() {
        if expect["kind"] != "refused" {
            continue;
        }
        n += 1;
        let path = fixture(&name);
        let dir = tempfile::tempdir().unwrap();
        let run = inspect_in(&path, dir.path());
        let op = expect["opcode"].as_str().unwrap();
        let offset = expect["offset"].as_u64().unwrap();
        assert_refused(
            &run,
            &path,
            &[&format!("refused opcode {op} at byte offset {offset}")],
        );
        // The payloads run `touch memgate-pwned` in the current directory.
        assert!(
            !dir.path().join("memgate-pwned").exists(),
            "{name}: the payload ran"
        );
        assert!(run.stdout.is_empty(), "{name}: printed {}", run.stdout);
    }
    assert!(n >= 30, "only {n} code-running fixtures");
}

#[test]
fn the_fixtures_hold_each_code_running_opcode_alone_and_inside_a_valid_snapshot() {
    let m = manifest();
    let ops = [
        ("global_reduce", "GLOBAL"),
        ("stack_global", "STACK_GLOBAL"),
        ("reduce", "REDUCE"),
        ("build", "BUILD"),
        ("inst", "INST"),
        ("obj", "OBJ"),
        ("newobj", "NEWOBJ"),
        ("newobj_ex", "NEWOBJ_EX"),
        ("persid", "PERSID"),
        ("binpersid", "BINPERSID"),
        ("ext1", "EXT1"),
        ("ext2", "EXT2"),
        ("ext4", "EXT4"),
    ];
    for (key, op) in ops {
        for place in ["top", "in_frame"] {
            let name = format!("code_{key}_{place}.pickle");
            let e = m.get(&name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(e["opcode"], op, "{name}");
        }
    }
    // The frame-nested ones sit past the snapshot's first hundred bytes.
    assert!(
        m["code_stack_global_in_frame.pickle"]["offset"]
            .as_u64()
            .unwrap()
            > 100
    );
}

// ---------------------------------------------------------------------------
// Bombs and lengths
// ---------------------------------------------------------------------------

#[test]
fn memo_bombs_of_64_levels_are_judged_without_expanding_them() {
    check_group(&["bomb_"]);
}

#[test]
fn segments_blocks_and_trace_lists_shared_by_memo_are_refused_not_multiplied() {
    check_group(&["shared_"]);
}

#[test]
fn lengths_far_past_the_end_are_refused_before_anything_is_allocated() {
    let n = check_group(&["length_"]);
    assert!(n >= 14);
}

#[test]
fn wrong_types_and_missing_keys_are_errors_that_name_the_field() {
    check_group(&["type_", "missing_", "top_"]);
}

#[test]
fn files_that_are_no_snapshot_or_a_broken_pickle_are_named_and_refused() {
    check_group(&[
        "png",
        "text",
        "broken",
        "numbers",
        "torch_save",
        "empty",
        "gzip",
        "proto_",
        "unknown_opcode",
        "no_stop",
        "truncated",
        "stop_",
        "pop_",
        "appends_",
        "get_",
        "setitems_",
        "next_buffer",
        "int_not",
        "trailing_garbage",
        "valid_",
    ]);
}

#[test]
fn control_characters_in_an_action_name_are_escaped_in_text_output() {
    let path = fixture("valid_control_chars_in_action.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("::")),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains('\x1b'), "{}", run.stdout);
    assert!(
        run.stdout.contains(r"evil\n::error::forged"),
        "{}",
        run.stdout
    );
}

#[test]
fn errors_never_echo_the_content_of_a_file_that_may_be_a_symlink_to_a_secret() {
    // A snapshot path can be a symlink to `/proc/self/environ` or a token
    // file; the error line goes to a public CI log.
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[u8]; 7] = [
        b"LANG=C\0GITHUB_TOKEN=hunter2\0",
        b"I hunter2\n.",
        b"F hunter2\n.",
        b"\x80\x04Np hunter2\n.",
        b"\x80\x04g hunter2\n.",
        b"ghp_hunter2",
        b"S'hunter2\n.",
    ];
    for (i, bytes) in cases.iter().enumerate() {
        let path = dir.path().join(format!("secret{i}"));
        std::fs::write(&path, bytes).unwrap();
        let run = inspect(&path);
        assert_refused(&run, &path, &[]);
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    }
}

// ---------------------------------------------------------------------------
// Paths that are not readable files
// ---------------------------------------------------------------------------

#[test]
fn a_directory_is_named_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = inspect(dir.path());
    assert_refused(&run, dir.path(), &["directory"]);
}

#[test]
fn a_missing_file_is_named_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.pickle");
    let run = inspect(&path);
    assert_refused(&run, &path, &["no such file"]);
}

// Unix permission bits and symlinks (src/platform has the Windows side).
#[cfg(unix)]
#[test]
fn an_unreadable_file_is_named_and_refused_unless_we_run_as_root() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mode0000.pickle");
    std::fs::copy(fixture("trailing_garbage.pickle"), &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        // root (as in CI) reads mode 0000 files: nothing to refuse.
        eprintln!("skipped: running as root, a mode 0000 file is still readable");
        return;
    }
    let run = inspect(&path);
    assert_refused(&run, &path, &["permission denied"]);
}

// ---------------------------------------------------------------------------
// Truncation at every byte offset
// ---------------------------------------------------------------------------

fn synthetic(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/synthetic")
        .join(name);
    std::fs::read(p).unwrap()
}

/// Every proper prefix of `bytes` is a one-line truncation error naming the
/// file and an offset (checked in-process, against the library).
fn assert_every_prefix_is_truncated(file: &str, bytes: &[u8]) {
    let name = Path::new(file);
    assert!(memgate::snapshot::load_bytes(name, bytes).is_ok(), "{file}");
    for n in 0..bytes.len() {
        let e = match memgate::snapshot::load_bytes(name, &bytes[..n]) {
            Ok(_) => panic!("{file}: a {n}-byte prefix loaded"),
            Err(e) => e.to_string(),
        };
        assert!(e.starts_with(&format!("{file}: ")), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(
            e.contains("truncated") || (n == 0 && e.contains("empty")),
            "{file}[..{n}]: {e}"
        );
        if n > 0 {
            assert!(e.contains("byte offset"), "{file}[..{n}]: {e}");
        }
    }
}

#[test]
fn every_truncation_of_small_real_shaped_snapshots_is_a_one_line_truncation_error() {
    // torch 1.13 list (3 KB), and a torch 2.2 dict with shared frames as
    // Python (protocol 4) and the C++ pickler (protocol 2) write it.
    assert_every_prefix_is_truncated("v1_13_list.pickle", &synthetic("v1_13_list.pickle"));
    for file in ["valid_tiny_proto4.pickle", "valid_tiny_proto2.pickle"] {
        assert_every_prefix_is_truncated(file, &std::fs::read(fixture(file)).unwrap());
    }
}

#[test]
#[ignore = "a minute in a debug build; run with `cargo test --release -- --ignored`"]
fn every_truncation_of_the_main_fixtures_is_a_one_line_truncation_error() {
    for file in ["main_proto4.pickle", "main_jit.pickle"] {
        assert_every_prefix_is_truncated(file, &synthetic(file));
    }
}

#[test]
fn truncated_snapshots_given_to_the_binary_name_the_file_and_the_offset() {
    let bytes = synthetic("main_proto4.pickle");
    let dir = tempfile::tempdir().unwrap();
    for n in [
        1,
        2,
        11,
        12,
        100,
        bytes.len() / 2,
        bytes.len() - 2,
        bytes.len() - 1,
    ] {
        let path = dir.path().join(format!("cut{n}.pickle"));
        std::fs::write(&path, &bytes[..n]).unwrap();
        let run = inspect(&path);
        assert_refused(&run, &path, &["truncated", "byte offset"]);
    }
}

// ---------------------------------------------------------------------------
// Large inputs built here
// ---------------------------------------------------------------------------

/// A tiny protocol 4 pickle writer for inputs too large to commit.
#[derive(Default)]
struct P(Vec<u8>);

impl P {
    fn new() -> P {
        P(vec![0x80, 4])
    }
    fn op(&mut self, b: &[u8]) -> &mut P {
        self.0.extend_from_slice(b);
        self
    }
    fn str(&mut self, s: &str) -> &mut P {
        assert!(s.len() < 256);
        self.0.push(0x8c);
        self.0.push(u8::try_from(s.len()).unwrap());
        self.op(s.as_bytes())
    }
    fn int(&mut self, i: u32) -> &mut P {
        self.0.push(b'J');
        self.op(&i.cast_signed().to_le_bytes())
    }
    /// `LONG_BINPUT i` (explicit memo index).
    fn put(&mut self, i: u32) -> &mut P {
        self.0.push(b'r');
        self.op(&i.to_le_bytes())
    }
    /// `LONG_BINGET i`.
    fn get(&mut self, i: u32) -> &mut P {
        self.0.push(b'j');
        self.op(&i.to_le_bytes())
    }
    /// `BINUNICODE` (4-byte length), for strings of any length.
    fn text(&mut self, s: &str) -> &mut P {
        self.0.push(b'X');
        self.op(&(s.len() as u32).to_le_bytes()).op(s.as_bytes())
    }
    /// `LONG1`: any u64 (a ninth byte keeps values ≥ 2^63 positive).
    fn long(&mut self, v: u64) -> &mut P {
        let mut b = v.to_le_bytes().to_vec();
        if v >> 63 == 1 {
            b.push(0);
        }
        self.0.extend_from_slice(&[0x8a, b.len() as u8]);
        self.op(&b)
    }
    fn write(&mut self, dir: &Path, name: &str) -> PathBuf {
        self.0.push(b'.');
        let path = dir.join(name);
        std::fs::write(&path, &self.0).unwrap();
        path
    }
}

#[test]
fn three_million_marks_and_nesting_a_million_deep_do_not_overflow_the_stack() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1_000_000;
    let mut cases = Vec::new();
    // Three million MARKs and nothing else.
    cases.push((
        P::new()
            .op(&vec![b'('; 3_000_000])
            .write(dir.path(), "marks.pickle"),
        "STOP",
    ));
    // ((((…llll: lists nested a million deep.
    let mut p = P::new();
    p.op(&vec![b'('; n]).op(&vec![b'l'; n]);
    cases.push((p.write(dir.path(), "lists.pickle"), "segments[0]"));
    // ]]]]…aaaa: the same with EMPTY_LIST and APPEND.
    let mut p = P::new();
    p.op(&vec![b']'; n]).op(&vec![b'a'; n - 1]);
    cases.push((p.write(dir.path(), "appends.pickle"), "segments[0]"));
    // Dicts nested a million deep: {1: {1: {1: …}}}.
    let mut p = P::new();
    for _ in 0..n / 2 {
        p.op(b"}K\x01");
    }
    p.op(b"}").op(&vec![b's'; n / 2]);
    cases.push((p.write(dir.path(), "dicts.pickle"), "segments"));
    // Tuples: (((…ttt.
    let mut p = P::new();
    p.op(&vec![b'('; n]).op(&vec![b't'; n]);
    cases.push((p.write(dir.path(), "tuples.pickle"), "tuple"));
    // Deep nesting where a frame list belongs, inside a valid snapshot.
    let mut p = P::new();
    p.op(b"}(")
        .str("segments")
        .op(b"]")
        .str("device_traces")
        .op(b"](]}(");
    p.str("action")
        .str("alloc")
        .str("size")
        .op(b"K\x01")
        .str("frames");
    p.op(&vec![b'('; n]).op(&vec![b'l'; n]).op(b"uae");
    p.op(b"u");
    cases.push((p.write(dir.path(), "deep_frames.pickle"), "frame"));
    // JSON nested a million deep.
    let json = dir.path().join("deep.json");
    let mut text = vec![b'['; 1_000_000];
    text.extend(vec![b']'; 1_000_000]);
    std::fs::write(&json, text).unwrap();
    cases.push((json, "JSON"));
    for (path, word) in cases {
        let run = inspect(&path);
        assert_refused(&run, &path, &[word]);
    }
}

/// The keys of a small valid snapshot with one device trace, whose trace
/// entries `entries` writes (it must leave a list's items on the stack).
fn snapshot_with_trace(entries: impl FnOnce(&mut P)) -> P {
    let mut p = P::new();
    p.op(b"}(").str("segments").op(b"]").str("device_traces");
    p.op(b"](](");
    entries(&mut p);
    p.op(b"eeu");
    p
}

#[test]
fn a_wide_dict_stored_many_times_is_read_once_not_each_time() {
    // external_annotations: one 50,000-key dict referenced 300,000 times.
    // Rescanning its keys at each reference would take 10^10 steps.
    let dir = tempfile::tempdir().unwrap();
    let mut p = P::new();
    p.op(b"}(")
        .str("segments")
        .op(b"]")
        .str("device_traces")
        .op(b"]");
    p.str("external_annotations").op(b"](}").put(1).op(b"(");
    for i in 0..50_000 {
        p.str(&format!("k{i}")).op(b"K\x00");
    }
    p.op(b"u");
    for _ in 0..300_000 {
        p.op(b"h\x01");
    }
    p.op(b"eu");
    let path = p.write(dir.path(), "wide.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_rss(&run, &path);
    // The same dict repeated inside one frame list.
    let p = snapshot_with_trace(|p| {
        p.op(b"}(")
            .str("action")
            .str("alloc")
            .str("size")
            .op(b"K\x01");
        p.str("frames").op(b"](}").put(1).op(b"(");
        for i in 0..50_000 {
            p.str(&format!("k{i}")).op(b"K\x00");
        }
        p.op(b"u");
        for _ in 0..300_000 {
            p.op(b"h\x01");
        }
        p.op(b"eu");
    });
    let path = { p }.write(dir.path(), "wide_frames.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_rss(&run, &path);
}

#[test]
fn a_dict_grown_by_a_key_between_each_storing_is_scanned_only_for_new_keys() {
    // One dict stored 100,000 times into external_annotations, a key added
    // before each: rescanning all its keys each time is 5 * 10^9 steps.
    let dir = tempfile::tempdir().unwrap();
    let mut p = P::new();
    p.op(b"}(")
        .str("segments")
        .op(b"]")
        .str("device_traces")
        .op(b"]");
    p.str("external_annotations").op(b"]").put(1).op(b"u");
    p.op(b"}").put(2).op(b"0");
    for i in 0..100_000 {
        p.op(b"h\x01h\x02").str(&format!("k{i}")).op(b"K\x00sa0");
    }
    let path = p.write(dir.path(), "growing.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_rss(&run, &path);
}

#[test]
fn a_frames_tuple_shared_by_many_blocks_is_read_once() {
    // 50,000 blocks whose `frames` is one 50,000-frame tuple.
    let dir = tempfile::tempdir().unwrap();
    let mut p = P::new();
    p.op(b"}(").str("segments").op(b"](}(");
    p.str("device").op(b"K\x00").str("address").op(b"K\x00");
    p.str("total_size").op(b"K\x00").str("blocks").op(b"](");
    // The first block builds the tuple and memoizes it as 1.
    let frame_key = 2;
    for b in 0..50_000u32 {
        p.op(b"}(")
            .str("size")
            .op(b"K\x00")
            .str("state")
            .str("inactive");
        p.str("frames");
        if b == 0 {
            p.op(b"(}(")
                .str("filename")
                .str("f.py")
                .str("name")
                .str("f");
            p.str("line").op(b"K\x01").op(b"u").put(frame_key);
            for _ in 1..50_000 {
                p.get(frame_key);
            }
            p.op(b"t").put(1);
        } else {
            p.get(1);
        }
        p.op(b"u");
    }
    p.op(b"eu").op(b"e").str("device_traces").op(b"]u");
    let path = p.write(dir.path(), "tuple_frames.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("50000 blocks"), "{}", run.stdout);
    assert_rss(&run, &path);
}

#[test]
fn thousands_of_distinct_unknown_actions_are_refused_and_a_thousand_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |p: &mut P, action: &str| {
        p.op(b"}(")
            .str("action")
            .str(action)
            .str("size")
            .op(b"K\x01")
            .op(b"u");
    };
    let p = snapshot_with_trace(|p| {
        for i in 0..20_000 {
            entry(p, &format!("a{i}"));
        }
    });
    let path = { p }.write(dir.path(), "actions.pickle");
    let run = inspect(&path);
    assert_refused(&run, &path, &["distinct unknown trace actions"]);
    let p = snapshot_with_trace(|p| {
        for i in 0..100_000 {
            entry(p, &format!("a{}", i % 1000));
        }
    });
    let path = { p }.write(dir.path(), "actions_ok.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("100000 trace entries"),
        "{}",
        run.stdout
    );
}

#[test]
fn device_ordinals_and_trace_lists_past_4096_are_refused_and_4096_are_counted_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let segments = |devices: u32, name: &str| {
        let mut p = P::new();
        p.op(b"}(").str("segments").op(b"](");
        for i in 0..50_000u32 {
            p.op(b"}(").str("device").int(i % devices).str("address");
            p.op(b"K\x00")
                .str("total_size")
                .op(b"K\x00")
                .str("blocks")
                .op(b"]u");
        }
        p.op(b"e").str("device_traces").op(b"]u");
        p.write(dir.path(), name)
    };
    let path = segments(50_000, "devices.pickle");
    let run = inspect(&path);
    assert_refused(&run, &path, &["segments[4096] `device` is 4096"]);
    let path = segments(4096, "devices_ok.pickle");
    let run = inspect(&path);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("dev4095: 12 segments"),
        "{}",
        run.stdout
    );
    let mut p = P::new();
    p.op(b"}(")
        .str("segments")
        .op(b"]")
        .str("device_traces")
        .op(b"](");
    for _ in 0..5000 {
        p.op(b"]");
    }
    let path = p.op(b"eu").write(dir.path(), "lists.pickle");
    let run = inspect(&path);
    assert_refused(&run, &path, &["`device_traces` has 5000 lists"]);
}

#[test]
fn bombs_with_millions_of_opcodes_stay_under_the_memory_ceiling() {
    // What costs most per input byte: containers and references, 2 MB each.
    let dir = tempfile::tempdir().unwrap();
    let size = 2 << 20;
    let mut cases = Vec::new();
    cases.push(
        P::new()
            .op(&vec![b']'; size])
            .write(dir.path(), "lists.pickle"),
    );
    cases.push(
        P::new()
            .op(&vec![b'}'; size])
            .write(dir.path(), "dicts.pickle"),
    );
    let mut p = P::new();
    p.op(b"]\x94(");
    for _ in 0..size / 2 {
        p.op(b"h\x00");
    }
    cases.push(p.op(b"e").write(dir.path(), "refs.pickle"));
    let mut p = P::new();
    for _ in 0..size / 2 {
        p.op(b"N\x85");
    }
    cases.push(p.write(dir.path(), "tuples.pickle"));
    for path in cases {
        let run = inspect(&path);
        // `]]]].` is a valid (empty) list of segments; the rest are not.
        assert!(matches!(run.code, Some(0 | 2)), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        // SECURITY.md states peak RSS <= 50 x file size + 16 MiB (measured
        // 48x by tests/hostile/measure.py); fail well before that drifts far.
        if let Some(kib) = run.max_rss_kib {
            let len = std::fs::metadata(&path).unwrap().len();
            assert!(
                kib * 1024 <= 64 * len + (64 << 20),
                "{}: peak RSS {kib} KiB for {len} bytes",
                path.display()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Work and output bounded whatever the sharing, the addresses, the nesting
// and the names (issue 19, items 1-4). Times are compared with a control
// file of the same size run the same way, so a loaded machine slows both.
// ---------------------------------------------------------------------------

fn args<'a>(a: &'a [&'a str]) -> Vec<&'a std::ffi::OsStr> {
    a.iter().map(|s| s.as_ref()).collect()
}

/// `memgate ARGS FILE` in the file's directory.
fn run_on(path: &Path, a: &[&str]) -> Run {
    let mut v = args(a);
    v.push(path.as_os_str());
    run_in(path.parent().unwrap(), &v)
}

/// Whether `slow` took at most 3 times `control` (plus 3 s of slack): CPU
/// time where `/usr/bin/time` measured both, else wall time.
fn assert_comparable(what: &str, slow: &Run, control: &Run) {
    let (a, b, kind) = match (slow.cpu, control.cpu) {
        (Some(a), Some(b)) => (a, b, "CPU"),
        _ => (slow.elapsed, control.elapsed, "wall"),
    };
    assert!(
        a <= b * 3 + Duration::from_secs(3),
        "{what}: {a:?} of {kind} time, against {b:?} for the control",
    );
}

/// Trace entries (a list's items) of allocs of 512 bytes at `addrs`,
/// `time_us` 10, 11, …, each with the frames `frames` writes.
fn allocs(p: &mut P, addrs: impl Iterator<Item = u64>, frames: &mut dyn FnMut(&mut P, usize)) {
    for (i, a) in addrs.enumerate() {
        p.op(b"}(").str("action").str("alloc").str("addr").long(a);
        p.str("size")
            .op(b"M\x00\x02")
            .str("time_us")
            .int(10 + i as u32);
        p.str("frames");
        frames(p, i);
        p.op(b"u");
    }
}

#[test]
fn a_long_name_shared_by_every_frame_of_deep_stacks_is_cut_and_listed_once() {
    // One 100 kB function name, stored once and fetched from the memo by
    // every frame: 500 frames deep in 10 stacks (and DUP'd the same way),
    // 100 kB of file. Copied into each label, `peak --format json` wrote
    // 0.5 GB and used as much.
    let dir = tempfile::tempdir().unwrap();
    let long = "f".repeat(100_000);
    let mut p = snapshot_with_trace(|p| {
        let mut frames = |p: &mut P, i: usize| {
            p.op(b"](}(").str("filename").str("m.py").str("name");
            p.str("g").str("line").int(i as u32).op(b"u");
            for k in 0..500 {
                p.op(b"}(").str("filename").str("m.py").str("name");
                if i == 0 && k == 0 {
                    p.text(&long).put(7);
                } else {
                    p.get(7);
                }
                p.str("line").int(1).op(b"u");
            }
            p.op(b"e");
        };
        allocs(p, (0..10).map(|i| 0x7f00_0000_0000 + 512 * i), &mut frames);
    });
    let shared = { p }.write(dir.path(), "shared.pickle");
    // The same stacks with the frame built once and DUP'd.
    let dupped = dupped_long_frames(&long, 499).write(dir.path(), "dupped.pickle");
    for path in [&shared, &dupped] {
        let run = run_on(path, &["peak", "--format", "json"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert_rss(&run, path);
        assert!(
            run.stdout.len() < 16 << 20,
            "{}: {} bytes of JSON",
            path.display(),
            run.stdout.len()
        );
        let marker = "…[cut: 100000 bytes]";
        assert!(run.stdout.contains(marker), "no {marker:?}");
        let v: J = serde_json::from_str(&run.stdout).unwrap();
        let stacks = &v["snapshots"][0]["devices"][0]["stacks-at-peak"];
        assert_eq!(stacks.as_array().unwrap().len(), 10);
        assert_eq!(stacks[0]["frames"].as_array().unwrap().len(), 501);
        let label = stacks[0]["frames"][1].as_str().unwrap();
        assert!(
            label.len() < 1024 && label.ends_with(" (m.py:1)"),
            "{label}"
        );
    }
}

/// Ten stacks, each a short frame then the frame named `long` (built once,
/// memoised) and `dups` DUPs of it: 2 + `dups` frames per stack.
fn dupped_long_frames(long: &str, dups: usize) -> P {
    snapshot_with_trace(|p| {
        let mut frames = |p: &mut P, i: usize| {
            p.op(b"](}(").str("filename").str("m.py").str("name");
            p.str("g").str("line").int(i as u32).op(b"u");
            p.op(b"}(").str("filename").str("m.py").str("name");
            if i == 0 {
                p.text(long).put(7);
            } else {
                p.get(7);
            }
            p.str("line").int(1).op(b"u");
            p.op(&vec![b'2'; dups]).op(b"e");
        };
        allocs(p, (0..10).map(|i| 0x7f00_0000_0000 + 512 * i), &mut frames);
    })
}

#[test]
fn stacks_that_would_fill_the_report_past_its_limit_are_one_error_line() {
    // 10 stacks of 10,000 frames with a 100 kB name: 5 GB of labels to
    // list, 50 MB once cut, still past the 64 MiB the reports may hold.
    let dir = tempfile::tempdir().unwrap();
    let long = "f".repeat(100_000);
    let path = dupped_long_frames(&long, 13_000).write(dir.path(), "deep.pickle");
    let run = run_on(&path, &["peak", "--format", "json"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(!run.stdout.contains("m.py"), "frames listed anyway");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("error: {}: ", path.display()))
            && run.stderr.contains("limit of 64 MiB"),
        "{}",
        run.stderr
    );
    assert_rss(&run, &path);
}

/// The address whose hash under memgate's former unkeyed address hasher
/// (a splitmix64 finalizer) is `h`: the finalizer inverted step by step.
fn old_hasher_preimage(h: u64) -> u64 {
    fn unxorshift(y: u64, s: u32) -> u64 {
        let mut x = y;
        for _ in 0..64 / s + 1 {
            x = y ^ (x >> s);
        }
        x
    }
    fn inverse(m: u64) -> u64 {
        // Newton's iteration for the inverse of an odd number mod 2^64.
        let mut x = m;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
        }
        x
    }
    let mut z = unxorshift(h, 31);
    z = z.wrapping_mul(inverse(0x94D0_49BB_1331_11EB));
    z = unxorshift(z, 27);
    z = z.wrapping_mul(inverse(0xBF58_476D_1CE4_E5B9));
    z = unxorshift(z, 30);
    z.wrapping_sub(0x9E37_79B9_7F4A_7C15)
}

#[test]
fn addresses_chosen_to_collide_in_the_address_map_cost_no_more_than_ordinary_ones() {
    // Hashes i << 40: one bucket and one tag for every table size, so the
    // old map compared each insert with all the addresses before it.
    let n = 1u64 << 16;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, addrs: &mut dyn Iterator<Item = u64>| {
        let p = snapshot_with_trace(|p| {
            allocs(p, addrs, &mut |p, _| {
                p.op(b"]");
            })
        });
        { p }.write(dir.path(), name)
    };
    let colliding = write(
        "colliding.pickle",
        &mut (0..n).map(|i| old_hasher_preimage(i << 40)),
    );
    let ordinary = write(
        "ordinary.pickle",
        &mut (0..n).map(|i| 0x7f00_0000_0000 + 512 * i),
    );
    let control = run_on(&ordinary, &["peak"]);
    let run = run_on(&colliding, &["peak"]);
    for r in [&control, &run] {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.stdout.contains("33554432"), "{}", r.stdout);
    }
    assert_comparable("colliding addresses", &run, &control);
}

#[test]
fn the_preimages_collide_under_the_old_hasher() {
    // The old hasher, as it was: the test above aims at it.
    fn old(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    for i in [0u64, 1, 2, 65_535] {
        assert_eq!(old(old_hasher_preimage(i << 40)), i << 40);
    }
}

/// A snapshot of `n` allocs (`time_us` 10…) and the annotation events
/// `events` writes (as list items), on device 0.
fn annotated(n: usize, events: impl FnOnce(&mut P)) -> P {
    let mut p = P::new();
    p.op(b"}(").str("segments").op(b"]").str("device_traces");
    p.op(b"](](");
    allocs(
        &mut p,
        (0..n as u64).map(|i| 0x7f00_0000_0000 + 512 * i),
        &mut |p, _| {
            p.op(b"]");
        },
    );
    p.op(b"ee").str("external_annotations").op(b"](");
    events(&mut p);
    p.op(b"eu");
    p
}

fn event(p: &mut P, stage: &str, name: &str, time: u32) {
    p.op(b"}(").str("stage").str(stage).str("name").str(name);
    p.str("device")
        .op(b"K\x00")
        .str("time_us")
        .int(time)
        .op(b"u");
}

#[test]
fn annotations_nested_twenty_thousand_deep_cost_what_flat_ones_do() {
    // 20,000 STARTs open before the first alloc and ended oldest first
    // after the last: every END searched and shifted the open list, and
    // every span was scanned entry by entry (depth x entries).
    let n = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let end = 10 + n as u32;
    let nested = annotated(n, |p| {
        for i in 0..n {
            event(p, "START", &format!("a{i}"), 10);
        }
        for i in 0..n {
            event(p, "END", &format!("a{i}"), end);
        }
    })
    .write(dir.path(), "nested.pickle");
    // As many events, each span one entry long.
    let flat = annotated(n, |p| {
        for i in 0..n {
            event(p, "START", &format!("a{i}"), 10 + i as u32);
            event(p, "END", &format!("a{i}"), 10 + i as u32);
        }
    })
    .write(dir.path(), "flat.pickle");
    let control = run_on(&flat, &["phases", "--all", "--format", "json"]);
    let run = run_on(&nested, &["phases", "--all", "--format", "json"]);
    for r in [&control, &run] {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let v: J = serde_json::from_str(&run.stdout).unwrap();
    let phases = v["snapshots"][0]["devices"][0]["phases"]
        .as_array()
        .unwrap();
    assert_eq!(phases.len(), n);
    // The outermost span holds every alloc.
    let a0 = phases.iter().find(|p| p["name"] == "a0").unwrap();
    assert_eq!(a0["allocated-during"], 512 * n as u64, "{a0}");
    assert_comparable("nested annotations", &run, &control);
}

#[test]
fn hundreds_of_unmatched_long_names_get_their_closest_baseline_quickly() {
    // 300 snapshots and 300 baselines, all 240-character names that match
    // none: a full edit distance for each pair was 5 * 10^9 steps.
    let dir = tempfile::tempdir().unwrap();
    let snapshot = {
        let mut p = snapshot_with_trace(|p| {
            allocs(p, std::iter::once(0x7f00_0000_0000), &mut |p, _| {
                p.op(b"]");
            })
        });
        p.op(b".");
        std::mem::take(&mut p.0)
    };
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut name = |len: usize| -> String {
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 10) as u8)
            })
            .collect()
    };
    let tree = |len: usize, name: &mut dyn FnMut(usize) -> String| {
        let root = dir.path().join(format!("len{len}"));
        std::fs::create_dir_all(root.join("snaps")).unwrap();
        std::fs::create_dir_all(root.join("golden")).unwrap();
        for _ in 0..300 {
            std::fs::write(root.join(format!("snaps/{}.pickle", name(len))), &snapshot).unwrap();
            std::fs::write(root.join(format!("golden/{}.pickle", name(len))), &snapshot).unwrap();
        }
        // One near miss, which must still be named.
        let near = name(len);
        std::fs::write(root.join(format!("snaps/{near}x.pickle")), &snapshot).unwrap();
        std::fs::write(root.join(format!("golden/{near}.pickle")), &snapshot).unwrap();
        std::fs::write(
            root.join("memgate.toml"),
            "[[target]]\nname = \"t\"\nsnapshots = \"snaps/*.pickle\"\nbaseline = \"golden/\"\n\
             [target.budget]\nallocated-peak = \"1 GiB\"\n",
        )
        .unwrap();
        (root, near)
    };
    let (long, near) = tree(240, &mut name);
    let (short, _) = tree(8, &mut name);
    let check = |root: &Path| {
        run_in(
            root,
            &args(&["check", "--config", "memgate.toml", "--json", "-"]),
        )
    };
    let control = check(&short);
    let run = check(&long);
    for r in [&control, &run] {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    // The near miss's finding offers its baseline first.
    fn finding<'a>(v: &'a J, looked_for: &str) -> Option<&'a J> {
        match v {
            J::Object(m) if m.get("looked-for").and_then(J::as_str) == Some(looked_for) => Some(v),
            J::Object(m) => m.values().find_map(|v| finding(v, looked_for)),
            J::Array(a) => a.iter().find_map(|v| finding(v, looked_for)),
            _ => None,
        }
    }
    let report: J = serde_json::from_str(&run.stdout).unwrap();
    let f = finding(&report, &format!("{near}x")).expect("no finding for the near miss");
    assert_eq!(f["close"][0], format!("{near}.pickle"), "{f}");
    assert_comparable("unmatched long names", &run, &control);
}

#[test]
fn allocations_that_add_up_past_any_device_are_refused_not_wrapped_into_a_pass() {
    // Eight allocations of 2^62 bytes: a category's bytes summed in i64 or
    // u64 wrapped to 0 at the peak, so a category budget passed.
    let dir = tempfile::tempdir().unwrap();
    let trace: Vec<J> = (0..8u64)
        .map(|i| {
            serde_json::json!({"action": "alloc", "addr": 4096 + 512 * i, "size": 1u64 << 62,
                "stream": 0, "time_us": i, "frames": [{"filename": "m.py", "line": 1, "name": "f"}]})
        })
        .collect();
    let path = dir.path().join("huge.json");
    let snap = serde_json::json!({"segments": [], "device_traces": [trace]});
    std::fs::write(&path, snap.to_string()).unwrap();
    for cmd in [&["peak"][..], &["profile", "--format", "json"][..]] {
        let run = run_on(&path, cmd);
        assert_refused(&run, &path, &["more than 4 EiB"]);
    }
    // Up to the bound the file is read and its figures are exact.
    let fits = dir.path().join("fits.json");
    let trace: Vec<J> = (0..4u64)
        .map(|i| {
            serde_json::json!({"action": "alloc", "addr": 4096 + 512 * i, "size": 1u64 << 60,
            "stream": 0, "time_us": i, "frames": []})
        })
        .collect();
    std::fs::write(
        &fits,
        serde_json::json!({"segments": [], "device_traces": [trace]}).to_string(),
    )
    .unwrap();
    let run = run_on(&fits, &["peak", "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: J = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        v["snapshots"][0]["devices"][0]["figures"]["allocated-peak"],
        J::from(1u64 << 62)
    );
}

#[test]
fn ten_megabytes_of_empty_lists_dicts_or_marked_lists_stay_under_512_mib_and_5_s() {
    // Issue 31: each held 651-706 MiB. One value per byte is refused once
    // the stack holds two million (src/pickle/decoder.rs, MAX_PENDING).
    let dir = tempfile::tempdir().unwrap();
    let n = 9_900_000;
    for (name, body) in [
        ("lists.pickle", vec![b']'; n]),
        ("dicts.pickle", vec![b'}'; n]),
        ("marked.pickle", b"(]".repeat(n / 2)),
    ] {
        let path = P::new().op(&body).write(dir.path(), name);
        let run = inspect(&path);
        assert_refused(&run, &path, &["values pending on the stack"]);
        if let Some(cpu) = run.cpu {
            assert!(cpu.as_secs() < 5, "{name}: {cpu:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// `memgate mcp` (issue 31): the cache bound is a memory bound, and a
// malformed request line gets an error reply.
// ---------------------------------------------------------------------------

#[cfg(feature = "mcp")]
/// A `memgate mcp` session on stdio, spoken to line by line.
struct Mcp {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

#[cfg(feature = "mcp")]
impl Mcp {
    fn start(root: &Path, extra: &[&str]) -> Mcp {
        let mut child = Command::new(common::memgate_path())
            .arg("mcp")
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        Mcp { child, out }
    }

    fn send(&mut self, line: &[u8]) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&mut self) -> J {
        use std::io::BufRead;
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn initialize(&mut self) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "hostile.rs", "version": "1"}}})
            .to_string()
            .as_bytes(),
        );
        assert_eq!(self.reply()["id"], 0);
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    /// `tools/call` of `tool` with `args`: its result.
    fn call(&mut self, id: u64, tool: &str, args: J) -> J {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}})
            .to_string()
            .as_bytes(),
        );
        let r = self.reply();
        assert_eq!(r["id"], id, "{r}");
        r
    }

    /// The server's peak resident set so far (KiB), from /proc.
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    fn close(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[cfg(feature = "mcp")]
/// A snapshot whose one live allocation has a stack of `frames` frames,
/// each `name (file:line)` two shared 250-byte strings and its own line:
/// 18 bytes of pickle per frame, half a KiB of label once made.
fn long_label_snapshot(dir: &Path, name: &str, frames: u32) -> PathBuf {
    let (file, func) = ("/".repeat(250), "f".repeat(250));
    let mut p = P::new();
    p.op(b"}(").str("segments").op(b"](}(");
    p.str("device").op(b"K\x00").str("address").op(b"K\x00");
    p.str("total_size").int(512).str("blocks").op(b"](}(");
    p.str("address").op(b"K\x00").str("size").int(512);
    p.str("requested_size")
        .int(512)
        .str("state")
        .str("active_allocated");
    p.str("frames").op(b"]").put(6).op(b"(");
    p.op(b"}(").str("filename").put(1).text(&file).put(2);
    p.str("name")
        .put(3)
        .text(&func)
        .put(4)
        .str("line")
        .put(5)
        .int(0)
        .op(b"u");
    for i in 1..frames {
        p.op(b"}(h\x01h\x02h\x03h\x04h\x05").int(i).op(b"u");
    }
    p.op(b"eue").op(b"ue").str("device_traces").op(b"](](}(");
    p.str("action").str("alloc").str("addr").op(b"K\x00");
    p.str("size").int(512).str("frames").get(6).op(b"ueeu");
    p.write(dir, name)
}

#[cfg(feature = "mcp")]
#[test]
fn crafted_files_whose_labels_outweigh_their_tables_keep_the_mcp_cache_within_its_bound() {
    // Each 8 KB file weighs ~260 KiB once its labels are made (what a
    // cached snapshot then holds); its tables alone, what the cache once
    // counted, are ~16 KiB, so sixteen would all be kept in 1 MiB. Sixteen
    // files, not forty (issue 31's case; measured with tests in
    // docs/mcp.md): each call is slow in a debug build.
    let dir = tempfile::tempdir().unwrap();
    let files = 16;
    for i in 0..files {
        long_label_snapshot(dir.path(), &format!("s{i}.pickle"), 400);
    }
    let mut mcp = Mcp::start(dir.path(), &["--cache-mib", "1"]);
    mcp.initialize();
    let mut kept = Vec::new();
    for i in 0..files {
        let r = mcp.call(
            i + 1,
            "peak",
            serde_json::json!({"path": format!("s{i}.pickle"), "detail": "full"}),
        );
        assert_ne!(r["result"]["isError"], true, "{r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        let answer: J = serde_json::from_str(text).unwrap();
        let stack = &answer["document"]["snapshots"][0]["devices"][0]["stacks-at-peak"][0];
        // Listed (the answer cap may cut the list).
        let listed = stack["frames"].as_array().map_or(0, Vec::len);
        assert!(listed > 0, "{text:.400}");
        let cache = &answer["cache"];
        kept.push((
            cache["held"]["bytes"].as_u64().unwrap(),
            cache["snapshots"].as_u64().unwrap(),
        ));
    }
    let rss = mcp.peak_rss_kib();
    mcp.close();
    assert!(
        kept.iter().all(|(b, n)| *b <= 1 << 20 && *n <= 4),
        "{kept:?}"
    );
    assert!(kept[kept.len() - 1].0 >= 512 << 10, "{kept:?}");
    eprintln!("memgate mcp, {files} crafted files, cache 1 MiB: peak RSS {rss:?} KiB");
    if let Some(kib) = rss {
        assert!(kib < 96 * 1024, "peak RSS {kib} KiB");
    }
}

#[cfg(feature = "mcp")]
#[test]
fn malformed_request_lines_get_a_json_rpc_error_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = Mcp::start(dir.path(), &[]);
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let long = format!("\"{}\"", "a".repeat(9 << 20));
    for (line, code, words) in [
        (&b"\xff\xfe{}"[..], -32700, "not UTF-8"),
        (deep.as_bytes(), -32700, "recursion limit"),
        (long.as_bytes(), -32600, "longer than 8 MiB"),
        (b"{\"jsonrpc\":", -32700, "EOF"),
    ] {
        mcp.send(line);
        let r = mcp.reply();
        assert_eq!(r["id"], J::Null, "{r}");
        assert_eq!(r["error"]["code"], code, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
    }
    mcp.initialize();
    let r = mcp.call(1, "peak", serde_json::json!({"path": "missing.pickle"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    mcp.close();
}
