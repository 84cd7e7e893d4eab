//! Every ```toml block of README.md and docs/*.md is a budget file that
//! `memgate check --validate` accepts (docs/config.md, "How the docs stay
//! true"). Blocks marked ```toml fragment are part of a target and are
//! validated after a minimal `[[target]]` put in front of them. The files a
//! block's globs, baselines and rules name are created in a scratch
//! directory first, since validation checks that they exist. The worked
//! example of docs/figures.md is run too: every number its output blocks
//! state must be what memgate prints.

use crate::common;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fenced TOML block: where it starts, whether it is a fragment, its text.
struct Block {
    file: String,
    line: usize,
    fragment: bool,
    text: String,
}

fn toml_blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut open: Option<(usize, Option<bool>, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match &mut open {
            None => {
                if let Some(info) = t.strip_prefix("```") {
                    let mut words = info.split_whitespace();
                    let is_toml = words.next() == Some("toml");
                    let fragment = words.any(|w| w == "fragment");
                    open = Some((i + 1, is_toml.then_some(fragment), String::new()));
                }
            }
            Some((start, kind, body)) => {
                if t.starts_with("```") {
                    if let Some(fragment) = *kind {
                        out.push(Block {
                            file: file.clone(),
                            line: *start,
                            fragment,
                            text: std::mem::take(body),
                        });
                    }
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: unclosed code fence");
    out
}

/// A path that the glob `pattern` matches: `*`/`?` become `x`, a class
/// `[…]` its first character.
fn instance_of(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => {
                if !out.ends_with('x') {
                    out.push('x');
                }
            }
            '[' => {
                let mut class = String::new();
                for d in chars.by_ref() {
                    if d == ']' && !class.is_empty() {
                        break;
                    }
                    class.push(d);
                }
                let class = class.trim_start_matches(['!', '^']);
                out.push(class.chars().next().unwrap_or('x'));
            }
            c => out.push(c),
        }
    }
    out
}

fn touch(dir: &Path, rel: &str, content: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Create what the budget text names, under `dir`.
fn create_inputs(dir: &Path, text: &str) {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return; // memgate reports the syntax error with its position
    };
    if let Some(rules) = doc
        .get("defaults")
        .and_then(|d| d.get("rules"))
        .and_then(|r| r.as_str())
    {
        if rules != "default" && rules != "mosaic" {
            touch(dir, rules, "[categories]\n");
        }
    }
    let targets = doc.get("target").and_then(|t| t.as_array());
    for t in targets.into_iter().flatten() {
        let patterns: Vec<&str> = match t.get("snapshots") {
            Some(toml::Value::String(s)) => vec![s.as_str()],
            Some(toml::Value::Array(a)) => a.iter().filter_map(|v| v.as_str()).collect(),
            _ => Vec::new(),
        };
        for p in patterns {
            touch(dir, &instance_of(p), "");
        }
        if let Some(b) = t.get("baseline").and_then(|b| b.as_str()) {
            let file_like = b.contains(['*', '?', '['])
                || Path::new(b).extension().is_some() && !b.ends_with('/');
            if file_like {
                touch(dir, &instance_of(b), "");
            } else {
                std::fs::create_dir_all(dir.join(b)).unwrap();
            }
        }
    }
}

const FRAGMENT_TARGET: &str =
    "[[target]]\nname = \"docs-fragment\"\nsnapshots = \"docs-fragment.pickle\"\n\n";

fn validate(block: &Block) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let text = if block.fragment {
        format!("{FRAGMENT_TARGET}{}", block.text)
    } else {
        block.text.clone()
    };
    create_inputs(dir.path(), &text);
    let config = dir.path().join("memgate.toml");
    std::fs::write(&config, &text).unwrap();
    let out = common::memgate()
        .args(["check", "--validate", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    if out.status.code() == Some(0) {
        Ok(())
    } else {
        Err(format!(
            "{}:{}: the ```toml block is not a valid budget file (exit {:?}):\n{}",
            block.file,
            block.line,
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_toml_block_in_the_readme_and_docs_is_a_valid_budget_file() {
    let blocks: Vec<Block> = doc_files().iter().flat_map(|f| toml_blocks(f)).collect();
    for must in ["README.md", "docs/config.md"] {
        assert!(
            blocks.iter().any(|b| b.file == must),
            "{must} has no ```toml block (the test would prove nothing)"
        );
    }
    let errors: Vec<String> = blocks.iter().filter_map(|b| validate(b).err()).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn a_broken_toml_block_is_caught() {
    let bad = Block {
        file: "inline".into(),
        line: 1,
        fragment: true,
        text: "[target.budget]\nallocated-peek = \"1 GiB\"\n".into(),
    };
    let err = validate(&bad).unwrap_err();
    assert!(err.contains("allocated-peek"), "{err}");
}

#[test]
fn glob_instances_match_their_pattern() {
    assert_eq!(
        instance_of("snapshots/rank*.pickle"),
        "snapshots/rankx.pickle"
    );
    assert_eq!(instance_of("r/rank[0-9].pickle"), "r/rank0.pickle");
    assert_eq!(instance_of("a/**/b?.json"), "a/x/bx.json");
}

/// The ```json blocks of `## Worked example` in docs/figures.md, in order:
/// each with the last `memgate …` code span written between it and the
/// block before it (none for the first, the snapshot).
fn worked_example() -> Vec<(Option<String>, String)> {
    let text = std::fs::read_to_string(root().join("docs/figures.md")).unwrap();
    let start = text
        .find("\n## Worked example\n")
        .expect("docs/figures.md has a `## Worked example` section");
    let section = &text[start + 1..];
    let section = section[3..]
        .find("\n## ")
        .map_or(section, |e| &section[..e + 3]);
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut block: Option<String> = None;
    for line in section.lines() {
        match &mut block {
            None if line.trim_start() == "```json" => block = Some(String::new()),
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some(body) if line.trim_start().starts_with("```") => {
                let command = prose
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|span| span.starts_with("memgate "))
                    .last()
                    .map(str::to_string);
                out.push((command, std::mem::take(body)));
                block = None;
                prose.clear();
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    out
}

/// Where `got` lacks a key of `want` or differs from it (objects compare
/// key by key, so `want` may be abridged; arrays element by element).
fn differences(
    path: &str,
    want: &serde_json::Value,
    got: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                match g.get(k) {
                    Some(gv) => differences(&format!("{path}.{k}"), v, gv, out),
                    None => out.push(format!("{path}.{k}: missing")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                differences(&format!("{path}[{i}]"), wv, gv, out);
            }
        }
        (w, g) if w == g => {}
        (w, g) => out.push(format!("{path}: the doc says {w}, memgate says {g}")),
    }
}

/// What the worked example's command prints for its one device.
fn device_output(command: &str, snapshot: &Path) -> serde_json::Value {
    let args: Vec<String> = command
        .split_whitespace()
        .skip(1)
        .map(|a| {
            let a = a.trim_matches('\'');
            if a == "example.json" {
                snapshot.display().to_string()
            } else {
                a.to_string()
            }
        })
        .collect();
    let out = common::memgate().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "`{command}`: {out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["snapshots"][0]["devices"][0].clone()
}

#[test]
fn the_worked_example_of_docs_figures_md_gives_the_numbers_it_states() {
    let blocks = worked_example();
    assert!(blocks.len() >= 3, "the worked example lost its blocks");
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("example.json");
    std::fs::write(&snapshot, &blocks[0].1).unwrap();
    let mut errors = Vec::new();
    for (command, block) in &blocks[1..] {
        let command = command
            .as_deref()
            .expect("each output block names its command");
        let want: serde_json::Value = serde_json::from_str(block)
            .unwrap_or_else(|e| panic!("the block after `{command}` is not JSON: {e}"));
        let mut found = Vec::new();
        differences("", &want, &device_output(command, &snapshot), &mut found);
        errors.extend(found.into_iter().map(|f| format!("`{command}`: {f}")));
    }
    assert!(
        errors.is_empty(),
        "docs/figures.md is wrong:\n{}",
        errors.join("\n")
    );
}

#[test]
fn a_wrong_number_in_the_worked_example_would_be_caught() {
    let got = serde_json::json!({"figures": {"allocated-peak": 11534336, "oom-events": 1}});
    let mut found = Vec::new();
    differences(
        "",
        &serde_json::json!({"figures": {"allocated-peak": 11534335}}),
        &got,
        &mut found,
    );
    differences(
        "",
        &serde_json::json!({"figures": {"reserved-peak": 1}}),
        &got,
        &mut found,
    );
    assert_eq!(
        found,
        [
            ".figures.allocated-peak: the doc says 11534335, memgate says 11534336",
            ".figures.reserved-peak: missing"
        ]
    );
}
