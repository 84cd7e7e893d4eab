//! The gate binary is lean (issue 36): the MCP server, its SDK and its
//! async runtime are in builds with the `mcp` feature only, and a build
//! without it says so in one line when asked for the server.

use std::path::Path;
use std::process::Command;

/// The crates `cargo tree -e normal` lists for memgate with `features`
/// (none: the default build, the one the Action, the Docker image and the
/// release binaries make), one name per line.
fn normal_crates(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "tree",
        "--offline",
        "--locked",
        "-e",
        "normal",
        "-p",
        "memgate",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    names.sort();
    names.dedup();
    names
}

const SERVER_CRATES: [&str; 3] = ["rmcp", "tokio", "moka"];

#[test]
fn the_default_build_has_no_mcp_sdk_or_async_runtime_and_the_mcp_feature_brings_them() {
    let lean = normal_crates(&[]);
    for name in SERVER_CRATES {
        assert!(
            !lean.iter().any(|c| c == name),
            "{name} is in the default build's tree: {lean:?}"
        );
    }
    // The check can fail: the same query with the feature finds them.
    let full = normal_crates(&["mcp"]);
    for name in SERVER_CRATES {
        assert!(full.iter().any(|c| c == name), "{name} not found: {full:?}");
    }
    assert!(
        lean.len() + 40 < full.len(),
        "{} crates lean, {} with mcp",
        lean.len(),
        full.len()
    );
}

#[test]
fn cargo_lock_holds_one_sha2() {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let n = lock.lines().filter(|l| *l == "name = \"sha2\"").count();
    assert_eq!(n, 1, "sha2 is in Cargo.lock {n} times");
}

#[cfg(not(feature = "mcp"))]
#[test]
fn memgate_mcp_in_a_build_without_the_server_exits_2_with_one_line_naming_the_builds_that_have_it()
{
    for args in [&["mcp"][..], &["mcp", "--root", "."], &["mcp", "--help"]] {
        let out = crate::common::memgate().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: mcp: "), "{err}");
        assert!(
            err.contains("--features mcp") && err.contains("memgate-ci"),
            "{err}"
        );
    }
}
