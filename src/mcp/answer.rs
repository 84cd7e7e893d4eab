//! The shape of every tool's answer: `memgate.mcp.<tool>/1` with the CLI's
//! JSON document (where the CLI has one), the trust flags, byte figures as
//! exact integers beside a human string, and stacks with user code first.

use serde_json::{json, Map, Value};

use crate::analysis::sites;
use crate::snapshot::Snapshot;
use crate::units::Bytes;
use crate::vocab::NoStory;

/// The versioned kind of `tool`'s answer.
pub(crate) fn kind(tool: &str) -> String {
    format!("memgate.mcp.{tool}/1")
}

/// What limits how far an answer can be trusted, for every answer.
#[derive(Debug, Default, Clone)]
pub(crate) struct Trust {
    /// A trace started mid-run: the figures are lower bounds.
    pub(crate) lower_bound: bool,
    pub(crate) trace_incomplete: bool,
    /// `cuda`, `npu`, or both when files differ.
    pub(crate) device_kinds: Vec<&'static str>,
    /// Trace entries without a `time_us` (times and time windows unknown there).
    pub(crate) entries_missing_time: u64,
}

impl Trust {
    /// What the loaded snapshot says.
    pub(crate) fn add_snapshot(&mut self, s: &Snapshot) {
        let npu_frames = || {
            s.strings
                .iter()
                .any(|t| t.contains("torch_npu") || t.contains("c10_npu"))
        };
        let kind = if s.generation.starts_with("torch_npu") || npu_frames() {
            "npu"
        } else {
            "cuda"
        };
        if !self.device_kinds.contains(&kind) {
            self.device_kinds.push(kind);
        }
        let untimed = s.entries.iter().filter(|e| e.time().is_none()).count();
        self.entries_missing_time += u64::try_from(untimed).unwrap_or(u64::MAX);
    }

    /// What a document says: any `"trace-complete": false` in it.
    pub(crate) fn add_document(&mut self, doc: &Value) {
        if any_incomplete(doc) {
            self.trace_incomplete = true;
            self.lower_bound = true;
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "lower_bound": self.lower_bound,
            "trace_incomplete": self.trace_incomplete,
            "device_kind": match self.device_kinds.as_slice() {
                [] => Value::Null,
                [one] => Value::from(*one),
                many => Value::from(many.to_vec()),
            },
            "missing_time_us": self.entries_missing_time > 0,
            "entries_missing_time_us": self.entries_missing_time,
            "note": self.note(),
        })
    }

    fn note(&self) -> String {
        let mut parts = Vec::new();
        if self.lower_bound {
            parts.push(
                "a trace started mid-run (its ring buffer wrapped): its figures are lower bounds; \
                 record with a larger max_entries",
            );
        }
        if self.entries_missing_time > 0 {
            parts.push("some trace entries have no time_us: times and time windows skip them");
        }
        if self.device_kinds.contains(&"npu") {
            parts.push("an Ascend NPU snapshot (torch_npu): see the skill's NPU notes");
        }
        if parts.is_empty() {
            "complete traces; the figures are exact".into()
        } else {
            parts.join("; ")
        }
    }
}

fn any_incomplete(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            m.get("trace-complete") == Some(&Value::Bool(false)) || m.values().any(any_incomplete)
        }
        Value::Array(a) => a.iter().any(any_incomplete),
        _ => false,
    }
}

/// A byte count as `{"bytes": n, "human": "1.50 MiB"}`.
pub(crate) fn bytes(n: u64) -> Value {
    json!({"bytes": n, "human": Bytes(n).to_string()})
}

/// Figures that are counts, not bytes.
const COUNTS: &[&str] = &["oom-events", "alloc-events", "trace-entries"];

/// Each device's figures in `doc` (`snapshots[].devices[].figures`) as
/// rows with the exact value and a human string.
pub(crate) fn figure_rows(doc: &Value) -> Vec<Value> {
    let mut rows = Vec::new();
    for snap in doc["snapshots"].as_array().into_iter().flatten() {
        for dev in snap["devices"].as_array().into_iter().flatten() {
            let Some(figures) = dev["figures"].as_object() else {
                continue;
            };
            let mut row = Map::new();
            row.insert("path".into(), snap["path"].clone());
            row.insert("device".into(), dev["device"].clone());
            for (id, v) in figures {
                let human = match (v.as_u64(), COUNTS.contains(&id.as_str())) {
                    (Some(n), false) => Bytes(n).to_string(),
                    _ => v.to_string(),
                };
                row.insert(id.clone(), json!({"value": v, "human": human}));
            }
            rows.push(Value::Object(row));
        }
    }
    rows
}

