//! `--categories`: custom category rules written on the command line, a
//! JSON object (`{"hccl": "hccl"}`, Mosaic's `--custom-profile`) or a TOML
//! inline table (`{hccl = "hccl"}`), in the order written. They are
//! the same rules a rules file's `[categories]` table holds, matched the
//! same way (docs/figures.md#custom-rules), tried before the `--rules` set.

use super::rules::{RuleSet, RulesError};
use crate::files::TEXT_CAP;
use crate::patterns::{PatternBudget, Rule};

/// The `name = regex` pairs of `--categories`, in the order written; every
/// problem at once (`--categories: …` is added by the caller).
pub fn parse_inline(text: &str) -> Result<Vec<(String, String)>, RulesError> {
    if text.len() as u64 > TEXT_CAP {
        return Err(RulesError::new(format!(
            "longer than the {} MiB a rules file may be",
            TEXT_CAP >> 20
        )));
    }
    let pairs = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => map
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k, s)),
                other => Err(format!("`{k}` must be a string (a regex), not {other}")),
            })
            .collect::<Vec<_>>(),
        Ok(other) => {
            return Err(RulesError::new(format!(
                "must be an object of name: \"regex\", not {other}"
            )))
        }
        Err(json) => toml_inline(text).map_err(|toml| {
            RulesError::new(format!(
                "neither a JSON object ({json}) nor a TOML inline table ({toml}); write \
                 '{{\"name\": \"regex\"}}' or '{{name = \"regex\"}}'"
            ))
        })?,
    };
    let (ok, errors): (Vec<_>, Vec<_>) = pairs.into_iter().partition(Result::is_ok);
    if !errors.is_empty() {
        let lines: Vec<String> = errors.into_iter().filter_map(Result::err).collect();
        return Err(RulesError::new(lines.join("; ")));
    }
    let ok: Vec<(String, String)> = ok.into_iter().filter_map(Result::ok).collect();
    if ok.is_empty() {
        return Err(RulesError::new("no rule given (an empty table)".into()));
    }
    Ok(ok)
}

/// One `name: regex` pair, or why its value is not a string.
type Pair = Result<(String, String), String>;

/// A TOML inline table's pairs in order (values checked by the caller).
fn toml_inline(text: &str) -> Result<Vec<Pair>, String> {
    let source = format!("categories = {text}");
    let doc = toml_edit::Document::parse(source.as_str())
        .map_err(|e| crate::toml_error::message(&e, &source))?;
    let table = doc
        .get("categories")
        .and_then(|i| i.as_inline_table())
        .ok_or_else(|| "not an inline table".to_string())?;
    Ok(table
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => Ok((k.to_string(), s.to_string())),
            None => Err(format!("`{k}` must be a string (a regex)")),
        })
        .collect())
}

/// `--categories`, parsed and compiled.
#[derive(Debug, Clone)]
pub struct InlineRules {
    rules: Vec<Rule>,
    /// The rules as canonical JSON, for the rule set's source.
    json: String,
}

impl InlineRules {
    /// Parses and compiles `--categories`; every problem at once.
    pub fn parse(text: &str) -> Result<InlineRules, RulesError> {
        InlineRules::compile(parse_inline(text)?, "--categories")
    }

    /// `name = regex` pairs in the order given, compiled under the limits
    /// on rules (docs/figures.md#limits-on-rules): every problem at once,
    /// up to the first past the count or the total. `at` is where they
    /// were given (the flag, the argument).
    pub fn compile(pairs: Vec<(String, String)>, at: &str) -> Result<InlineRules, RulesError> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let mut budget = PatternBudget::default();
        for (name, pattern) in &pairs {
            match budget.rule(name, pattern, at) {
                Ok(rule) => rules.push(rule),
                Err(e) => errors.push(format!("{name}: {e}")),
            }
            if budget.exhausted() {
                break;
            }
        }
        if !errors.is_empty() {
            return Err(RulesError::new(errors.join("\n")));
        }
        let object: serde_json::Map<String, serde_json::Value> = pairs
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        Ok(InlineRules {
            rules,
            json: serde_json::Value::Object(object).to_string(),
        })
    }

    #[cfg(feature = "mcp")]
    /// The compiled rules, in the order written.
    pub(crate) fn into_rules(self) -> Vec<Rule> {
        self.rules
    }

    /// The category names, in the order written.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.name.as_str())
    }
}

impl RuleSet {
    /// `base` with the `--categories` rules tried first. The set's source
    /// names both, the rules in canonical JSON (so a summary made with
    /// other inline rules reads as other rules). Refused when the rules of
    /// both together pass the limits on rules.
    pub fn with_inline(inline: &InlineRules, base: RuleSet) -> Result<RuleSet, RulesError> {
        let source = format!("{} + {}", base.source(), inline.json);
        let mut set = RuleSet::with_custom(inline.rules.clone(), base)?;
        set.set_source(source);
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse_inline(text)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    #[test]
    fn json_and_toml_keep_the_order_written() {
        assert_eq!(names(r#"{"z": "a", "a": "b", "m": "c"}"#), ["z", "a", "m"]);
        assert_eq!(
            names(r#"{z = "a", a = "b", "m.n" = "c"}"#),
            ["z", "a", "m.n"]
        );
    }

    #[test]
    fn bad_values_and_bad_text_are_refused_naming_why() {
        let e = parse_inline(r#"{"a": 1, "b": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`a` must be a string"), "{e}");
        let e = parse_inline("[1]").unwrap_err().to_string();
        assert!(e.contains("must be an object"), "{e}");
        let e = parse_inline("hccl").unwrap_err().to_string();
        assert!(e.contains("neither a JSON object"), "{e}");
        assert!(parse_inline("{}").is_err());
    }

    #[test]
    fn inline_rules_go_first_and_name_themselves_in_the_source() {
        let inline = InlineRules::parse(r#"{"hccl": "hccl", "zz": "never_matches"}"#).unwrap();
        let set = RuleSet::with_inline(&inline, RuleSet::builtin_default()).unwrap();
        assert_eq!(set.category_of(&[("hccl_allreduce", "x.py")]), "hccl");
        assert_eq!(&set.categories()[..2], ["hccl", "zz"]);
        assert_eq!(set.custom_names(), ["hccl", "zz"]);
        assert_eq!(
            set.source(),
            r#"default + {"hccl":"hccl","zz":"never_matches"}"#
        );
        let e = InlineRules::parse(r#"{"x": "("}"#).unwrap_err().to_string();
        assert!(e.starts_with("x: not a valid regex"), "{e}");
    }

    #[test]
    fn matching_is_case_sensitive_on_names_and_files_as_mosaics_custom_profile() {
        let inline = InlineRules::parse(r#"{"hccl": "hccl"}"#).unwrap();
        let set = RuleSet::with_inline(&inline, RuleSet::builtin_default()).unwrap();
        assert_ne!(set.category_of(&[("HCCL_allreduce", "x.py")]), "hccl");
        assert_eq!(set.category_of(&[("allreduce", "/x/hccl/ops.py")]), "hccl");
    }
}
