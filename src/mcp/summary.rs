//! The summary an answer carries instead of the CLI's whole document: the
//! same figures, placements and lists, with every call stack folded to the
//! frames a reader acts on (user code as `file:line`) and a count of the
//! C++ and library frames left out. `detail: "full"` gives the document.

use serde_json::{json, Map, Value};

use crate::analysis::sites;
use crate::units::Bytes;
use crate::vocab::NoStory;

/// At most this many frames of a stack are named in a summary.
const FRAMES: usize = 4;
/// Without user code, this many library frames (the nearest to the caller
/// in Python) stand in for it.
const LIBRARY_FRAMES: usize = 2;

/// One frame as `function (file:line)` split: the location an editor can
/// open, and what kind of code it is (docs/figures.md#stacks-and-sites).
fn frame(text: &str) -> (Value, Kind) {
    let (function, at) = match text.rfind(" (") {
        Some(i) if text.ends_with(')') => (&text[..i], &text[i + 2..text.len() - 1]),
        _ => (text, ""),
    };
    let file = at.rsplit_once(':').map_or(at, |(f, _)| f);
    let kind = match (sites::is_python(file), sites::in_library(file)) {
        (true, false) => Kind::User,
        (true, true) => Kind::Library,
        (false, _) => Kind::Native,
    };
    // `file:line function`: what an editor opens first, then the name.
    let shown = if at.is_empty() {
        function.to_string()
    } else {
        format!("{at} {function}")
    };
    (Value::from(shown), kind)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Library,
    Native,
}

/// A stack folded: its user frames (their order kept, at most [`FRAMES`]),
/// or without any the first Python library frames; how many frames of
/// each kind were left out, and how many there were.
pub(crate) fn fold(frames: &[Value]) -> Value {
    let parsed: Vec<(Value, Kind)> = frames.iter().filter_map(Value::as_str).map(frame).collect();
    let of = |k: Kind| parsed.iter().filter(move |(_, kind)| *kind == k);
    let user = of(Kind::User).count();
    let shown: Vec<Value> = if user > 0 {
        of(Kind::User)
            .take(FRAMES)
            .map(|(f, _)| f.clone())
            .collect()
    } else {
        of(Kind::Library)
            .take(LIBRARY_FRAMES)
            .map(|(f, _)| f.clone())
            .collect()
    };
    let library_shown = if user > 0 { 0 } else { shown.len() };
    json!({
        "frames": shown,
        "user_frames": user,
        "folded": {
            "user": user.saturating_sub(FRAMES),
            "library": of(Kind::Library).count() - library_shown,
            "native": of(Kind::Native).count(),
        },
        "total": parsed.len(),
    })
}

/// `stacks` (a document's stack groups: bytes, count, frames) with human
/// sizes and folded frames.
pub(crate) fn stacks_view(stacks: &Value) -> Vec<Value> {
    stacks
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let frames = g["frames"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut view = json!({
                "size": {"bytes": g["bytes"], "human": Bytes(g["bytes"].as_u64().unwrap_or(0)).to_string()},
                "count": g["count"],
                "where": fold(frames),
            });
            if let Some(story) = no_story(g) {
                view["no_frames"] = story;
            }
            view
        })
        .collect()
}

/// `{"name": "pre-trace", "meaning": …}` for a stack group or block of a
/// document without frames (its `no-frames`): the name every output uses,
/// explained (docs/figures.md#memory-with-no-story).
pub(crate) fn no_story(g: &Value) -> Option<Value> {
    let n = NoStory::from_id(g["no-frames"].as_str()?)?;
    Some(json!({"name": n.id(), "meaning": n.meaning()}))
}

/// `doc` as a summary: each device without the lists in `shown` (the
/// answer presents them itself) and without its environment (the same on
/// every device; in the full document), a moment's stacks dropped where
/// they are the peak's, and every other list of frames folded.
pub(crate) fn summary(doc: &Value, shown: &[&str]) -> Value {
    let mut out = doc.clone();
    for snap in out["snapshots"].as_array_mut().into_iter().flatten() {
        for dev in snap["devices"].as_array_mut().into_iter().flatten() {
            let Some(dev) = dev.as_object_mut() else {
                continue;
            };
            if same_stacks(dev) {
                dev.remove("stacks-at-moment");
            }
            for key in shown.iter().chain(&["environment"]) {
                dev.remove(*key);
            }
            lean(dev);
        }
    }
    fold_all(&mut out);
    out
}