/// One frame as `function (file:line)` split: the location an editor can
/// open, and whether it is user code (a Python file in no library: not in
/// site-packages, dist-packages, the standard library or torch).
fn frame(text: &str) -> Value {
    let (function, at) = match text.rfind(" (") {
        Some(i) if text.ends_with(')') => (&text[..i], &text[i + 2..text.len() - 1]),
        _ => (text, ""),
    };
    let file = at.rsplit_once(':').map_or(at, |(f, _)| f);
    // The rule that picks a stack's site (docs/figures.md#stacks-and-sites).
    let user = sites::is_python(file) && !sites::in_library(file);
    json!({"at": at, "function": function, "user": user})
}

/// At most this many frames of a stack in an answer's `where`.
const FRAMES: usize = 8;

/// A stack's frames with user code first (their order kept), then the
/// rest, at most [`FRAMES`], and how many there were.
pub(crate) fn user_first(frames: &[Value]) -> Value {
    let parsed: Vec<Value> = frames.iter().filter_map(Value::as_str).map(frame).collect();
    let (mut user, rest): (Vec<Value>, Vec<Value>) =
        parsed.iter().cloned().partition(|f| f["user"] == true);
    user.extend(rest);
    user.truncate(FRAMES);
    json!({"frames": user, "total": parsed.len()})
}

/// `stacks` (a document's stack groups: bytes, count, frames) with human
/// sizes and user frames first.
pub(crate) fn stacks_view(stacks: &Value) -> Vec<Value> {
    stacks
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let frames = g["frames"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut view = json!({
                "size": bytes(g["bytes"].as_u64().unwrap_or(0)),
                "count": g["count"],
                "where": user_first(frames),
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

/// A device's `dump` (docs/figures.md#a-dump-without-history) with human
/// sizes and its largest live blocks' frames user first.
pub(crate) fn dump_view(device: &Value, dump: &Value) -> Value {
    let size = |k: &str| bytes(dump[k].as_u64().unwrap_or(0));
    let blocks: Vec<Value> = dump["largest-live"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            let frames = b["frames"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut view = json!({"size": bytes(b["bytes"].as_u64().unwrap_or(0)),
                "address": b["address"], "where": user_first(frames)});
            if let Some(story) = no_story(b) {
                view["no_frames"] = story;
            }
            view
        })
        .collect();
    json!({
        "device": device,
        "live": size("live"),
        "live_blocks": dump["live-blocks"],
        "reserved": size("reserved"),
        "cached_free": size("cached-free"),
        "largest_free_block": size("largest-free-block"),
        "largest_live": blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_frames_come_first_with_their_file_and_line() {
        let frames = json!([
            "at::native::empty_like(at::Tensor const&) (??:0)",
            "_init_group (/opt/conda/lib/python3.11/site-packages/torch/optim/adam.py:147)",
            "train_step (/workspace/nanogpt/train.py:88)",
            "<module> (/workspace/nanogpt/run.py:5)",
        ]);
        let v = user_first(frames.as_array().unwrap());
        assert_eq!(v["total"], 4);
        assert_eq!(v["frames"][0]["at"], "/workspace/nanogpt/train.py:88");
        assert_eq!(v["frames"][0]["function"], "train_step");
        assert_eq!(v["frames"][1]["at"], "/workspace/nanogpt/run.py:5");
        assert_eq!(v["frames"][2]["user"], false);
    }

    #[test]
    fn an_incomplete_trace_anywhere_sets_the_lower_bound_flag() {
        let mut t = Trust::default();
        t.add_document(&json!({"snapshots": [{"devices": [{"trace-complete": true}]}]}));
        assert!(!t.lower_bound);
        t.add_document(&json!({"snapshots": [{"devices": [{"trace-complete": false}]}]}));
        assert!(t.lower_bound && t.trace_incomplete);
        assert!(t.to_json()["note"]
            .as_str()
            .unwrap()
            .contains("lower bounds"));
    }

    #[test]
    fn byte_figures_get_a_human_string_and_counts_do_not() {
        let doc = json!({"snapshots": [{"path": "a", "devices": [{"device": 0,
            "figures": {"allocated-peak": 1_572_864, "oom-events": 2}}]}]});
        let rows = figure_rows(&doc);
        assert_eq!(rows[0]["allocated-peak"]["value"], 1_572_864);
        assert_eq!(rows[0]["allocated-peak"]["human"], "1.50 MiB");
        assert_eq!(rows[0]["oom-events"]["human"], "2");
    }
}
