//! The tools that run a whole command of the library (`diff`, `check`,
//! `summarize`) on confined paths: `diff` takes its snapshots from the
//! session's cache (a summary is read per call), `check` and `summarize`
//! re-read theirs per call; what they write goes to a path under the roots
//! (or a private temporary file).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::commands::check::CheckOptions;
use crate::commands::diff::DiffOptions;
use crate::commands::summarize::SummarizeOptions;
use crate::commands::{Decoded, Outcome, OutputFormat};

use super::answer;
use super::cache::Source;
use super::confine::budget_paths_inside;
use super::page::{self, PageAt};
use super::params::{CheckArgs, DiffArgs, SummarizeArgs};
use super::work::{few, path_text, Answer, Work};

/// Memgate's error lines of an outcome.
fn errors(o: &Outcome) -> Vec<String> {
    o.errors.iter().map(ToString::to_string).collect()
}

fn failed(o: &Outcome) -> Result<(), String> {
    match errors(o).as_slice() {
        [] => Ok(()),
        lines => Err(lines.join("\n")),
    }
}

/// A `window` argument parsed as `--window` is.
fn window_arg(w: Option<&str>) -> Result<Option<crate::analysis::Window>, String> {
    w.map(|w| w.parse().map_err(|e| format!("window `{w}`: {e}")))
        .transpose()
}

/// A directory of this call's own for what `check` writes (its JSON
/// verdict): made by `tempfile` (a random name, mode 0700 on Unix),
/// admitted to the confined process while the call runs, removed when it
/// ends. Nothing in it was planted: what is read back the command wrote.
struct Scratch {
    // Dropped in this order: the admission, then the directory.
    _admitted: crate::beneath::Admitted,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

fn scratch() -> Result<Scratch, String> {
    let cannot = |e: std::io::Error| format!("cannot make a private temporary directory: {e}");
    let dir = tempfile::Builder::new()
        .prefix("memgate-mcp-")
        .tempdir()
        .map_err(cannot)?;
    // Canonical, as the roots are (a TMPDIR through a link, macOS's /var).
    let path = dir.path().canonicalize().map_err(cannot)?;
    Ok(Scratch {
        _admitted: crate::beneath::admit(&path).map_err(cannot)?,
        path,
        _dir: dir,
    })
}

/// The budget of a `check` call: a file under the roots, or an inline one
/// passed to the command as data (no file is written; its relative paths
/// are the first root's).
struct CallBudget {
    config: PathBuf,
    json: Option<String>,
    budget: Option<crate::budget::Budget>,
}

impl Work {
    /// The session's cache as a whole command's source of snapshots: a
    /// file it holds (or can decode) as a snapshot, each use noted in
    /// `sources`; `None` for anything else (a summary), which the command
    /// then reads itself.
    fn decoded(&self, sources: &Arc<Mutex<Vec<Source>>>) -> Decoded {
        let (cache, sources) = (Arc::clone(&self.cache), Arc::clone(sources));
        Decoded(Arc::new(move |path: &Path| {
            let (snap, source) = cache.get(path).ok()?;
            sources
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(source);
            Some(snap)
        }))
    }

    /// Note in `ans` each snapshot a whole command took through [`Work::decoded`].
    fn note_sources(&self, ans: &mut Answer, sources: &Mutex<Vec<Source>>) {
        for s in sources.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            ans.note_cache(s, &self.cache);
        }
    }

