//! The shape of every tool's answer: `memgate.mcp.<tool>/1` with the CLI's
//! JSON document (where the CLI has one), the trust flags, byte figures as
//! exact integers beside a human string (counts stay counts); the
//! summary that stands in for the document is `summary.rs`.

use serde_json::{json, Map, Value};

use crate::snapshot::Snapshot;
use crate::units::Bytes;
use crate::vocab::Figure;

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
                // A byte figure gets a size; an event count stays a count.
                let bytes = Figure::from_id(id).is_some_and(Figure::is_bytes);
                let human = match v.as_u64() {
                    Some(n) if bytes => Bytes(n).to_string(),
                    _ => v.to_string(),
                };
                row.insert(id.clone(), json!({"value": v, "human": human}));
            }
            rows.push(Value::Object(row));
        }
    }
    rows
}

/// A device's `dump` (docs/figures.md#a-dump-without-history) with human
/// sizes and its largest live blocks' frames folded.
pub(crate) fn dump_view(device: &Value, dump: &Value) -> Value {
    let size = |k: &str| bytes(dump[k].as_u64().unwrap_or(0));
    let blocks: Vec<Value> = dump["largest-live"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            let frames = b["frames"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut view = json!({"size": bytes(b["bytes"].as_u64().unwrap_or(0)),
                "address": b["address"], "where": super::summary::fold(frames)});
            if let Some(story) = super::summary::no_story(b) {
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
            "figures": {"allocated-peak": 1_572_864, "oom-events": 2, "segment-allocs": 678}}]}]});
        let rows = figure_rows(&doc);
        assert_eq!(rows[0]["allocated-peak"]["value"], 1_572_864);
        assert_eq!(rows[0]["allocated-peak"]["human"], "1.50 MiB");
        assert_eq!(rows[0]["oom-events"]["human"], "2");
        assert_eq!(rows[0]["segment-allocs"]["human"], "678");
    }
}
