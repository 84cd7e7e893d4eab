//! A snapshot's strings reach CI logs: a frame or file name must not be able
//! to start a log line of its own (`::error::…`) or send terminal escapes.

use crate::common;

use common::{device, summary, Workdir, CONFIG, MIB};

/// What a pull request can put in a name: a newline and a workflow
/// command, a terminal escape, and the characters of Markdown tables.
const FORGED: &str = "\n::error::forged\u{1b}[31m|`x`";

/// No line of `text` is one the name made: none starts a workflow command
/// other than memgate's own annotations, none holds a raw escape.
fn no_forged_line(what: &str, text: &str) {
    assert!(!text.contains('\u{1b}'), "{what}: {text}");
    for l in text.lines() {
        assert!(!l.starts_with("::error::forged"), "{what}: {l}");
        assert!(!l.trim_start().starts_with("::error::"), "{what}: {l}");
    }
}

/// Every row of every Markdown table has as many cells as its header.
fn tables_hold(what: &str, md: &str) {
    let cells = |l: &str| {
        let mut n = 0;
        let mut escaped = false;
        for c in l.chars() {
            match c {
                '\\' if !escaped => escaped = true,
                '|' if !escaped => n += 1,
                _ => escaped = false,
            }
            if c != '\\' {
                escaped = false;
            }
        }
        n
    };
    let mut width = None;
    for l in md.lines() {
        if !l.starts_with('|') {
            width = None;
            continue;
        }
        let w = *width.get_or_insert(cells(l));
        assert_eq!(cells(l), w, "{what}: a row breaks its table: {l}");
    }
}

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
        let out = common::memgate().arg(cmd).arg(&path).output().unwrap();
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
        let out = common::memgate()
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

#[test]
fn hostile_file_target_category_and_site_names_cannot_forge_a_line_in_any_check_output() {
    let config = CONFIG
        .replace(
            "name = \"train\"",
            "name = \"train\\n::error::forged\\u001b[31m|`x`\"",
        )
        .replace("snaps/*.json", "snaps/*");
    let w = Workdir::new(&config);
    let name = format!("rank0{FORGED}");
    let site = format!("site{FORGED} (x.py)");
    let category = format!("cat{FORGED}");
    let dev = |peak: u64| {
        let mut d = device(
            0,
            peak,
            &[("forward (model.py)", peak / 2), (&site, peak / 2)],
        );
        d.categories
            .at_allocated_peak
            .insert(category.clone(), peak / 4);
        d
    };
    w.write_summary(
        &format!("golden/{name}.json"),
        &summary("x.pickle", vec![dev(100 * MIB)]),
    );
    w.write_summary(
        &format!("snaps/{name}.json"),
        &summary("x.pickle", vec![dev(300 * MIB)]),
    );
    // A second snapshot that cannot be read: its name reaches the errors.
    std::fs::write(
        w.path(&format!("snaps/bad{FORGED}.pickle")),
        b"\x80\x04\x95",
    )
    .unwrap();
    let out = w
        .check()
        .args([
            "--junit",
            "junit.xml",
            "--markdown",
            "report.md",
            "--json",
            "v.json",
        ])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", w.path("step-summary.md"))
        .env("GITHUB_OUTPUT", w.path("github-output.txt"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stdout.contains("::error file=memgate.toml"), "{stdout}");
    assert!(stdout.contains("rank0\\n::error::forged"), "{stdout}");
    no_forged_line("stdout", &stdout);
    no_forged_line("stderr", &stderr);
    for l in w.read("github-output.txt").lines() {
        assert!(
            ["verdict=", "regressions=", "report="]
                .iter()
                .any(|k| l.starts_with(k)),
            "GITHUB_OUTPUT: {l}"
        );
    }
    for f in ["report.md", "step-summary.md"] {
        let md = w.read(f);
        assert!(md.contains("rank0\\n::error::forged"), "{f}: {md}");
        assert!(md.contains("cat\\n::error::forged"), "{f}: {md}");
        no_forged_line(f, &md);
        tables_hold(f, &md);
    }
    let xml = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed JUnit");
    for n in doc.descendants() {
        for a in n.attributes() {
            assert!(!a.value().contains('\n'), "{}={:?}", a.name(), a.value());
        }
    }
    assert!(xml.contains("site\\n::error::forged"), "{xml}");
    no_forged_line("junit.xml", &xml);
    // The JSON keeps names as they are; serde_json escapes what JSON needs.
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(
        v["targets"][0]["name"],
        "train\n::error::forged\u{1b}[31m|`x`"
    );
}

#[test]
fn diff_prints_hostile_file_and_site_names_on_one_line_each() {
    let w = Workdir::new(CONFIG);
    let site = format!("site{FORGED} (x.py)");
    let base = w.path(&format!("snaps/a{FORGED}.json"));
    let new = w.path(&format!("snaps/b{FORGED}.json"));
    let write = |p: &std::path::Path, peak: u64| {
        let s = summary("x.pickle", vec![device(0, peak, &[(&site, peak)])]);
        std::fs::write(p, serde_json::to_string(&s).unwrap()).unwrap();
    };
    write(&base, 100 * MIB);
    write(&new, 200 * MIB);
    let missing = w.path(&format!("snaps/c{FORGED}.json"));
    for (args, code) in [(vec![&base, &new], 0), (vec![&base, &missing], 2)] {
        let out = common::memgate().arg("diff").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        no_forged_line("diff stdout", &stdout);
        no_forged_line("diff stderr", &stderr);
        if code == 0 {
            assert!(stdout.contains("site\\n::error::forged"), "{stdout}");
            assert!(stdout.contains("a\\n::error::forged"), "{stdout}");
        } else {
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("c\\n::error::forged"), "{stderr}");
        }
    }
}

