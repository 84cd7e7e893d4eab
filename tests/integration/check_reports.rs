//! `memgate check` reports: JUnit, Markdown, JSON and the GitHub Actions
//! files, written in every outcome and safe whatever the frames hold.

use crate::common;

use std::collections::HashSet;

use common::{device, summary, Workdir, CONFIG, MIB};

/// rank0 regressed (with hostile site names), rank1 fine, rank2 new.
fn regressed_job() -> Workdir {
    let w = Workdir::new(CONFIG);
    let hostile = "evil ]]> <tag> & \u{1b}[31mred\u{1b}[0m \u{7} (x.py)";
    let base = vec![
        ("forward (model.py)", 60 * MIB),
        ("_init_group (adam.py)", 40 * MIB),
    ];
    let now = vec![
        ("forward (model.py)", 90 * MIB),
        ("_init_group (adam.py)", 40 * MIB),
        (hostile, 10 * MIB),
    ];
    w.write_summary(
        "golden/rank0.json",
        &summary("rank0.pickle", vec![device(0, 100 * MIB, &base)]),
    );
    w.write_summary(
        "snaps/rank0.json",
        &summary("rank0.pickle", vec![device(0, 140 * MIB, &now)]),
    );
    w.rank("rank1", Some(100 * MIB), 100 * MIB);
    w.rank("rank2", None, 100 * MIB);
    w
}

const OUTPUTS: [&str; 6] = [
    "--junit",
    "junit.xml",
    "--markdown",
    "report.md",
    "--json",
    "verdict.json",
];

fn run_in_actions(w: &Workdir, code: i32) -> String {
    let out = w
        .check()
        .args(OUTPUTS)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", w.path("step-summary.md"))
        .env("GITHUB_OUTPUT", w.path("github-output.txt"))
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn junit_parses_strictly_and_every_failure_has_a_message_and_a_body() {
    let w = regressed_job();
    run_in_actions(&w, 1);
    let xml = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let failures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    // overall-, dynamic- and allocated-peak moved together: one failure;
    // category.activation is another.
    assert_eq!(failures.len(), 2, "{xml}");
    for f in &failures {
        let message = f.attribute("message").unwrap();
        let body = f.text().unwrap_or("");
        assert!(!message.is_empty());
        assert!(
            body.starts_with(message),
            "body starts with the verdict line"
        );
    }
    let body = failures[0].text().unwrap();
    assert!(
        body.contains("(the rows add up to +40 MiB):\n  +30 MiB forward (model.py)\n"),
        "{body}"
    );
    assert!(
        body.contains(r"evil ]]> <tag> & \u{1b}[31mred\u{1b}[0m \u{7} (x.py)"),
        "{body}"
    );
    assert!(!xml.contains('\u{1b}'));
    let mut seen = HashSet::new();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let key = (
            case.attribute("classname").unwrap(),
            case.attribute("name").unwrap(),
        );
        assert!(seen.insert(key), "duplicate case {key:?}");
        assert!(!key.1.contains("MiB"), "names carry no values");
    }
    let skipped = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .count();
    assert_eq!(
        skipped, 2,
        "a figure without budget or baseline is no skip: only rank0's dynamic- and \
         allocated-peak are skipped, as echoes of its overall-peak"
    );
    let reported = doc
        .descendants()
        .filter(|n| n.has_tag_name("system-out"))
        .filter(|n| {
            n.text()
                .unwrap_or("")
                .starts_with("reported, not judged: rank2")
        })
        .count();
    assert_eq!(
        reported, 3,
        "rank2 has no baseline: its baseline-only checks are reported"
    );
}

