//! Issue 23 item 8: `phases` prints a summary per name first and cuts each
//! list at 20 with the count of the rest (`--all`: everything), in text and
//! JSON; on a compiled trace of 900 `dynamo_timed`-style spans (made by
//! `tests/fixtures/gen/generate.py --time`, whose figures are in
//! `tests/fixtures/time/expected.json`) the default text is under 60 lines.

use std::path::PathBuf;

use crate::common::memgate;
use serde_json::Value;

fn fixture() -> (PathBuf, Value) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/time");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    (
        dir.join("compiled_spans.pickle"),
        expected["compiled_spans.pickle"].clone(),
    )
}

fn phases(args: &[&str]) -> Vec<u8> {
    let (path, _) = fixture();
    memgate()
        .arg("phases")
        .args(args)
        .arg(path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

fn json(args: &[&str]) -> Value {
    let out = phases(&[args, &["--format", "json"]].concat());
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["schema_version"], 2);
    doc["snapshots"][0]["devices"][0].clone()
}

#[test]
fn the_summary_gives_each_names_spans_entries_and_largest_peak_as_generated() {
    let (_, want) = fixture();
    let d = json(&["--all"]);
    let summary = d["summary"].as_array().unwrap();
    let order: Vec<&str> = summary
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    // Most entries first, then by name.
    let mut want_order: Vec<(&String, &Value)> =
        want["names"].as_object().unwrap().iter().collect();
    want_order.sort_by_key(|(name, w)| (std::cmp::Reverse(w["entries"].as_u64().unwrap()), *name));
    let want_order: Vec<&str> = want_order.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, want_order);
    for n in summary {
        let w = &want["names"][n["name"].as_str().unwrap()];
        assert_eq!(n["spans"], w["spans"], "{n}");
        assert_eq!(n["entries"], w["entries"], "{n}");
        assert_eq!(
            n["largest-allocated-peak"], w["largest-allocated-peak"],
            "{n}"
        );
    }
    assert_eq!(d["phases"].as_array().unwrap().len() as u64, want["spans"]);
    assert_eq!(
        d["annotations"].as_array().unwrap().len() as u64,
        want["annotation-events"]
    );
    assert_eq!(d["phases-left-out"], 0);
    assert_eq!(d["annotations-left-out"], 0);
}

#[test]
fn by_default_each_list_is_cut_at_20_with_the_count_of_the_rest() {
    let (_, want) = fixture();
    let d = json(&[]);
    let spans = want["spans"].as_u64().unwrap();
    let events = want["annotation-events"].as_u64().unwrap();
    assert_eq!(d["phases"].as_array().unwrap().len(), 20);
    assert_eq!(d["phases-left-out"], spans - 20);
    assert_eq!(d["annotations"].as_array().unwrap().len(), 20);
    assert_eq!(d["annotations-left-out"], events - 20);
    // The summary is of every span, not of the 20 listed.
    assert_eq!(d["summary"], json(&["--all"])["summary"]);
    assert_eq!(d["summary-left-out"], 0);
}

#[test]
fn the_default_text_of_a_compiled_trace_is_its_summary_in_under_60_lines() {
    let (_, want) = fixture();
    let text = String::from_utf8(phases(&[])).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() < 60, "{} lines:\n{text}", lines.len());
    assert_eq!(
        lines[2],
        "    8 names (spans, trace entries inside them, largest allocated peak):"
    );
    let w = &want["names"]["async_compile.wait"];
    let row = format!(
        "      {:>7} {:>10} ",
        w["spans"].as_u64().unwrap(),
        w["entries"].as_u64().unwrap()
    );
    assert!(
        lines[3..11]
            .iter()
            .any(|l| l.starts_with(&row) && l.ends_with("  async_compile.wait")),
        "{text}"
    );
    let events = want["annotation-events"].as_u64().unwrap();
    assert!(
        text.contains(&format!("    {events} annotation events:")),
        "{text}"
    );
    assert!(text.contains(&format!(
        "      … and {} more annotation events (--all lists every one)",
        events - 20
    )));
    let spans = want["spans"].as_u64().unwrap();
    assert!(text.contains(&format!(
        "      … and {} more phases (--all lists every one)",
        spans - 20
    )));
    let all = String::from_utf8(phases(&["--all"])).unwrap();
    assert!(all.lines().count() as u64 > spans + events);
    assert!(!all.contains("more phases"));
}

