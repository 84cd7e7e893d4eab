//! JSON Schemas (draft 07, what Taplo and VS Code read) of `memgate.toml`,
//! the summary JSON and the verdict JSON, generated from the types: the
//! budget's from the key tables the reader checks every key against
//! (`budget::raw`), the documents' from their serde types (schemars). The
//! committed copies in schemas/ are compared with these by a test
//! (docs/schemas.md says how to regenerate them and point an editor at them).

use std::borrow::Cow;

use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::baseline::Summary;
use crate::budget::raw::{
    budget_keys, phase_keys, tolerance_keys, CATEGORY, DEFAULTS_KEYS, PHASE, RANKS_KEYS,
    SITES_KEYS, TARGET_KEYS, TOP_KEYS,
};
use crate::compare::{CheckId, SnapshotError, Verdict};
use crate::vocab::Figure;

const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// The committed file names under schemas/, each with its schema.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("memgate.toml.schema.json", budget()),
        ("summary.schema.json", summary()),
        ("verdict.schema.json", verdict()),
    ]
}

/// `memgate.toml`: every table and key the reader knows, nothing else (an
/// unknown key is an error there as here). Values are left to `memgate
/// check --validate`, which knows units, figure kinds and patterns; the
/// lists are arrays and the tables tables.
pub fn budget() -> Value {
    let mut top = keys(TOP_KEYS, &[]);
    top["defaults"] = closed(keys(DEFAULTS_KEYS, &["figures"]));
    top["target"] = json!({"type": "array", "items": {"$ref": "#/definitions/target"}});
    top["categories"] = open_table("Category name = regular expression over a stack's frames.");
    top["sites"] = closed(keys(SITES_KEYS, &["user-code"]));
    let mut target = keys(TARGET_KEYS, &[]);
    target["budget"] = json!({"$ref": "#/definitions/budget"});
    target["tolerance"] = json!({"$ref": "#/definitions/tolerance"});
    let mut ranks = keys(RANKS_KEYS, &["figures"]);
    ranks["stages"] = open_table("Stage name = the ranks it holds.");
    target["ranks"] = closed(ranks);
    let phases = json!({
        "type": "object",
        "additionalProperties": closed(keys(&phase_keys(), &[])),
    });
    let mut budget = keys(&budget_keys(), &[]);
    budget[CATEGORY] = open_table("Category name = its budget.");
    budget[PHASE] = phases.clone();
    let mut tolerance = keys(&tolerance_keys(), &[]);
    tolerance[PHASE] = phases;
    let mut schema = closed(top);
    schema["$schema"] = json!(DRAFT_07);
    schema["title"] = json!("memgate.toml");
    schema["description"] = json!(
        "A memgate budget file (docs/schemas.md). Keys and tables are checked here; \
         values by `memgate check --validate`."
    );
    schema["definitions"] = json!({
        "target": closed(target),
        "budget": closed(budget),
        "tolerance": closed(tolerance),
    });
    schema
}

/// The summary JSON `memgate summarize` writes (the golden files).
pub fn summary() -> Value {
    document::<Summary>()
}

/// The verdict JSON `memgate check --json` writes.
pub fn verdict() -> Value {
    document::<Verdict>()
}

/// As memgate writes `T`: a field it leaves out when empty is optional.
fn document<T: schemars::JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().for_serialize();
    let generator = settings.into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// `properties` with each of `names` allowed as any value, `lists` as
/// arrays.
fn keys(names: &[&str], lists: &[&str]) -> Value {
    let props: Map<String, Value> = names
        .iter()
        .map(|n| {
            let v = if lists.contains(n) {
                json!({"type": "array"})
            } else {
                json!({})
            };
            (n.to_string(), v)
        })
        .collect();
    Value::Object(props)
}

/// A table with exactly `properties`.
fn closed(properties: Value) -> Value {
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

/// A table of names the user chooses.
fn open_table(description: &str) -> Value {
    json!({"type": "object", "description": description})
}

// The types whose JSON is their text (a figure id, a check id, an error
// message): described as what they write, not as their Rust shape.

impl schemars::JsonSchema for Figure {
    fn schema_name() -> Cow<'static, str> {
        "Figure".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let ids: Vec<&str> = Figure::ALL.iter().map(|f| f.id()).collect();
        json_schema!({"type": "string", "enum": ids, "description": "A figure id (docs/figures.md)."})
    }
}

impl schemars::JsonSchema for CheckId {
    fn schema_name() -> Cow<'static, str> {
        "CheckId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "What a check judges: a figure id, `category.NAME`, \
                `phase.NAME.FIGURE`, `baseline`, `window`, `environment` or a ranks check."
        })
    }
}

impl schemars::JsonSchema for SnapshotError {
    fn schema_name() -> Cow<'static, str> {
        "SnapshotError".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "description": "Why the snapshot could not be judged."})
    }
}
