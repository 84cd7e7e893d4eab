//! A snapshot's strings reach CI logs: a frame or file name must not be able
//! to start a log line of its own (`::error::…`) or send terminal escapes.

use assert_cmd::Command;

#[test]
fn frame_names_with_newlines_and_escapes_are_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.json");
    let frame = r#"{"name": "f\n::error::forged\u001b[31m", "filename": "x.py", "line": 1}"#;
    let snap = format!(
        r#"{{"segments": [{{"device": 0, "address": 4096, "total_size": 1024, "stream": 0,
             "blocks": [{{"size": 1024, "state": "active_allocated", "requested_size": 1000,
                          "address": 4096, "frames": [{frame}]}}]}}],
            "device_traces": [[{{"action": "alloc", "addr": 4096, "size": 1000, "stream": 0,
                                 "frames": [{frame}]}}]]}}"#
    );
    std::fs::write(&path, snap).unwrap();
    for cmd in ["peak", "profile"] {
        let out = Command::cargo_bin("memgate")
            .unwrap()
            .arg(cmd)
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("f\\n::error::forged"), "{cmd}: {text}");
        assert!(
            !text.lines().any(|l| l.starts_with("::error::")),
            "{cmd}: {text}"
        );
        assert!(!text.contains('\u{1b}'), "{cmd}: {text}");
    }
}

#[test]
fn file_names_with_newlines_cannot_start_a_log_line() {
    // A pull request can add a snapshot whose file name holds a newline
    // and a workflow command; every line memgate prints about it must stay
    // one line.
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/synthetic/main_proto4.pickle"),
    )
    .unwrap();
    let ok = dir.path().join("a\n::error::forged.pickle");
    std::fs::write(&ok, &good).unwrap();
    let bad = dir.path().join("b\n::error::broken.pickle");
    std::fs::write(&bad, &good[..good.len() / 2]).unwrap();
    for cmd in ["inspect", "peak", "profile"] {
        let out = Command::cargo_bin("memgate")
            .unwrap()
            .arg(cmd)
            .arg(&ok)
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stdout.contains("a\\n::error::forged.pickle"),
            "{cmd}: {stdout}"
        );
        assert_eq!(stderr.lines().count(), 1, "{cmd}: {stderr}");
        assert!(
            stderr.contains("b\\n::error::broken.pickle"),
            "{cmd}: {stderr}"
        );
        for l in stdout.lines().chain(stderr.lines()) {
            assert!(!l.starts_with("::error::"), "{cmd}: {l}");
        }
    }
}
