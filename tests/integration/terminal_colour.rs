//! The terminal summary's colour follows NO_COLOR, CLICOLOR and
//! CLICOLOR_FORCE (tests pipe stdout, so "a terminal" never applies here).

use crate::common::memgate_at_root as memgate;

/// The regressed example's summary under `env` (every colour variable
/// unset first).
fn summary(env: &[(&str, &str)]) -> String {
    let mut cmd = memgate();
    for v in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"] {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied())
        .args(["check", "--config", "examples/memgate-regressed.toml"]);
    let out = cmd.assert().code(1).get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_pipe_gets_no_colour_unless_clicolor_force_and_no_color_wins() {
    let plain = summary(&[]);
    assert!(!plain.contains('\u{1b}'), "{plain}");
    assert!(plain.contains("FAIL toy-gpt-2rank"), "{plain}");

    let forced = summary(&[("CLICOLOR_FORCE", "1")]);
    assert!(
        forced.contains("\u{1b}[31mFAIL\u{1b}[0m toy-gpt-2rank"),
        "{forced:?}"
    );
    assert!(
        forced.contains("\u{1b}[31mmemgate: fail\u{1b}[0m"),
        "{forced:?}"
    );
    // Without the escapes the text is the plain summary.
    let stripped = forced
        .replace("\u{1b}[31m", "")
        .replace("\u{1b}[33m", "")
        .replace("\u{1b}[0m", "");
    assert_eq!(stripped, plain);

    assert_eq!(
        summary(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]),
        plain
    );
    assert_eq!(summary(&[("CLICOLOR_FORCE", "0")]), plain);
    assert_eq!(summary(&[("CLICOLOR", "0")]), plain);
}
