//! `memgate peak --metrics`: the figures of `peak --format json`, one
//! OpenMetrics line each, written to a file or (`-`) to stdout.

use crate::common;
use std::collections::BTreeSet;

/// `memgate peak` on the bundled example's snapshots, from the repository
/// root.
fn peak(args: &[&str]) -> String {
    let out = common::memgate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["peak", "examples/snapshots/rank0.pickle"])
        .args(["examples/snapshots/rank1.pickle"])
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// What the JSON document says, as the metrics lines it should give.
fn expected_lines(json: &str) -> BTreeSet<String> {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut lines = BTreeSet::new();
    for s in doc["snapshots"].as_array().unwrap() {
        let path = s["path"].as_str().unwrap();
        for d in s["devices"].as_array().unwrap() {
            let mut figures: Vec<(String, u64)> = d["figures"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            for k in ["steady-state-peak", "leak-per-iteration"] {
                if let Some(v) = d["time"][k].as_i64() {
                    figures.push((k.into(), v.max(0).unsigned_abs()));
                }
            }
            for (figure, value) in figures {
                let counts = ["trace-entries", "segment-allocs", "segment-frees"];
                let count = figure.ends_with("-events")
                    || figure.ends_with("-with-free-cache")
                    || counts.contains(&figure.as_str());
                let family = if count {
                    "memgate_figure"
                } else {
                    "memgate_figure_bytes"
                };
                lines.insert(format!(
                    "{family}{{snapshot=\"{path}\",device=\"{}\",figure=\"{figure}\"}} {value}",
                    d["device"]
                ));
            }
        }
    }
    lines
}

#[test]
fn every_figure_of_the_json_document_is_one_metrics_line_with_the_same_value() {
    let json = peak(&["--format", "json"]);
    let text = peak(&["--metrics", "-"]);
    assert!(text.ends_with("# EOF\n"), "{text}");
    let samples: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    let expected = expected_lines(&json);
    assert_eq!(expected.len(), 2 * 14, "two devices, fourteen figures each");
    assert_eq!(samples, expected);
}

#[test]
fn a_metrics_file_is_written_beside_the_text_report() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("metrics.txt");
    let text = peak(&["--metrics", file.to_str().unwrap()]);
    assert!(text.contains("Total Peak Dynamic Memory Usage"), "{text}");
    let metrics = std::fs::read_to_string(&file).unwrap();
    assert_eq!(metrics, peak(&["--metrics", "-"]));
}
