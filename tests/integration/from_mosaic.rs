//! Mosaic's command lines on memgate's commands: each of Mosaic's flags is
//! answered with memgate's equivalent (docs/from-mosaic.md), exit 2.

use predicates::prelude::*;
use predicates::str::contains;

use crate::common::memgate;

/// The error text of `memgate ARGS`, which must exit 2.
fn refused(args: &[&str]) -> String {
    let out = memgate().args(args).assert().code(2).get_output().clone();
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn peak_with_mosaics_snapshot_flag_answers_with_memgate_peak_and_the_file() {
    memgate()
        .args(["peak", "--snapshot", "run.pickle"])
        .assert()
        .code(2)
        .stderr(contains("`memgate peak run.pickle`"))
        .stderr(contains("-- --snapshot").not());
}

#[test]
fn the_snapshot_flag_with_an_equals_sign_names_the_command_it_was_given_to() {
    let err = refused(&["profile", "--snapshot=run.pickle"]);
    assert!(err.contains("`memgate profile run.pickle`"), "{err}");
}

#[test]
fn mosaics_out_path_is_answered_with_html() {
    let err = refused(&["profile", "run.pickle", "--out-path", "p.html"]);
    assert!(
        err.contains("--html: `memgate profile run.pickle --html p.html`"),
        "{err}"
    );
}

#[test]
fn mosaics_profile_types_are_answered_with_the_profile_command_and_its_grouping() {
    let err = refused(&["peak", "run.pickle", "--profile", "categories"]);
    assert!(err.contains("`memgate profile run.pickle`"), "{err}");
    assert!(!err.contains("--print-rules'"), "no look-alike tip: {err}");
    let err = refused(&["peak", "run.pickle", "--profile", "compile_context"]);
    assert!(
        err.contains("`memgate profile run.pickle --group-by compile-context`"),
        "{err}"
    );
    let err = refused(&["peak", "run.pickle", "--profile=annotations"]);
    assert!(err.contains("--group-by annotation`"), "{err}");
}

#[test]
fn mosaics_custom_profile_is_answered_with_categories() {
    let err = refused(&["profile", "run.pickle", "--custom-profile", "{}"]);
    assert!(err.contains("memgate's is --categories"), "{err}");
}

#[test]
fn mosaics_diff_flags_name_the_arguments_of_diff() {
    let err = refused(&[
        "diff",
        "--snapshot_base",
        "a.pickle",
        "--snapshot_diff",
        "b.pickle",
    ]);
    assert!(err.contains("`memgate diff a.pickle NEW`"), "{err}");
}

#[test]
fn a_value_in_the_tip_is_escaped_for_the_terminal() {
    let err = refused(&["peak", "--snapshot", "run\u{1b}[31m.pickle"]);
    let tip = err.lines().find(|l| l.contains("tip:")).unwrap();
    assert!(tip.contains("`memgate peak run"), "{tip:?}");
    assert!(!tip.contains('\u{1b}'), "{tip:?}");
}