/// 22 names of one long span each (`long-NN`: 40 + NN entries), 30 spans of
/// one entry each of `pad_mm_benchmark`, then one span of one entry,
/// `heavy`, that allocates 1 GiB. Entry k is at 10(k + 1) µs; a span of
/// entries a..=b opens 5 µs before a and closes 5 µs after b. Returns the snapshot and,
/// per name, (spans, entries), as built.
fn many_names() -> (serde_json::Value, Vec<(String, u64, u64)>) {
    use serde_json::json;
    let mut trace = Vec::new();
    let mut anns = Vec::new();
    let mut want = Vec::new();
    let mut span = |name: &str, sizes: &[u64], want: &mut Vec<(String, u64, u64)>| {
        let a = trace.len() as u64;
        for (j, &size) in sizes.iter().enumerate() {
            let t = 10 * (a + j as u64 + 1);
            let action = if j % 2 == 0 {
                "alloc"
            } else {
                "free_completed"
            };
            let addr = 0x1000 + 0x100 * a;
            trace.push(
                json!({"action": action, "addr": addr, "size": size, "time_us": t, "frames": []}),
            );
        }
        let b = trace.len() as u64 - 1;
        anns.push(
            json!({"name": name, "stage": "START", "device": 0, "time_us": 10 * (a + 1) - 5}),
        );
        anns.push(json!({"name": name, "stage": "END", "device": 0, "time_us": 10 * (b + 1) + 5}));
        match want
            .iter_mut()
            .find(|w: &&mut (String, u64, u64)| w.0 == name)
        {
            Some(w) => {
                w.1 += 1;
                w.2 += b + 1 - a;
            }
            None => want.push((name.to_owned(), 1, b + 1 - a)),
        }
    };
    for n in 0..22usize {
        span(&format!("long-{n:02}"), &vec![1024; 40 + n], &mut want);
    }
    for _ in 0..30 {
        span("pad_mm_benchmark", &[1024], &mut want);
    }
    span("heavy", &[1 << 30], &mut want);
    let doc = json!({"segments": [], "device_traces": [trace], "external_annotations": anns});
    (doc, want)
}

#[test]
fn the_default_summary_names_the_most_frequent_and_the_heaviest_span_within_20_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (doc, built) = many_names();
    let path = dir.path().join("many_names.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let file = path.to_str().unwrap();
    let run = |extra: &[&str]| -> Value {
        let args = [&["phases", "--format", "json"], extra, &[file]].concat();
        crate::common::json_of(&args)["snapshots"][0]["devices"][0].clone()
    };
    // Every name as built, so the trace is what the test means.
    let all = run(&["--all"]);
    for (name, spans, entries) in &built {
        let n = all["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name.as_str());
        assert_eq!(n.unwrap()["spans"], *spans, "{name}");
        assert_eq!(n.unwrap()["entries"], *entries, "{name}");
    }
    let d = run(&[]);
    let names: Vec<&str> = d["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 20);
    assert_eq!(d["summary-left-out"], built.len() as u64 - 20);
    assert!(names.contains(&"pad_mm_benchmark"), "{names:?}");
    assert!(names.contains(&"heavy"), "{names:?}");
    assert!(
        names.contains(&"long-21"),
        "the most entries stay: {names:?}"
    );
    let text = String::from_utf8(
        memgate()
            .arg("phases")
            .arg(&path)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        text.contains("  pad_mm_benchmark\n") && text.contains("  heavy\n"),
        "{text}"
    );
}