/// A device's categories without the empty ones, and its sites without
/// the recorded path (the site names the file; the path is in the full
/// document).
fn lean(dev: &mut Map<String, Value>) {
    if let Some(Value::Object(cats)) = dev.get_mut("categories") {
        for (_, at) in cats.iter_mut() {
            if let Value::Object(by) = at {
                by.retain(|_, v| v.as_u64() != Some(0));
            }
        }
    }
    for key in ["sites-at-peak", "sites"] {
        if let Some(Value::Array(sites)) = dev.get_mut(key) {
            for site in sites.iter_mut().filter_map(Value::as_object_mut) {
                site.remove("recorded");
            }
        }
    }
}

/// A check verdict as a summary: per device its placement and each
/// check's status and current value (the checks that did not pass are
/// listed whole beside it); categories and sites only in the full document.
pub(crate) fn verdict(doc: &Value) -> Value {
    let mut out = doc.clone();
    for t in out["targets"].as_array_mut().into_iter().flatten() {
        for s in t["snapshots"].as_array_mut().into_iter().flatten() {
            for d in s["devices"].as_array_mut().into_iter().flatten() {
                let Some(dev) = d.as_object_mut() else {
                    continue;
                };
                let checks: Map<String, Value> = dev
                    .get("checks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| {
                        let id = c["id"].as_str()?.to_string();
                        Some((id, json!({"status": c["status"], "current": c["current"]})))
                    })
                    .collect();
                dev.insert("checks".into(), Value::Object(checks));
                dev.remove("categories");
                dev.remove("sites");
            }
        }
    }
    fold_all(&mut out);
    out
}

/// Whether the moment's stacks are those at the peak (`peak` at the
/// allocated peak asks for both).
fn same_stacks(dev: &Map<String, Value>) -> bool {
    match (dev.get("stacks-at-moment"), dev.get("stacks-at-peak")) {
        (Some(m), Some(p)) => m["stacks"] == *p,
        _ => false,
    }
}

