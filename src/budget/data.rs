//! A budget given as data rather than a file (the Python API's and the
//! pytest marker's mappings, passed as JSON): the same document, read by
//! the same parser and validation as `memgate.toml`, so a mapping is
//! judged exactly as the file holding it would be. The TOML text is
//! written by the `toml` serializer, which quotes every key that needs it
//! (`"Optimizer.step#AdamW.step"`, `"## forward ##"`, any path).

use std::path::Path;

use serde_json::Value;

use super::validate::{validate, ConfigError, Validated};
use super::Loc;
use crate::units::Bytes;
use crate::vocab::Figure;

/// The JSON document as TOML text: an object of tables, strings, numbers,
/// booleans and arrays. `null` has no TOML form: refused with the dotted
/// key it is at.
pub fn toml_text(value: &Value) -> Result<String, String> {
    if !value.is_object() {
        return Err(format!("must be a mapping, not {}", type_name(value)));
    }
    if let Some(at) = first_null(value, String::new()) {
        return Err(format!(
            "`{at}`: None has no budget meaning (leave the key out)"
        ));
    }
    let toml = toml::Value::try_from(value).map_err(|e| e.to_string())?;
    toml::to_string(&toml).map_err(|e| e.to_string())
}

/// Validates the budget document `value` (the structure of
/// `memgate.toml`: `defaults`, `target`, `categories`); relative paths in
/// it are relative to `dir`, and `file` names it in messages. Returns its
/// TOML text (what `check --config` reads) or every problem, each with the
/// dotted key it is about. Snapshot patterns are not required to match
/// yet (the snapshots may not exist until the test ran).
pub fn validate_data(value: &Value, file: &str, dir: &Path) -> Result<String, Vec<ConfigError>> {
    let text = toml_text(value).map_err(|message| {
        vec![ConfigError {
            loc: Loc {
                file: file.to_string(),
                line: 0,
                col: 0,
            },
            key: String::new(),
            message,
        }]
    })?;
    match validate(&text, file, dir, false) {
        Validated {
            budget: Some(_),
            errors,
        } if errors.is_empty() => Ok(text),
        Validated { errors, .. } => Err(errors),
    }
}

/// The figure ids a budget takes (`[target.budget]`), and those a phase
/// budget takes, in report order: what the Python marker's keywords are.
pub fn figure_ids() -> (Vec<&'static str>, Vec<&'static str>) {
    let ids = |figures: &[Figure]| figures.iter().map(|f| f.id()).collect();
    (ids(&Figure::ALL), ids(&Figure::PER_PHASE))
}

/// A size as a budget writes it (`"8 GiB"`, `"512 MB"`, `"100"`), in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    Bytes::parse(text).map(|(b, _)| b.0)
}

fn first_null(value: &Value, at: String) -> Option<String> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match value {
        Value::Null => Some(at),
        Value::Object(map) => map.iter().find_map(|(k, v)| first_null(v, join(k))),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| first_null(v, format!("{at}[{i}]"))),
        _ => None,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "None",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a str",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target(budget: Value) -> Value {
        json!({"target": [{"name": "t", "snapshots": "s/rank*.pickle", "budget": budget}]})
    }

    #[test]
    fn phase_names_with_dots_hashes_and_spaces_validate_as_the_file_would() {
        let doc = target(json!({"phase": {
            "Optimizer.step#AdamW.step": {"allocated-peak": "1 GiB"},
            "## forward ##": {"allocated-peak": {"limit": "2 GiB", "level": "warn"}},
        }}));
        let text = validate_data(&doc, "marker", Path::new("/d")).unwrap();
        let budget = super::super::parse(&text, "marker", Path::new("/d"), false).unwrap();
        let phases: Vec<&str> = budget.targets[0]
            .phase_budget
            .iter()
            .map(|p| p.phase.as_str())
            .collect();
        assert_eq!(phases, ["Optimizer.step#AdamW.step", "## forward ##"]);
    }

    #[test]
    fn a_path_with_an_emoji_and_quotes_is_kept_as_it_is() {
        let doc =
            json!({"target": [{"name": "t\"🧪", "snapshots": "/tmp/é 🧪/\"x\"/rank*.pickle"}]});
        let text = validate_data(&doc, "marker", Path::new("/d")).unwrap();
        let budget = super::super::parse(&text, "marker", Path::new("/d"), false).unwrap();
        assert_eq!(budget.targets[0].name, "t\"🧪");
        assert_eq!(
            budget.targets[0].snapshots,
            ["/tmp/é 🧪/\"x\"/rank*.pickle"]
        );
    }

    #[test]
    fn a_bad_size_is_reported_with_its_dotted_key() {
        let doc = target(json!({"allocated-peak": "300 furlongs"}));
        let errors = validate_data(&doc, "marker", Path::new("/d")).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].key, "target.budget.allocated-peak");
    }

    #[test]
    fn null_and_a_non_mapping_are_refused_naming_where() {
        let errors = validate_data(
            &target(json!({"allocated-peak": null})),
            "m",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(errors[0]
            .message
            .contains("`target[0].budget.allocated-peak`: None"));
        assert_eq!(
            toml_text(&json!([1])).unwrap_err(),
            "must be a mapping, not a list"
        );
    }

    #[test]
    fn a_size_parses_as_a_budget_reads_it() {
        assert_eq!(parse_size("8 GiB"), Ok(8 << 30));
        assert!(parse_size("8 furlongs").is_err());
    }

    #[test]
    fn category_rules_keep_their_order() {
        let text = toml_text(&json!({"categories": {"z": "a", "a": "b", "m": "c"}})).unwrap();
        let z = text.find("z =").unwrap();
        let a = text.find("a =").unwrap();
        let m = text.find("m =").unwrap();
        assert!(z < a && a < m, "{text}");
    }
}
