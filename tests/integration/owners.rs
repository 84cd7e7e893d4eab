//! Owners (issue 35 item 3): the budget's `[owners]` patterns and the
//! repository's CODEOWNERS name who owns each finding's top site, in the
//! terminal FAIL line, Markdown, JUnit and JSON, escaped for each sink.

use crate::common::{device, summary, Workdir, CONFIG, MIB};

/// The run grew `forward (model.py)` by 90 MiB and the optimizer's site
/// by 10 MiB (the generator's own numbers), against a 100 MiB baseline.
fn grown(config: &str) -> Workdir {
    let w = Workdir::new(config);
    let run = [
        ("forward (model.py)", 150 * MIB),
        ("_init_group (optim/adam.py)", 50 * MIB),
    ];
    let base = [
        ("forward (model.py)", 60 * MIB),
        ("_init_group (optim/adam.py)", 40 * MIB),
    ];
    w.write_summary(
        "snaps/rank0.json",
        &summary("rank0.pickle", vec![device(0, 200 * MIB, &run)]),
    );
    w.write_summary(
        "golden/rank0.json",
        &summary("rank0.pickle", vec![device(0, 100 * MIB, &base)]),
    );
    w
}

fn fail_line(stdout: &[u8]) -> String {
    let out = String::from_utf8_lossy(stdout).into_owned();
    out.lines()
        .find(|l| l.starts_with("FAIL"))
        .unwrap_or_else(|| panic!("no FAIL line:\n{out}"))
        .to_string()
}

fn verdict_json(w: &Workdir) -> serde_json::Value {
    serde_json::from_str(&w.read("v.json")).unwrap()
}

/// The cause rows of the lead check of the only device.
fn cause(v: &serde_json::Value) -> serde_json::Value {
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap();
    checks
        .iter()
        .find_map(|c| c["regression"]["cause"].as_object().cloned())
        .map(serde_json::Value::Object)
        .expect("a finding with a cause")
}

#[test]
fn an_owners_rule_names_the_top_sites_owner_in_the_fail_line_markdown_junit_and_json_and_none_without(
) {
    let config = format!(
        "{CONFIG}\n[owners.paths]\n\"*.py\" = \"@org/python\"\n\"model.py\" = \"@org/ml-team\"\n"
    );
    let w = grown(&config);
    let out = w
        .check()
        .args(["--markdown", "r.md", "--junit", "j.xml", "--json", "v.json"])
        .assert()
        .code(1);
    let line = fail_line(&out.get_output().stdout);
    assert!(
        line.contains("; top site: +90 MiB forward (model.py), owner: @org/ml-team"),
        "{line}"
    );
    // Markdown: the name as a code span, so nobody is notified.
    let md = w.read("r.md");
    assert!(
        md.contains("+90 MiB `forward (model.py)`, owner: `@org/ml-team`"),
        "{md}"
    );
    assert!(
        md.contains("+10 MiB `_init_group (optim/adam.py)`, owner: `@org/python`"),
        "{md}"
    );
    let xml = w.read("j.xml");
    roxmltree::Document::parse(&xml).unwrap();
    assert!(
        xml.contains("forward (model.py), owner: @org/ml-team"),
        "{xml}"
    );
    let owned = cause(&verdict_json(&w));
    assert_eq!(
        owned["grew"][0]["owners"],
        serde_json::json!(["@org/ml-team"])
    );
    assert_eq!(
        owned["grew"][1]["owners"],
        serde_json::json!(["@org/python"])
    );
    // The same run without `[owners]`: no owner named, no `owners` key.
    let w = grown(CONFIG);
    let out = w.check().args(["--json", "v.json"]).assert().code(1);
    let line = fail_line(&out.get_output().stdout);
    assert!(
        line.ends_with("top site: +90 MiB forward (model.py)"),
        "{line}"
    );
    let bare = cause(&verdict_json(&w));
    assert!(bare["grew"][0].get("owners").is_none(), "{bare}");
}

#[test]
fn mention_true_writes_a_well_formed_handle_as_a_mention_in_markdown_and_nothing_else() {
    let config = format!(
        "{CONFIG}\n[owners]\nmention = true\n[owners.paths]\n\
         \"model.py\" = [\"@org/ml-team\", \"ml@example.com\"]\n\"optim/\" = \"@x`y\"\n"
    );
    let w = grown(&config);
    w.check().args(["--markdown", "r.md"]).assert().code(1);
    let md = w.read("r.md");
    assert!(
        md.contains("owners: @org/ml-team, `ml@example.com`"),
        "{md}"
    );
    // Not a handle: never a mention, escaped as Markdown text (the
    // backtick cannot stay in a code span; `@` gets a zero-width joiner).
    assert!(!md.contains("owner: @x"), "{md}");
    assert!(md.contains("owner: @\u{200d}x\\`y"), "{md}");
}