    pub(crate) fn diff(&self, a: &DiffArgs) -> Result<Value, String> {
        let mut ans = Answer::new("diff");
        let at = PageAt::new(a.limit, a.cursor.as_deref())?;
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), None)?;
        let base = self.roots.existing(&a.base)?;
        let new = self.roots.existing(&a.new)?;
        self.roots.reads_inside("base", &path_text(&base))?;
        self.roots.reads_inside("new", &path_text(&new))?;
        let html = a
            .html
            .as_deref()
            .map(|p| self.roots.writable(p))
            .transpose()?;
        let rules = self.rules_spec(a.rules.as_deref())?;
        let window = window_arg(a.window.as_deref())?;
        let sources = Arc::new(Mutex::new(Vec::new()));
        let opts = DiffOptions {
            base: path_text(&base),
            new: path_text(&new),
            format: OutputFormat::Json,
            rules,
            top: at.wanted(),
            window,
            html: html.clone(),
            categories: None,
            sites: Default::default(),
            x_axis: crate::report::html::XAxis::Auto,
            decoded: Some(self.decoded(&sources)),
            // The answer names the page; stderr carries errors only.
            quiet: true,
        };
        let mut out = Vec::new();
        let outcome = crate::commands::diff::run(&opts, &mut out);
        self.note_sources(&mut ans, &sources);
        failed(&outcome)?;
        let mut doc: Value = serde_json::from_slice(&out).map_err(|e| e.to_string())?;
        // The site lists of each device, paged like the analysis lists.
        let end = at.offset.saturating_add(at.limit);
        let mut more = false;
        page_lists(&mut doc, at, &mut more);
        ans.set("next_cursor", more.then(|| page::cursor(end)));
        if let Some(h) = html {
            ans.set("html", path_text(&h));
        }
        self.deliver(&mut ans, doc, &detail, &[])?;
        Ok(ans.finish())
    }

    /// The budget a `check` call names, its paths checked textually.
    fn call_budget(&self, a: &CheckArgs) -> Result<CallBudget, String> {
        match (&a.config, &a.budget) {
            (Some(c), None) => {
                let path = self.roots.existing(c)?;
                let text = crate::files::read_capped(&path, "budget file", crate::files::TEXT_CAP)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let table: toml::Table = String::from_utf8_lossy(&text)
                    .parse()
                    .map_err(|e: toml::de::Error| format!("{}: {}", path.display(), e))?;
                budget_paths_inside(&table)?;
                let budget = crate::budget::validate_file(&path, false).budget;
                Ok(CallBudget {
                    config: path,
                    json: None,
                    budget,
                })
            }
            (None, Some(given)) => {
                let b = &inline_budget(given, a.snapshots.as_ref().is_some_and(|s| !s.is_empty()))?;
                let text = toml::to_string(b).map_err(|e| format!("budget: {e}"))?;
                let table: toml::Table = text.parse().map_err(|e| format!("budget: {e}"))?;
                budget_paths_inside(&table)?;
                // Named as a file in the first root, so that its relative
                // paths are that root's.
                let config = self.roots.first().join("inline-budget");
                // Validated under the argument's name: its problems name
                // `budget`, never a file.
                let checked =
                    crate::budget::budget_from_data(b, "budget", self.roots.first(), false);
                if !checked.errors.is_empty() {
                    let lines: Vec<String> = checked.errors.iter().map(argument_error).collect();
                    return Err(lines.join("\n"));
                }
                let budget = checked.budget;
                Ok(CallBudget {
                    config,
                    json: Some(b.to_string()),
                    budget,
                })
            }
            _ => Err("give either config (a budget file) or budget (inline)".into()),
        }
    }

    /// The call's snapshots and baseline, confined, and every file behind
    /// them or the budget checked before the check reads one.
    fn check_inputs(
        &self,
        a: &CheckArgs,
        budget: &CallBudget,
    ) -> Result<(Vec<String>, Option<String>), String> {
        let snapshots = a
            .snapshots
            .iter()
            .flatten()
            .map(|s| self.roots.existing(s).map(|p| path_text(&p)))
            .collect::<Result<Vec<_>, _>>()?;
        let baseline = a
            .baseline
            .as_deref()
            .map(|b| self.roots.existing(b).map(|p| path_text(&p)))
            .transpose()?;
        for s in &snapshots {
            self.roots.reads_inside("snapshots", s)?;
        }
        if let Some(b) = &baseline {
            self.roots.reads_inside("baseline", b)?;
        }
        self.roots.budget_reads_inside(
            budget.budget.as_ref(),
            !snapshots.is_empty(),
            baseline.is_some(),
        )?;
        Ok((snapshots, baseline))
    }

    pub(crate) fn check(&self, a: &CheckArgs) -> Result<Value, String> {
        let mut ans = Answer::new("check");
        let at = PageAt::new(a.limit, a.cursor.as_deref())?;
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), None)?;
        let budget = self.call_budget(a)?;
        let (snapshots, baseline) = self.check_inputs(a, &budget)?;
        let html = a
            .html
            .as_deref()
            .map(|p| self.roots.writable(p))
            .transpose()?;
        let window = window_arg(a.window.as_deref())?;
        let scratch = scratch()?;
        let json_out = scratch.path.join("verdict.json");
        let sources = Arc::new(Mutex::new(Vec::new()));
        let opts = CheckOptions {
            config: Some(budget.config),
            snapshots,
            baseline,
            json: Some(json_out.clone()),
            html: html.clone(),
            require_baseline: a.require_baseline.unwrap_or(false),
            window,
            budget_json: budget.json,
            // The call's own verdict, gone when it returns, and the page
            // the answer names: no `wrote` line on the server's stderr,
            // which carries errors only.
            unannounced: [Some(json_out.clone()), html.clone()]
                .into_iter()
                .flatten()
                .collect(),
            decoded: Some(self.decoded(&sources)),
            ..CheckOptions::default()
        };
        let mut text = Vec::new();
        let outcome = crate::commands::check::run(&opts, &mut text);
        self.note_sources(&mut ans, &sources);
        let doc = verdict(&json_out, &outcome)?;
        let findings: Vec<Value> = String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| {
                ["FAIL ", "WARN ", "ERROR ", "SKIP "]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| Value::from(crate::report::escape::terminal(l).into_owned()))
            .collect();
        let checks = not_passed(&doc);
        let (findings, next_f) = page::page(&findings, at);
        let (checks, next_c) = page::page(&checks, at);
        ans.set("verdict", doc["verdict"].clone());
        ans.set("exit_code", outcome.exit_code());
        ans.set("counts", doc["counts"].clone());
        ans.set("errors", errors(&outcome));
        ans.set("findings", findings);
        ans.set("checks", checks);
        ans.set("next_cursor", next_f.or(next_c));
        if let Some(h) = html {
            ans.set("html", path_text(&h));
        }
        self.deliver(&mut ans, doc, &detail, &[])?;
        Ok(ans.finish())
    }

    pub(crate) fn summarize(&self, a: &SummarizeArgs) -> Result<Value, String> {
        let mut ans = Answer::new("summarize");
        let paths = few(&a.paths)?
            .iter()
            .map(|p| self.roots.existing(p))
            .collect::<Result<Vec<_>, _>>()?;
        for p in &paths {
            self.roots.reads_inside("paths", &path_text(p))?;
        }
        let dir = self.roots.existing(&a.output_dir)?;
        if !crate::beneath::is_dir(&dir) {
            return Err(format!("{}: not a directory", a.output_dir));
        }
        let rules = self.rules_spec(a.rules.as_deref())?;
        let window = window_arg(a.window.as_deref())?;
        let sources = Arc::new(Mutex::new(Vec::new()));
        let opts = SummarizeOptions {
            snapshots: paths.iter().map(|p| path_text(p)).collect(),
            output: dir.clone(),
            rules,
            top: a.top.unwrap_or(50),
            window,
            categories: None,
            sites: Default::default(),
            iteration_boundary: a.iteration_boundary.clone(),
            decoded: Some(self.decoded(&sources)),
            repeats: false,
        };
        let mut out = Vec::new();
        let outcome = crate::commands::summarize::run(&opts, &mut out);
        self.note_sources(&mut ans, &sources);
        failed(&outcome)?;
        let written: Vec<Value> = paths
            .iter()
            .map(|p| {
                let stem = p.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
                let file = dir.join(format!("{stem}.json"));
                let size = crate::files::open_regular(&file).map_or(0, |(_, len)| len);
                json!({"snapshot": path_text(p), "summary": path_text(&file), "size": answer::bytes(size)})
            })
            .collect();
        ans.set("written", written);
        Ok(ans.finish())
    }
}