#[test]
fn every_report_and_github_file_is_written_when_the_gate_passes_fails_or_errs() {
    for (case, code) in [("pass", 0), ("fail", 1), ("error", 2)] {
        let w = Workdir::new(&CONFIG.replace("snaps/*.json", "snaps/*"));
        let peak = if case == "fail" { 200 } else { 100 };
        w.rank("rank0", Some(100 * MIB), peak * MIB);
        if case == "error" {
            std::fs::write(w.path("snaps/rank1.pickle"), b"\x80\x04\x95").unwrap();
        }
        run_in_actions(&w, code);
        for f in ["junit.xml", "report.md", "verdict.json", "step-summary.md"] {
            assert!(!w.read(f).is_empty(), "{case}: {f} written");
        }
        let outputs = w.read("github-output.txt");
        assert!(outputs.contains(&format!("verdict={case}\n")), "{outputs}");
        assert!(outputs.contains("regressions="));
        assert!(outputs.contains("report=report.md\n"));
        let v: serde_json::Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
        assert_eq!(v["verdict"], case);
        assert!(w
            .read("verdict.json")
            .starts_with("{\n  \"schema_version\": 3,"));
    }
}

#[test]
fn annotations_point_at_the_budget_line_and_stop_at_ten() {
    let w = Workdir::new(CONFIG);
    for r in 0..4 {
        w.rank(&format!("rank{r}"), Some(100 * MIB), 1200 * MIB);
    }
    let stdout = run_in_actions(&w, 1);
    let notes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(notes.len(), 10, "{stdout}");
    assert!(
        notes[0].starts_with("::error file=memgate.toml,line="),
        "{}",
        notes[0]
    );
    assert!(stdout.contains("::error file=memgate.toml,line=11,col=16,title=memgate overall-peak::train rank0 dev0 overall-, dynamic-, allocated-peak +1.07 GiB"));
    assert!(notes[9].contains("more checks did not pass"));
}

#[test]
fn the_comment_size_markdown_stays_under_65536_bytes_and_says_what_it_left_out() {
    let w = Workdir::new(CONFIG);
    let sites: Vec<(String, u64)> = (0..50)
        .map(|i| {
            (
                format!("site_{i:03}_{} (model.py)", "x".repeat(60)),
                i * MIB,
            )
        })
        .collect();
    let sites: Vec<(&str, u64)> = sites.iter().map(|(s, b)| (s.as_str(), *b)).collect();
    for r in 0..64 {
        let cur: Vec<(&str, u64)> = sites.iter().map(|(s, b)| (*s, b + r * 1000)).collect();
        w.write_summary(
            &format!("snaps/rank{r}.json"),
            &summary("x", vec![device(0, 300 * MIB, &cur)]),
        );
        w.write_summary(
            &format!("golden/rank{r}.json"),
            &summary("x", vec![device(0, 100 * MIB, &sites)]),
        );
    }
    let out = w
        .check()
        .args(["--markdown", "report.md", "--comment-size"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(
        out.lines().count(),
        22,
        "the terminal summary stays short:\n{out}"
    );
    // 64 ranks, each: one finding of three peaks, a warning, a category.
    assert!(out.contains("… and 172 more (see the reports)"), "{out}");
    let md = w.read("report.md");
    assert!(md.len() <= 65_536, "{} bytes", md.len());
    assert!(md.starts_with("## memgate: ❌ fail"));
    let tail = &md[md.len() - 300..];
    assert!(tail.contains("_Left out to stay under 65536 bytes: the allocation-site diffs, the category tables, the passing checks"), "{tail}");
    w.check().args(["--markdown", "full.md"]).assert().code(1);
    let full = w.read("full.md");
    assert!(full.len() > md.len() && full.len() <= 1 << 20);
}

#[test]
fn junit_markdown_and_json_renderings_are_stable() {
    let w = regressed_job();
    w.check().args(OUTPUTS).assert().code(1);
    insta::assert_snapshot!("junit", w.read("junit.xml"));
    insta::assert_snapshot!("markdown", w.read("report.md"));
    insta::assert_snapshot!("json", w.read("verdict.json"));
}

#[test]
fn the_terminal_summary_has_no_colour_when_not_a_tty() {
    let w = regressed_job();
    let out = w.check().assert().code(1).get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(!out.contains('\u{1b}'));
    assert!(
        out.ends_with(
            "memgate: fail: 4 failed (2 regressions), 2 warned, 13 passed, 3 reported, 0 could not be judged
"
        ),
        "{out}"
    );
}