/// Fold every `frames` list of strings below `v`.
fn fold_all(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                match item {
                    Value::Array(frames)
                        if k == "frames" && frames.iter().all(Value::is_string) =>
                    {
                        *item = fold(frames);
                    }
                    _ => fold_all(item),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(fold_all),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("torch::unwind::unwind{i}() (??:0)"))
            .collect()
    }

    #[test]
    fn user_frames_come_first_as_file_and_line_and_the_rest_are_counted() {
        let mut frames = native(187);
        frames.push(
            "_init_group (/opt/conda/lib/python3.11/site-packages/torch/optim/adam.py:147)".into(),
        );
        frames.push("train_step (/workspace/nanogpt/train.py:88)".into());
        frames.push("<module> (/workspace/nanogpt/run.py:5)".into());
        let frames: Vec<Value> = frames.into_iter().map(Value::from).collect();
        let v = fold(&frames);
        assert_eq!(v["total"], 190);
        assert_eq!(v["user_frames"], 2);
        assert_eq!(v["frames"].as_array().unwrap().len(), 2);
        assert_eq!(v["frames"][0], "/workspace/nanogpt/train.py:88 train_step");
        assert_eq!(v["frames"][1], "/workspace/nanogpt/run.py:5 <module>");
        assert_eq!(v["folded"], json!({"user": 0, "library": 1, "native": 187}));
    }

    #[test]
    fn a_stack_without_user_code_names_its_first_library_frames() {
        let mut frames = native(3);
        for i in 0..5 {
            frames.push(format!(
                "f{i} (/usr/lib/python3.11/site-packages/torch/nn/m{i}.py:{i})"
            ));
        }
        let frames: Vec<Value> = frames.into_iter().map(Value::from).collect();
        let v = fold(&frames);
        let shown = v["frames"].as_array().unwrap();
        assert_eq!(shown.len(), LIBRARY_FRAMES);
        assert_eq!(
            shown[0],
            "/usr/lib/python3.11/site-packages/torch/nn/m0.py:0 f0"
        );
        assert_eq!(v["user_frames"], 0);
        assert_eq!(
            v["folded"],
            json!({"user": 0, "library": 5 - LIBRARY_FRAMES, "native": 3})
        );
    }

    #[test]
    fn many_user_frames_are_cut_and_the_cut_is_counted() {
        let frames: Vec<Value> = (0..10)
            .map(|i| Value::from(format!("f{i} (/w/train.py:{i})")))
            .collect();
        let v = fold(&frames);
        assert_eq!(v["frames"].as_array().unwrap().len(), FRAMES);
        assert_eq!(v["folded"]["user"], 10 - FRAMES);
    }

    #[test]
    fn the_summary_keeps_every_figure_and_folds_every_stack() {
        let stacks = json!([{"bytes": 1024, "count": 678,
                             "frames": ["a (??:0)", "b (??:0)", "step (/w/train.py:3)"]}]);
        let doc = json!({"schema_version": 1, "snapshots": [{"path": "x", "devices": [{
            "device": 0,
            "figures": {"allocated-peak": 1024, "segment-allocs": 678},
            "stacks-at-peak": stacks,
            "stacks-at-moment": {"at": "allocated-peak", "stacks": stacks},
            "oom": [{"requested": 5, "frames": ["c (??:0)"]}],
            "categories": {"rules": "default", "at-allocated-peak": {"activation": 7, "gradient": 0}},
            "sites-at-peak": [{"site": "step (train.py)", "bytes": 9, "count": 1, "recorded": "/w/train.py"}],
            "environment": {"generation": "torch 2.5+"},
        }]}]});
        let s = summary(&doc, &["stacks-at-peak"]);
        let dev = &s["snapshots"][0]["devices"][0];
        assert_eq!(dev["figures"], doc["snapshots"][0]["devices"][0]["figures"]);
        assert!(dev.get("stacks-at-peak").is_none());
        assert!(
            dev.get("stacks-at-moment").is_none(),
            "the moment repeats the peak"
        );
        assert_eq!(dev["oom"][0]["requested"], 5);
        assert_eq!(dev["oom"][0]["frames"]["folded"]["native"], 1);
        assert_eq!(s["schema_version"], 1);
        assert_eq!(
            dev["categories"],
            json!({"rules": "default", "at-allocated-peak": {"activation": 7}})
        );
        assert_eq!(
            dev["sites-at-peak"],
            json!([{"site": "step (train.py)", "bytes": 9, "count": 1}])
        );
        assert!(dev.get("environment").is_none());
    }

    #[test]
    fn a_verdict_summary_keeps_each_check_status_and_current_value() {
        let doc = json!({"verdict": "fail", "targets": [{"name": "t", "snapshots": [{"devices": [{
            "device": 0,
            "checks": [{"id": "allocated-peak", "status": "fail", "unit": "bytes",
                        "current": 9, "budget": 8, "findings": [{"kind": "over"}]}],
            "categories": [{"category": "activation", "current": 5}],
        }]}]}]});
        let s = verdict(&doc);
        let dev = &s["targets"][0]["snapshots"][0]["devices"][0];
        assert_eq!(
            dev["checks"]["allocated-peak"],
            json!({"status": "fail", "current": 9})
        );
        assert!(dev.get("categories").is_none());
        assert_eq!(s["verdict"], "fail");
    }

    #[test]
    fn a_moment_other_than_the_peak_is_kept_folded() {
        let doc = json!({"snapshots": [{"devices": [{
            "stacks-at-peak": [{"bytes": 1, "count": 1, "frames": ["a (/w/a.py:1)"]}],
            "stacks-at-moment": {"at": "reserved-peak",
                "stacks": [{"bytes": 2, "count": 1, "frames": ["b (/w/b.py:2)"]}]},
        }]}]});
        let s = summary(&doc, &[]);
        let m = &s["snapshots"][0]["devices"][0]["stacks-at-moment"]["stacks"][0];
        assert_eq!(m["bytes"], 2);
        assert_eq!(m["frames"]["frames"][0], "/w/b.py:2 b");
    }
}