/// What no report may write raw: bidi controls, the line and paragraph
/// separators, a C1 control.
const UNSEEN: [char; 4] = ['\u{202e}', '\u{2028}', '\u{2029}', '\u{85}'];

#[test]
fn hostile_category_phase_and_file_names_from_the_budget_and_the_run_are_escaped_in_every_report() {
    // Category names (budget-defined, so the analysis gives them bytes), a
    // phase name, and a snapshot file name with a mention and a bare URL.
    let config = r#"
[categories]
"o`| **FAKE pass** |" = "data\\.py"
"x\n::error title=forged::boom" = "model\\.py"
"r\u202El \u2028 \u2029 \u0085 https://evil.example/x @octocat" = "train\\.py"

[[target]]
name = "train"
snapshots = "snaps/*"

[target.budget.category]
"o`| **FAKE pass** |" = "1 B"
"x\n::error title=forged::boom" = "1 B"
"r\u202El \u2028 \u2029 \u0085 https://evil.example/x @octocat" = "1 B"

[target.budget.phase."p|`**ph**`\n::error title=forged::phase www.evil.example"]
allocated-peak = "1 GiB"
"#;
    let w = Workdir::new(config);
    std::fs::copy(
        common::fixture("main.json"),
        w.path("snaps/rank0 @octocat www.evil.example.json"),
    )
    .unwrap();
    let reports = [
        "--junit",
        "junit.xml",
        "--markdown",
        "report.md",
        "--json",
        "v.json",
        "--html",
        "page.html",
        "--metrics",
        "metrics.txt",
    ];
    let out = w
        .check()
        .args(reports)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stdout.contains("category.x\\n::error title=forged::boom"),
        "{stdout}"
    );
    for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        for l in text.lines() {
            assert!(!l.starts_with("::error title=forged"), "{what}: {l}");
        }
        assert!(!text.contains(UNSEEN), "{what}: {text}");
    }
    let md = w.read("report.md");
    tables_hold("report.md", &md);
    no_forged_line("report.md", &md);
    assert!(!md.lines().any(|l| l.starts_with("::error title=forged")));
    for raw in ["**FAKE", "`o`", "@octocat", "https://evil", "www.evil"] {
        assert!(!md.contains(raw), "report.md holds {raw:?}:\n{md}");
    }
    assert!(!md.contains(UNSEEN), "report.md:\n{md}");
    assert!(
        md.contains("category.o\\`\\| \\*\\*FAKE pass\\*\\* \\|"),
        "{md}"
    );
    assert!(md.contains("@\u{200d}octocat"), "{md}");
    assert!(md.contains("r\\u{202e}l \\u{2028}"), "{md}");
    // The failing category's row keeps its status in its last cell.
    let row = md
        .lines()
        .find(|l| l.contains("FAKE pass") && l.starts_with('|'))
        .expect("the hostile category's row");
    assert!(row.ends_with("| ❌ fail |"), "{row}");
    let xml = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed JUnit");
    for n in doc.descendants() {
        for a in n.attributes() {
            assert!(!a.value().contains('\n'), "{}={:?}", a.name(), a.value());
        }
    }
    for file in ["junit.xml", "page.html", "metrics.txt"] {
        let text = w.read(file);
        assert!(!text.contains(UNSEEN), "{file}:\n{text}");
        for l in text.lines() {
            assert!(!l.starts_with("::error title=forged"), "{file}: {l}");
        }
    }
    // The JSON keeps names as they are; serde_json escapes what JSON needs.
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    let ids: Vec<&str> = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"category.x\n::error title=forged::boom"),
        "{ids:?}"
    );
}