#[test]
fn hostile_owner_names_stay_on_their_line_in_the_terminal_junit_and_markdown() {
    let config = format!(
        "{CONFIG}\n[owners.paths]\n\"model.py\" = \"@evil\\n::error::forged\\u001b[31m<b>&\"\n"
    );
    let w = grown(&config);
    let out = w
        .check()
        .env("GITHUB_ACTIONS", "true")
        .args(["--markdown", "r.md", "--junit", "j.xml"])
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    assert!(
        stdout.lines().all(|l| !l.starts_with("::error::forged")),
        "{stdout}"
    );
    assert!(
        stdout.contains("owner: @evil\\n::error::forged\\u{1b}[31m<b>&"),
        "{stdout}"
    );
    let xml = w.read("j.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let text: String = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.text())
        .collect();
    assert!(
        text.contains("owner: @evil\\n::error::forged\\u{1b}[31m<b>&"),
        "{text}"
    );
    let md = w.read("r.md");
    assert!(!md.contains("<b>") && !md.contains('\u{1b}'), "{md}");
    assert!(
        md.lines().all(|l| !l.starts_with("::error::forged")),
        "{md}"
    );
}

#[test]
fn codeowners_true_reads_the_repositorys_file_the_last_match_winning_after_the_budgets_paths() {
    let config = format!(
        "{CONFIG}\n[owners]\ncodeowners = true\n[owners.paths]\n\"optim/\" = \"opt-team\"\n"
    );
    let w = grown(&config);
    std::fs::create_dir_all(w.path(".git")).unwrap();
    std::fs::create_dir_all(w.path(".github")).unwrap();
    std::fs::write(
        w.path(".github/CODEOWNERS"),
        "# whole repository\n* @org/all\n*.py @org/python\nmodel.py @org/ml-team # the model\n",
    )
    .unwrap();
    // A CODEOWNERS at the root comes after .github/: never read.
    std::fs::write(w.path("CODEOWNERS"), "* @wrong\n").unwrap();
    let out = w.check().args(["--json", "v.json"]).assert().code(1);
    let line = fail_line(&out.get_output().stdout);
    assert!(
        line.contains("forward (model.py), owner: @org/ml-team"),
        "{line}"
    );
    let cause = cause(&verdict_json(&w));
    assert_eq!(cause["grew"][1]["owners"], serde_json::json!(["opt-team"]));
}

#[test]
fn a_codeowners_line_memgate_cannot_read_stops_the_gate_naming_the_file_and_line() {
    let config = format!("{CONFIG}\n[owners]\ncodeowners = \"OWNERS\"\n");
    let w = grown(&config);
    std::fs::write(w.path("OWNERS"), "*.py @a\n!model.py @b\n").unwrap();
    let out = w.check().assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("OWNERS:2:1"), "{stderr}");
    assert!(stderr.contains("negation"), "{stderr}");
}

#[test]
fn codeowners_true_with_no_file_in_the_three_places_is_an_error_naming_where_it_looked() {
    let config = format!("{CONFIG}\n[owners]\ncodeowners = true\n");
    let w = grown(&config);
    std::fs::create_dir_all(w.path(".git")).unwrap();
    let out = w.check().assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("owners.codeowners"), "{stderr}");
    assert!(
        stderr.contains("no CODEOWNERS file in .github/, the root or docs/"),
        "{stderr}"
    );
}

#[test]
fn a_report_is_never_written_over_the_codeowners_file_it_read() {
    let config = format!("{CONFIG}\n[owners]\ncodeowners = \"CODEOWNERS\"\n");
    let w = grown(&config);
    std::fs::write(w.path("CODEOWNERS"), "*.py @a\n").unwrap();
    w.check()
        .args(["--markdown", "CODEOWNERS"])
        .assert()
        .code(2);
    assert_eq!(w.read("CODEOWNERS"), "*.py @a\n");
}

#[test]
fn every_bad_owners_value_is_reported_at_its_own_line() {
    let config = format!(
        "{CONFIG}\n[owners]\nmention = \"yes\"\ncodeowners = 3\n[owners.paths]\n\
         \"!x.py\" = \"@a\"\n\"y.py\" = \"\"\n\"z.py\" = []\n"
    );
    let w = Workdir::new(&config);
    let out = w.check().arg("--validate").assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    for (line, what) in [
        (18, "true or false"),
        (19, "a file's path"),
        (21, "negation"),
        (22, "empty"),
        (23, "1 to 32 owners"),
    ] {
        assert!(
            stderr.contains(&format!("memgate.toml:{line}:")) && stderr.contains(what),
            "line {line} ({what}):\n{stderr}"
        );
    }
}
