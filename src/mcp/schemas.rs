//! Each tool's `outputSchema`: the shape of its `structuredContent`, so a
//! client validates and reads an answer by its fields rather than by the
//! text. Every answer has its `kind` (the tool's, as a constant) and
//! `trust`; each tool adds the fields it answers with (docs/mcp.md says
//! what they mean). Objects stay open: a field added later breaks no
//! client.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{json, Map, Value};

use super::answer;

/// The fields of every answer that carries a CLI document.
fn with_document() -> Value {
    json!({
        "summary": {"type": "object", "description": "the document's figures, verdict and top stacks, user frames first"},
        "document": {"type": ["object", "null"], "description": "the CLI's whole JSON document (detail: full)"},
        "document_written": {"type": "string", "description": "where document_to wrote the whole document"},
        "next_cursor": {"type": ["string", "null"], "description": "the cursor of the next page, null on the last"},
    })
}

/// `{"bytes": n, "human": "…"}`.
fn bytes() -> Value {
    json!({"type": "object", "properties": {"bytes": {"type": "integer"}, "human": {"type": "string"}},
           "required": ["bytes", "human"]})
}

fn array_of(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// What `tool` adds to every answer's fields.
fn fields(tool: &str) -> Value {
    let object = || json!({"type": "object"});
    let text = || json!({"type": "string"});
    let rows = || array_of(object());
    match tool {
        "peak" => json!({"figures": rows(), "where": rows()}),
        "profile" => json!({"figures": rows(), "html": text()}),
        "live_at" => json!({"window": {"type": ["string", "null"]}, "live": rows()}),
        "diff" => json!({"html": text()}),
        "ranks" => json!({"ranks": rows(), "spread": object(), "note": text()}),
        "explain_oom" => json!({
            "verdict": text(), "oom_events": {"type": "integer", "minimum": 0},
            "ooms": rows(), "dump": rows(), "where": rows(),
        }),
        "check" => json!({
            "verdict": {"type": "string", "description": "pass, warn, fail or error"},
            "exit_code": {"type": "integer"},
            "counts": object(),
            "errors": array_of(text()),
            "findings": array_of(text()),
            "checks": rows(),
            "html": text(),
        }),
        "summarize" => json!({"written": array_of(json!({
            "type": "object",
            "properties": {"snapshot": text(), "summary": text(), "size": bytes()},
            "required": ["snapshot", "summary", "size"],
        }))}),
        _ => json!({}),
    }
}

/// The fields `tool` always answers with, besides `kind` and `trust`.
fn required(tool: &str) -> &'static [&'static str] {
    match tool {
        "peak" => &["figures", "where"],
        "profile" => &["figures"],
        "live_at" => &["live"],
        "ranks" => &["ranks", "spread"],
        "explain_oom" => &["verdict", "oom_events", "ooms"],
        "check" => &["verdict", "exit_code", "counts", "findings", "checks"],
        "summarize" => &["written"],
        _ => &[],
    }
}

/// The tools that answer with (a summary of) a CLI document.
const DOCUMENT_TOOLS: [&str; 8] = [
    "inspect",
    "peak",
    "profile",
    "phases",
    "live_at",
    "diff",
    "explain_oom",
    "check",
];

/// `tool`'s output schema as a JSON value.
pub(crate) fn schema_value(tool: &str) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "kind".into(),
        json!({"const": answer::kind(tool), "description": "the answer's kind and version"}),
    );
    properties.insert(
        "trust".into(),
        json!({"type": "object", "description": "what limits how far the figures can be trusted: read it first"}),
    );
    properties.insert(
        "cache".into(),
        json!({"type": "object", "description": "snapshots reused from the session's cache or decoded"}),
    );
    properties.insert(
        "cut".into(),
        json!({"type": "array", "items": {"type": "string"}, "description": "lists cut to stay under the answer cap"}),
    );
    if DOCUMENT_TOOLS.contains(&tool) {
        properties.extend(object(with_document()));
    }
    properties.extend(object(fields(tool)));
    let mut needed = vec!["kind", "trust"];
    needed.extend(required(tool));
    json!({"type": "object", "properties": properties, "required": needed})
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `tool`'s output schema, as the tool router takes it.
pub(crate) fn output_schema(tool: &str) -> Arc<JsonObject> {
    Arc::new(object(schema_value(tool)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tools_schema_names_its_own_kind_and_the_fields_it_requires() {
        for tool in ["peak", "check", "summarize", "ranks"] {
            let s = schema_value(tool);
            assert_eq!(s["properties"]["kind"]["const"], answer::kind(tool));
            for field in required(tool) {
                assert!(s["properties"][field].is_object(), "{tool}: {field}");
                assert!(s["required"].as_array().unwrap().contains(&json!(field)));
            }
        }
        assert!(schema_value("check")["properties"]["document"].is_object());
        assert!(schema_value("summarize")["properties"]["document"].is_null());
        assert_ne!(schema_value("peak"), schema_value("diff"));
    }
}