/// An inline budget as the budget file's structure: given so, or in the
/// flat form of the pytest marker (`{"allocated-peak": "15 GiB"}`, figure
/// ids in either spelling), which becomes one target judging `snapshots`.
fn inline_budget(given: &Value, has_snapshots: bool) -> Result<Value, String> {
    let Value::Object(map) = given else {
        return Err(
            "budget: give an object: {\"allocated-peak\": \"15 GiB\"} or {\"target\": [...]}"
                .into(),
        );
    };
    let flat_key =
        |k: &String| k == "phase" || crate::vocab::Figure::from_id(&k.replace('_', "-")).is_some();
    if map.is_empty() || !map.keys().all(flat_key) {
        return Ok(given.clone());
    }
    if !has_snapshots {
        return Err(
            "budget: the flat form ({\"allocated-peak\": …}) judges the files named in \
             `snapshots`; give them (or a budget with targets)"
                .into(),
        );
    }
    let figures: Map<String, Value> = map
        .iter()
        .map(|(k, v)| {
            let id = if k == "phase" {
                k.clone()
            } else {
                k.replace('_', "-")
            };
            (id, v.clone())
        })
        .collect();
    Ok(json!({"target": [{"name": "inline", "budget": figures}]}))
}

/// A problem of an inline budget, named by the argument and the key.
fn argument_error(e: &crate::budget::ConfigError) -> String {
    let key = if e.key.is_empty() {
        String::new()
    } else {
        format!(" `{}`", e.key)
    };
    format!("budget{key}: {}", e.message)
}

