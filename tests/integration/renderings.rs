//! Snapshots (insta) of the analysis commands' text renderings and help, so
//! a change in what users read is a reviewed diff.

use crate::common;

/// Run memgate from the crate root so paths in the output are relative.
fn run(args: &[&str]) -> String {
    let out = common::memgate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const RANK0: &str = "tests/fixtures/synthetic/rank0.pickle";
const RANK0_REGRESSED: &str = "tests/fixtures/synthetic/rank0_regressed.pickle";

#[test]
fn peak_text_rendering_is_stable() {
    insta::assert_snapshot!(run(&["peak", "--top", "3", RANK0]));
}

#[test]
fn profile_text_rendering_is_stable() {
    insta::assert_snapshot!(run(&["profile", "--top", "5", RANK0]));
}

#[test]
fn profile_text_with_mosaic_rules_is_stable() {
    insta::assert_snapshot!(run(&["profile", "--rules", "mosaic", "--top", "3", RANK0]));
}

#[test]
fn diff_text_rendering_is_stable() {
    insta::assert_snapshot!(run(&["diff", RANK0, RANK0_REGRESSED]));
}

#[test]
fn the_printed_default_rules_are_stable() {
    insta::assert_snapshot!(run(&["profile", "--print-rules"]));
}

#[test]
fn the_analysis_commands_help_is_stable() {
    for cmd in ["peak", "profile", "diff", "summarize"] {
        insta::assert_snapshot!(format!("help_{cmd}"), run(&[cmd, "--help"]));
    }
}
