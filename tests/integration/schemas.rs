//! The JSON Schemas in schemas/ (issue 36) are what the types generate,
//! and the example budgets name theirs for editors (docs/schemas.md).
//! Validation of every example and golden against them runs in .ci/run
//! (.ci/schemas.py, Python's jsonschema), which has the validator.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[cfg(feature = "schema")]
fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

/// `MEMGATE_BLESS_SCHEMAS=1 cargo test --features schema --test integration
/// schemas` rewrites them.
#[cfg(feature = "schema")]
#[test]
fn the_committed_schemas_are_what_the_rust_types_generate() {
    let dir = root().join("schemas");
    let bless = std::env::var_os("MEMGATE_BLESS_SCHEMAS").is_some();
    for (name, schema) in memgate::schema::all() {
        let path = dir.join(name);
        let want = pretty(&schema);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (MEMGATE_BLESS_SCHEMAS=1 writes it)",
                path.display()
            )
        });
        assert!(
            have == want,
            "{} is stale: rerun with MEMGATE_BLESS_SCHEMAS=1",
            path.display()
        );
    }
}

#[cfg(feature = "schema")]
#[test]
fn the_budget_schema_closes_every_table_the_reader_closes() {
    let s = memgate::schema::budget();
    assert_eq!(s["additionalProperties"], false);
    let target = &s["definitions"]["target"];
    assert_eq!(target["additionalProperties"], false);
    assert!(target["properties"]["snapshots"].is_object());
    let budget = &s["definitions"]["budget"]["properties"];
    assert!(budget["allocated-peak"].is_object());
    assert!(budget["category"].is_object());
    assert!(budget.get("no-such-figure").is_none());
}

/// The `#:schema` line Taplo (and VS Code's Even Better TOML) reads, first
/// in each example budget, naming a schema file that is there.
#[test]
fn the_example_budgets_name_the_committed_budget_schema() {
    for rel in [
        "thresholds.example.toml",
        "examples/memgate.toml",
        "examples/memgate-regressed.toml",
    ] {
        let path = root().join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap_or("");
        let named = first
            .strip_prefix("#:schema ")
            .unwrap_or_else(|| panic!("{rel}: first line is {first:?}, not `#:schema …`"));
        let schema = Path::new(&path).parent().unwrap().join(named.trim());
        assert!(
            schema.ends_with("schemas/memgate.toml.schema.json"),
            "{rel}: {named}"
        );
        assert!(schema.is_file(), "{rel}: {} is missing", schema.display());
    }
}