/// The JSON verdict `check` wrote in the call's private directory; when it
/// wrote none, the errors that kept it from judging.
fn verdict(json_out: &std::path::Path, outcome: &Outcome) -> Result<Value, String> {
    match crate::files::read_capped(json_out, "verdict", VERDICT_CAP) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| e.to_string()),
        Err(crate::files::FileError::NotFound) => Err(failed(outcome)
            .err()
            .unwrap_or_else(|| "check wrote no verdict".into())),
        Err(e) => Err(format!("the verdict {e}")),
    }
}

/// The largest JSON verdict read back (64 snapshots of 64 devices with
/// their findings stay far below).
const VERDICT_CAP: u64 = 256 << 20;

/// The checks of a verdict that did not pass, with their findings.
fn not_passed(doc: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for t in doc["targets"].as_array().into_iter().flatten() {
        for s in t["snapshots"].as_array().into_iter().flatten() {
            for d in s["devices"].as_array().into_iter().flatten() {
                for c in d["checks"].as_array().into_iter().flatten() {
                    if c["status"] == "pass" {
                        continue;
                    }
                    let mut row = json!({
                        "target": t["name"], "snapshot": s["name"], "path": s["path"],
                        "device": d["device"], "check": c["id"], "status": c["status"],
                        "findings": c["findings"],
                    });
                    for k in ["current", "budget", "baseline"] {
                        if let Some(n) = c[k].as_u64().filter(|_| c["unit"] == "bytes") {
                            row[k] = answer::bytes(n);
                        } else {
                            row[k] = c[k].clone();
                        }
                    }
                    out.push(row);
                }
            }
        }
    }
    out
}

/// Page every list of more than one item below the document's device
/// entries (a diff's sites and stacks).
fn page_lists(v: &mut Value, at: PageAt, more: &mut bool) {
    let end = at.offset.saturating_add(at.limit);
    match v {
        Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                if let Value::Array(items) = item {
                    if k.contains("sites") || k.contains("stacks") {
                        *more |= items.len() > end;
                        *items = page::page(items, at).0;
                        continue;
                    }
                }
                page_lists(item, at, more);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| page_lists(x, at, more)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flat_form_becomes_one_target_with_figure_ids_in_either_spelling() {
        let b = inline_budget(
            &json!({"allocated_peak": "15 GiB", "reserved-peak": "16 GiB"}),
            true,
        )
        .unwrap();
        assert_eq!(
            b,
            json!({"target": [{"name": "inline",
                "budget": {"allocated-peak": "15 GiB", "reserved-peak": "16 GiB"}}]})
        );
    }

    #[test]
    fn the_file_structure_passes_through_and_the_flat_form_needs_snapshots() {
        let file = json!({"target": [{"name": "t", "budget": {"allocated-peak": "1 GiB"}}]});
        assert_eq!(inline_budget(&file, false).unwrap(), file);
        let e = inline_budget(&json!({"allocated-peak": "1 GiB"}), false).unwrap_err();
        assert!(e.starts_with("budget:") && e.contains("`snapshots`"), "{e}");
        let e = inline_budget(&json!(["allocated-peak"]), true).unwrap_err();
        assert!(e.starts_with("budget:"), "{e}");
    }
}
