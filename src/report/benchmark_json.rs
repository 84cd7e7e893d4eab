//! github-action-benchmark's `customSmallerIsBetter` JSON of
//! `check --benchmark-json`: an array of `{name, unit, value}`, one entry
//! per series ([`super::series`]), the value the run's figure (the JSON
//! report's `current`); `extra` names the budget's limit and the baseline
//! when the check has them, for the chart's tooltip.

use serde_json::{json, Value};

use super::series::series;
use crate::compare::Verdict;

/// The report of `check --benchmark-json`; nothing is written when the
/// gate could not judge (nothing was measured).
pub(crate) struct BenchmarkJson;

impl super::exporter::Exporter for BenchmarkJson {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, _: &[String], _: i64) -> Option<String> {
        None
    }
}

pub(crate) fn render(v: &Verdict) -> String {
    let entries: Vec<Value> = series(v)
        .into_iter()
        .map(|s| {
            let c = s.check;
            let mut entry = json!({
                "name": s.name,
                "unit": c.unit.id(),
                "value": c.current,
            });
            let extra: Vec<String> = [("limit", c.budget), ("baseline", c.baseline)]
                .into_iter()
                .filter_map(|(what, x)| Some(format!("{what}: {}", x?)))
                .collect();
            if !extra.is_empty() {
                entry["extra"] = Value::String(extra.join(", "));
            }
            entry
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&Value::Array(entries))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
