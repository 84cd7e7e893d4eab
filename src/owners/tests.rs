use super::codeowners::parse;
use super::pattern::{Pattern, Steps};
use super::*;

fn matches(pattern: &str, file: &str) -> bool {
    let p = Pattern::parse(pattern).unwrap_or_else(|e| panic!("{e}"));
    p.matches(file, &mut Steps::new(1 << 20)).unwrap()
}

#[test]
fn patterns_follow_gitignore_anchoring_folders_and_wildcards() {
    let cases = [
        // Unanchored: any depth, a file or a folder of that name.
        ("*.py", "model.py", true),
        ("*.py", "pkg/sub/model.py", true),
        ("*.py", "pkg/model.pyc", false),
        ("model.py", "pkg/model.py", true),
        ("pkg", "src/pkg/model.py", true),
        ("docs/", "docs/model.py", true),
        ("docs/", "docs", false),
        // Anchored (a `/` before the end): from the root only.
        ("/model.py", "pkg/model.py", false),
        ("/pkg/", "pkg/a/b.py", true),
        ("pkg/model.py", "pkg/model.py", true),
        ("pkg/model.py", "x/pkg/model.py", false),
        ("pkg/*.py", "pkg/a.py", true),
        ("pkg/*.py", "pkg/sub/a.py", false),
        ("pkg/*", "pkg/sub/a.py", true),
        // `**`: any number of folders, none included.
        ("**/layers/*.py", "layers/a.py", true),
        ("**/layers/*.py", "x/y/layers/a.py", true),
        ("a/**/b.py", "a/b.py", true),
        ("a/**/b.py", "a/x/y/b.py", true),
        ("a/**", "a/x/y.py", true),
        // `?` is one character, `\` makes one literal.
        ("mod?l.py", "model.py", true),
        ("mod?l.py", "modl.py", false),
        ("\\*.py", "*.py", true),
        ("\\*.py", "x.py", false),
        // Case matters, as on GitHub.
        ("Model.py", "model.py", false),
        // A site outside the project root keeps its absolute path: no
        // anchored pattern reaches it.
        ("/opt/x.py", "/opt/x.py", false),
        ("x.py", "/opt/x.py", true),
    ];
    for (pattern, file, expected) in cases {
        assert_eq!(matches(pattern, file), expected, "{pattern} vs {file}");
    }
}

#[test]
fn negation_and_character_ranges_are_refused_as_github_refuses_them() {
    assert!(Pattern::parse("!model.py")
        .unwrap_err()
        .contains("negation"));
    assert!(Pattern::parse("[ab].py").unwrap_err().contains("ranges"));
    assert!(Pattern::parse("/").unwrap_err().contains("names no file"));
}

#[test]
fn the_last_matching_line_wins_and_an_ownerless_line_unsets_the_owners() {
    let text = "# comment\n*.py @org/python\nmodel/ @ml-team alice@example.com # infra\n\
                model/vendored/\n";
    let rules = parse(text).unwrap();
    assert_eq!(rules.len(), 3);
    let mut steps = Steps::new(1 << 20);
    let owners = |file: &str, steps: &mut Steps| last_match(&rules, file, steps).unwrap().concat();
    assert_eq!(owners("train.py", &mut steps), ["@org/python"]);
    assert_eq!(
        owners("model/gpt.py", &mut steps),
        ["@ml-team", "alice@example.com"]
    );
    assert!(owners("model/vendored/x.py", &mut steps).is_empty());
    assert!(owners("README", &mut steps).is_empty());
}

#[test]
fn gitlab_sections_each_give_their_last_match_and_their_default_owners() {
    let text = "*.py @all-python\n[Models][2] @ml-default\nmodel/\nmodel/gpt.py @gpt-team\n\
                ^[Optional] @opt\n*.py\n";
    let rules = parse(text).unwrap();
    let mut steps = Steps::new(1 << 20);
    let got = last_match(&rules, "model/gpt.py", &mut steps)
        .unwrap()
        .concat();
    assert_eq!(got, ["@all-python", "@gpt-team", "@opt"]);
    let got = last_match(&rules, "model/bert.py", &mut steps)
        .unwrap()
        .concat();
    assert_eq!(got, ["@all-python", "@ml-default", "@opt"]);
}

#[test]
fn every_bad_codeowners_line_is_named_at_its_line_and_column() {
    let errors = parse("ok.py @a\n  !neg.py @b\n[x].py @c\n").unwrap_err();
    let at: Vec<(usize, usize)> = errors.iter().map(|e| (e.line, e.col)).collect();
    assert_eq!(at, [(2, 3), (3, 1)]);
}

#[test]
fn a_pathological_pattern_list_runs_out_of_steps_instead_of_time() {
    // Each of 4,000 start points tries 2,000 letters: 8M steps a rule.
    let text = format!("*{}b @x\n", "a".repeat(2000)).repeat(500);
    let rules = parse(&text).unwrap();
    let file = "a".repeat(4000);
    let start = std::time::Instant::now();
    let mut steps = Steps::new(STEPS);
    assert!(last_match(&rules, &file, &mut steps).is_none());
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}
