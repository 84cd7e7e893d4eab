//! A budget given as data rather than a file (the Python API's and the
//! pytest marker's mappings, passed as JSON): the JSON document is built
//! into an in-memory TOML table (no text is written or parsed) and read by
//! the budget file's own reader ([`raw::read_table`]) and validation, so
//! every key the file takes is taken here, with the same meaning, and a
//! mapping is judged exactly as the file holding it would be. Any phase or
//! category name works as a key (`"Optimizer.step#AdamW.step"`, `"## forward ##"`).
//! Problems carry their dotted key, not a line: there is no text.

use std::path::Path;

use serde_json::Value;
use toml_edit::{Array, InlineTable, Item, Table};

use super::raw;
use super::validate::{validate_data_read, ConfigError, Validated};
use crate::units::Bytes;
use crate::vocab::Figure;

/// A JSON value as an in-memory TOML value (objects as inline tables,
/// which the reader takes wherever a table goes). `null` and integers past
/// `i64` have no TOML form: refused with the dotted key they are at.
fn toml_value(value: &Value, at: &str) -> Result<toml_edit::Value, String> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    Ok(match value {
        Value::Null => {
            return Err(format!(
                "`{at}`: None has no budget meaning (leave the key out)"
            ))
        }
        Value::Bool(b) => (*b).into(),
        Value::String(s) => s.as_str().into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(x)) if n.is_f64() => x.into(),
            _ => return Err(format!("`{at}`: {n} is too large")),
        },
        Value::Array(items) => {
            let mut a = Array::new();
            for (i, v) in items.iter().enumerate() {
                a.push(toml_value(v, &format!("{at}[{i}]"))?);
            }
            a.into()
        }
        Value::Object(map) => {
            let mut t = InlineTable::new();
            for (k, v) in map {
                t.insert(k, toml_value(v, &join(k))?);
            }
            t.into()
        }
    })
}

/// The budget document `value` (the structure of `memgate.toml`:
/// `defaults`, `target`, `categories`) read and validated as the budget
/// file is; relative paths in it are relative to `dir`, and `file` names
/// it in messages. `check_globs`: require every target's snapshot pattern
/// to match a file.
pub fn budget_from_data(value: &Value, file: &str, dir: &Path, check_globs: bool) -> Validated {
    let whole = |message: String| unusable_whole(file, message);
    let Value::Object(map) = value else {
        return whole(format!("must be a mapping, not {}", type_name(value)));
    };
    let mut root = Table::new();
    for (k, v) in map {
        match toml_value(v, k) {
            Ok(v) => {
                root.insert(k, Item::Value(v));
            }
            Err(message) => return whole(message),
        }
    }
    validate_data_read(raw::read_table(&root), file, dir, check_globs)
}

/// [`budget_from_data`] of a JSON text (`check --budget-json`).
pub fn budget_from_json(text: &str, file: &str, dir: &Path, check_globs: bool) -> Validated {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => budget_from_data(&v, file, dir, check_globs),
        Err(e) => unusable_whole(file, format!("not a JSON budget: {e}")),
    }
}

/// A budget document that cannot be read at all: one error about the
/// whole of it, at no line.
fn unusable_whole(file: &str, message: String) -> Validated {
    Validated {
        budget: None,
        errors: vec![ConfigError::of_file(file, message)],
    }
}

/// Validates the budget document `value` without requiring its snapshot
/// patterns to match yet (the snapshots may not exist until the test ran):
/// every problem, each with the dotted key it is about.
pub fn validate_data(value: &Value, file: &str, dir: &Path) -> Result<(), Vec<ConfigError>> {
    match budget_from_data(value, file, dir, false) {
        Validated {
            budget: Some(_),
            errors,
        } if errors.is_empty() => Ok(()),
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

    fn budget(doc: &Value) -> super::super::Budget {
        match budget_from_data(doc, "marker", Path::new("/d"), false) {
            Validated {
                budget: Some(b),
                errors,
            } if errors.is_empty() => b,
            v => panic!("{:?}", v.errors),
        }
    }

    #[test]
    fn phase_names_with_dots_hashes_and_spaces_are_kept_in_order() {
        let doc = target(json!({"phase": {
            "Optimizer.step#AdamW.step": {"allocated-peak": "1 GiB"},
            "## forward ##": {"allocated-peak": {"limit": "2 GiB", "level": "warn"}},
        }}));
        let b = budget(&doc);
        let phases: Vec<&str> = b.targets[0]
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
        let b = budget(&doc);
        assert_eq!(b.targets[0].name, "t\"🧪");
        assert_eq!(b.targets[0].snapshots, ["/tmp/é 🧪/\"x\"/rank*.pickle"]);
    }

    #[test]
    fn a_bad_size_is_reported_with_its_dotted_key_and_no_line() {
        let doc = target(json!({"allocated-peak": "300 furlongs"}));
        let errors = validate_data(&doc, "marker", Path::new("/d")).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].key, "target.budget.allocated-peak");
        assert_eq!(errors[0].loc.line, 0);
        assert!(errors[0]
            .to_string()
            .starts_with("marker: `target.budget.allocated-peak`: "));
    }

    #[test]
    fn null_a_huge_number_and_a_non_mapping_are_refused_naming_where() {
        let errors = validate_data(
            &target(json!({"allocated-peak": null})),
            "m",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(errors[0]
            .message
            .contains("`target[0].budget.allocated-peak`: None"));
        let errors = validate_data(
            &target(json!({"oom-events": u64::MAX})),
            "m",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(errors[0].message.contains("too large"), "{errors:?}");
        let errors = validate_data(&json!([1]), "m", Path::new("/")).unwrap_err();
        assert_eq!(errors[0].message, "must be a mapping, not a list");
    }

    #[test]
    fn an_unknown_key_is_reported_as_the_file_reader_reports_it() {
        let doc = target(json!({"allocated-peek": "1 GiB"}));
        let errors = validate_data(&doc, "m", Path::new("/")).unwrap_err();
        assert!(errors[0]
            .message
            .contains("unknown key `allocated-peek` in [target.budget]"));
    }

    #[test]
    fn a_size_parses_as_a_budget_reads_it() {
        assert_eq!(parse_size("8 GiB"), Ok(8 << 30));
        assert!(parse_size("8 furlongs").is_err());
    }

    #[test]
    fn category_rules_keep_their_order() {
        let doc = json!({"categories": {"z": "a", "a": "b", "m": "c"},
                         "target": [{"name": "t", "snapshots": "x"}]});
        let names: Vec<String> = budget(&doc)
            .categories
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["z", "a", "m"]);
    }
}
