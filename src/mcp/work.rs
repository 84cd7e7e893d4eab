//! What each tool does, synchronously, on the library's own analysis: load
//! (through the cache), analyse, build the CLI's document, and wrap it in
//! the answer. Every error is memgate's message as a string; the tool layer
//! turns it into an MCP error result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::analysis::{
    phases_with_rules, Boundary, GroupBy, InlineRules, PeakAt, Request, RuleSet, RulesError, Window,
};
use crate::commands::analysed::analyse_placing;
use crate::document::{
    AnalysedSnapshot, InspectDocument, PeakDocument, PhasedSnapshot, PhasesDocument,
    ProfileDocument, SnapshotInventory,
};
use crate::patterns::MAX_RULES;
use crate::report::html;
use crate::snapshot::Snapshot;

use super::answer::{self, Trust};
use super::cache::{Cache, Fingerprint, Source};
use super::page::{self, PageAt};
use super::roots::Roots;
use super::summary;

/// The most files one call may name.
pub(crate) const MAX_FILES: usize = 64;

/// The server's state: its roots, its snapshot cache, its last answers and
/// the built-in rule sets.
pub(crate) struct Work {
    pub(crate) roots: Roots,
    pub(crate) cache: Arc<Cache>,
    pub(crate) memo: Memo,
    pub(crate) built_in: BuiltIn,
}

/// The `default` and `mosaic` rule sets, compiled on first use: compiling
/// the default rules' regexes is most of a small call's time.
/// Shared, not cloned: a cloned regex starts with an empty match cache.
#[derive(Default)]
pub(crate) struct BuiltIn {
    default: std::sync::OnceLock<Arc<RuleSet>>,
    mosaic: std::sync::OnceLock<Arc<RuleSet>>,
}

impl BuiltIn {
    /// The rule set `spec` names: a built-in one compiled once, a file
    /// each time (it may have changed).
    fn rules(&self, spec: &str) -> Result<Arc<RuleSet>, String> {
        let compile = || RuleSet::from_spec(spec).map_err(|e| format!("rules: {e}"));
        let kept = match spec {
            "default" => &self.default,
            "mosaic" => &self.mosaic,
            _ => return compile().map(Arc::new),
        };
        if let Some(r) = kept.get() {
            return Ok(Arc::clone(r));
        }
        let r = Arc::new(compile()?);
        Ok(Arc::clone(kept.get_or_init(|| r)))
    }
}

/// The last answers of the single-file tools, by tool and arguments, each
/// valid while its file's fingerprint is unchanged (answers are capped, so
/// this holds at most `MEMO_ANSWERS` × 256 KiB).
#[derive(Default)]
pub(crate) struct Memo {
    answers: std::sync::Mutex<std::collections::VecDeque<(String, PathBuf, Fingerprint, Value)>>,
}

const MEMO_ANSWERS: usize = 64;

/// An answer being built.
pub(crate) struct Answer {
    tool: &'static str,
    pub(crate) trust: Trust,
    pub(crate) fields: Map<String, Value>,
    cached: Vec<bool>,
    /// The cache's bytes and snapshots after the call.
    held: Option<(u64, usize)>,
}

impl Answer {
    pub(crate) fn new(tool: &'static str) -> Answer {
        Answer {
            tool,
            trust: Trust::default(),
            fields: Map::new(),
            cached: Vec::new(),
            held: None,
        }
    }

    /// A snapshot a whole command (`diff`) took from the session's cache
    /// or decoded into it.
    pub(crate) fn note_cache(&mut self, source: Source, cache: &Cache) {
        self.cached.push(source == Source::Cached);
        self.held = Some((cache.held(), cache.len()));
    }

    pub(crate) fn set(&mut self, key: &str, v: impl Into<Value>) {
        self.fields.insert(key.into(), v.into());
    }

    /// The answer as sent: kind first, then trust, then the fields, held
    /// under the size cap.
    pub(crate) fn finish(self) -> Value {
        let mut out = Map::new();
        out.insert("kind".into(), answer::kind(self.tool).into());
        out.insert("trust".into(), self.trust.to_json());
        if !self.cached.is_empty() {
            out.insert(
                "cache".into(),
                json!({"reused": self.cached.iter().filter(|c| **c).count(),
                       "decoded": self.cached.iter().filter(|c| !**c).count(),
                       "held": self.held.map(|(b, _)| answer::bytes(b)),
                       "snapshots": self.held.map(|(_, n)| n)}),
            );
        }
        let full = self.fields.contains_key("document");
        out.extend(self.fields);
        page::cap(
            Value::Object(out),
            if full {
                page::FULL_CAP
            } else {
                page::ANSWER_CAP
            },
        )
    }
}

/// A snapshot loaded for a call.
pub(crate) struct Loaded {
    pub(crate) path: PathBuf,
    pub(crate) snap: Snapshot,
}

/// How much of the CLI's document an answer carries: its summary
/// (default), or the whole document (`detail: "full"`); and where to write
/// the whole document as well.
pub(crate) struct Detail {
    full: bool,
    to: Option<PathBuf>,
}

fn window(spec: Option<&str>) -> Result<Option<Window>, String> {
    spec.filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<Window>()
                .map_err(|e| format!("window `{s}`: {e}"))
        })
        .transpose()
}

/// `allocated` / `dynamic` / `reserved` (or the figure ids).
pub(crate) fn peak_at(name: Option<&str>) -> Result<PeakAt, String> {
    match name.unwrap_or("allocated") {
        "allocated" | "allocated-peak" => Ok(PeakAt::AllocatedPeak),
        "dynamic" | "dynamic-peak" => Ok(PeakAt::DynamicPeak),
        "reserved" | "reserved-peak" => Ok(PeakAt::ReservedPeak),
        other => Err(format!(
            "peak `{other}`: give allocated, dynamic or reserved"
        )),
    }
}

impl Work {
    /// `tool`'s answer for `args` on the file `path`: the one given before
    /// while the file is unchanged, else `f`'s (kept when it succeeded and
    /// `again` says the answer depends on nothing but the file and `args`).
    pub(crate) fn memoized(
        &self,
        tool: &str,
        args: &impl serde::Serialize,
        path: &str,
        again: bool,
        f: impl FnOnce(&Work) -> Result<Value, String>,
    ) -> Result<Value, String> {
        if !again {
            return f(self);
        }
        let key = format!("{tool} {}", serde_json::to_string(args).unwrap_or_default());
        let file = self.roots.existing(path)?;
        let (print, _, _) = Fingerprint::open(&file)?;
        let mut q = self.memo.answers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, _, v)) = q
            .iter()
            .find(|(k, p, fp, _)| *k == key && *p == file && *fp == print)
        {
            let mut v = v.clone();
            v["cache"] = json!({"reused": 1, "decoded": 0, "answer": "repeated",
                                "held": answer::bytes(self.cache.held()),
                                "snapshots": self.cache.len()});
            return Ok(v);
        }
        drop(q);
        let v = f(self)?;
        q = self.memo.answers.lock().unwrap_or_else(|p| p.into_inner());
        q.retain(|(k, p, _, _)| !(*k == key && *p == file));
        if q.len() >= MEMO_ANSWERS {
            q.pop_front();
        }
        q.push_back((key, file, print, v.clone()));
        Ok(v)
    }

    /// The `detail` and `document_to` arguments of a call that reads
    /// `input`: the document goes to a path under the roots, never over
    /// the file it was read from.
    pub(crate) fn detail(
        &self,
        detail: Option<&str>,
        to: Option<&str>,
        input: Option<&str>,
    ) -> Result<Detail, String> {
        let full = match detail.unwrap_or("summary") {
            "summary" => false,
            "full" => true,
            other => return Err(format!("detail `{other}`: give summary or full")),
        };
        let to = to.map(|p| self.roots.writable(p)).transpose()?;
        if let (Some(out), Some(input)) = (&to, input) {
            let read = self.roots.existing(input)?;
            if crate::files::same_file(out, &read) {
                return Err("document_to: would overwrite the file it reads".into());
            }
        }
        Ok(Detail { full, to })
    }

    /// Where a page of `path`'s lists starts and how long it is. Without a
    /// `limit`, a summary shares [`page::DEFAULT_LIMIT`] items among the
    /// file's devices (at least [`page::MIN_SHARED_LIMIT`] each), so a
    /// many-device file answers in a few KiB; a whole document (answered or
    /// written) keeps the CLI's default.
    pub(crate) fn page_at(
        &self,
        limit: Option<usize>,
        cursor: Option<&str>,
        path: &str,
        d: &Detail,
    ) -> Result<PageAt, String> {
        let limit = match limit {
            Some(n) => Some(n),
            // A document asked for is paged as the CLI's default.
            None if d.full || d.to.is_some() => None,
            None => {
                // The same cached snapshot the call analyses (counted there).
                let (snap, _) = self.cache.get(&self.roots.existing(path)?)?;
                let devices = snap.devices().len().max(1);
                Some((page::DEFAULT_LIMIT / devices).max(page::MIN_SHARED_LIMIT))
            }
        };
        PageAt::new(limit, cursor)
    }

    /// Put `doc` in the answer as `d` asks: the whole of it, or its summary
    /// without the lists in `shown` (the answer gives them itself); and
    /// written to `d.to` when asked.
    pub(crate) fn deliver(
        &self,
        ans: &mut Answer,
        doc: Value,
        d: &Detail,
        shown: &[&str],
    ) -> Result<(), String> {
        ans.trust.add_document(&doc);
        if let Some(out) = &d.to {
            let text = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
            crate::files::write_atomic(out, &text)
                .map_err(|e| format!("document_to: cannot write {}: {e}", out.display()))?;
            ans.set("document_written", path_text(out));
        }
        if d.full {
            ans.set("document", doc);
        } else if doc.get("targets").is_some() {
            ans.set("summary", summary::verdict(&doc));
        } else {
            ans.set("summary", summary::summary(&doc, shown));
        }
        Ok(())
    }

    pub(crate) fn load(&self, path: &str, ans: &mut Answer) -> Result<Loaded, String> {
        let p = self.roots.existing(path)?;
        let (snap, source) = self.cache.get(&p)?;
        ans.trust.add_snapshot(&snap);
        ans.cached.push(source == Source::Cached);
        ans.held = Some((self.cache.held(), self.cache.len()));
        Ok(Loaded { path: p, snap })
    }

    /// The `--rules` value of a `rules` argument: `default`, `mosaic`, or
    /// a rules file confined to the roots.
    pub(crate) fn rules_spec(&self, spec: Option<&str>) -> Result<String, String> {
        Ok(match spec.unwrap_or("default") {
            s @ ("default" | "mosaic") => s.to_string(),
            file => path_text(&self.roots.existing(file)?),
        })
    }

    /// `default`, `mosaic`, or a rules file under the roots; then the
    /// inline categories over them.
    pub(crate) fn rules(
        &self,
        spec: Option<&str>,
        inline: Option<&Map<String, Value>>,
    ) -> Result<Arc<RuleSet>, String> {
        let spec = self.rules_spec(spec)?;
        let base = self.built_in.rules(&spec)?;
        let Some(inline) = inline.filter(|m| !m.is_empty()) else {
            return Ok(base);
        };
        // The count is checked before a string is copied; the rest of the
        // limits as the CLI's `--categories` checks them.
        if inline.len() > MAX_RULES {
            return Err(format!(
                "categories: {} rules, more than the {MAX_RULES} that may be given together",
                inline.len()
            ));
        }
        let mut pairs = Vec::new();
        for (name, rx) in inline {
            let text = rx
                .as_str()
                .ok_or_else(|| format!("categories.{name}: give a regex string"))?;
            pairs.push((name.clone(), text.to_string()));
        }
        let categories = |e: RulesError| format!("categories: {e}");
        let inline = InlineRules::compile(pairs, "categories").map_err(categories)?;
        RuleSet::with_custom(inline.into_rules(), (*base).clone())
            .map(Arc::new)
            .map_err(categories)
    }

    /// One snapshot analysed as `req` asks, as the CLI's document part,
    /// and its timelines.
    pub(crate) fn analysed(
        &self,
        l: &Loaded,
        rules: &RuleSet,
        req: Request<'_>,
    ) -> Result<(AnalysedSnapshot, Vec<crate::analysis::Timeline>), String> {
        let (devices, timelines, unplaced) =
            analyse_placing(&l.path, &l.snap, rules, req).map_err(|e| e.to_string())?;
        let doc = AnalysedSnapshot::new(&l.path, devices, unplaced, l.snap.warnings.clone());
        Ok((doc, timelines.unwrap_or_default()))
    }

    pub(crate) fn inspect(&self, paths: &[String]) -> Result<Value, String> {
        let mut ans = Answer::new("inspect");
        let mut inv = Vec::new();
        for p in few(paths)? {
            let l = self.load(p, &mut ans)?;
            inv.push(SnapshotInventory::of(&l.path, &l.snap));
        }
        let doc = to_value(&InspectDocument::new(inv))?;
        self.deliver(
            &mut ans,
            doc,
            &Detail {
                full: true,
                to: None,
            },
            &[],
        )?;
        Ok(ans.finish())
    }

    /// `peak`, and `live_at` / `explain_oom` on the same document.
    pub(crate) fn peak_document(
        &self,
        ans: &mut Answer,
        path: &str,
        rules: &RuleSet,
        at: PeakAt,
        win: Option<&str>,
        top: usize,
    ) -> Result<Value, String> {
        let l = self.load(path, ans)?;
        let w = window(win)?;
        let (snap, _) = self.analysed(
            &l,
            rules,
            Request {
                stacks_at: Some(at),
                window: w.as_ref(),
                ..Request::top(top)
            },
        )?;
        to_value(&PeakDocument::new(vec![snap]))
    }

    pub(crate) fn peak(&self, a: &super::params::PeakArgs) -> Result<Value, String> {
        let mut ans = Answer::new("peak");
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), Some(&a.path))?;
        let at = self.page_at(a.limit, a.cursor.as_deref(), &a.path, &detail)?;
        let rules = self.rules(a.rules.as_deref(), None)?;
        let mut doc = self.peak_document(
            &mut ans,
            &a.path,
            &rules,
            peak_at(a.at.as_deref())?,
            a.window.as_deref(),
            at.wanted(),
        )?;
        let next = page_devices(&mut doc, PEAK_LISTS, at);
        ans.set("figures", answer::figure_rows(&doc));
        ans.set("where", where_view(&doc));
        ans.set("next_cursor", next);
        self.deliver(&mut ans, doc, &detail, &["stacks-at-peak", "figures"])?;
        Ok(ans.finish())
    }

    pub(crate) fn profile(&self, a: &super::params::ProfileArgs) -> Result<Value, String> {
        let mut ans = Answer::new("profile");
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), Some(&a.path))?;
        let at = self.page_at(a.limit, a.cursor.as_deref(), &a.path, &detail)?;
        let rules = self.rules(a.rules.as_deref(), a.categories.as_ref())?;
        let group_by: GroupBy = (a.group_by.as_deref().unwrap_or("category"))
            .parse()
            .map_err(|e| format!("group_by {e}"))?;
        let html_path = a
            .html
            .as_deref()
            .map(|p| self.roots.writable(p))
            .transpose()?;
        let l = self.load(&a.path, &mut ans)?;
        if html_path
            .as_deref()
            .is_some_and(|h| crate::files::same_file(h, &l.path))
        {
            return Err("html: would overwrite the snapshot it reads".into());
        }
        let w = window(a.window.as_deref())?;
        let (snap, timelines) = self.analysed(
            &l,
            &rules,
            Request {
                group_by,
                timeline_points: html_path.as_ref().map(|_| html::MAX_POINTS),
                window: w.as_ref(),
                ..Request::top(at.wanted())
            },
        )?;
        let typed = ProfileDocument::new(vec![snap]);
        if let Some(out) = &html_path {
            crate::files::write_atomic(
                out,
                html::render(&typed, &[timelines], html::XAxis::Auto).as_bytes(),
            )
            .map_err(|e| format!("{}: cannot write the HTML report: {e}", out.display()))?;
            ans.set("html", out.display().to_string());
        }
        let mut doc = to_value(&typed)?;
        let next = page_devices(&mut doc, PEAK_LISTS, at);
        ans.set("figures", answer::figure_rows(&doc));
        ans.set("next_cursor", next);
        self.deliver(&mut ans, doc, &detail, &["figures"])?;
        Ok(ans.finish())
    }

    pub(crate) fn phases(&self, a: &super::params::PhasesArgs) -> Result<Value, String> {
        let mut ans = Answer::new("phases");
        let at = PageAt::new(a.limit, a.cursor.as_deref())?;
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), Some(&a.path))?;
        let rules = self.rules(a.rules.as_deref(), None)?;
        let boundary = match &a.iteration_boundary {
            Some(p) => Boundary::Prefix(p.clone()),
            None => Boundary::Default,
        };
        let l = self.load(&a.path, &mut ans)?;
        let annotation = a.annotation.clone().unwrap_or_default();
        let devices = phases_with_rules(&l.snap, &boundary, &annotation, &rules);
        let typed = PhasesDocument::new(vec![PhasedSnapshot::new(
            &l.path,
            devices,
            l.snap.warnings.clone(),
            None,
        )]);
        let mut doc = to_value(&typed)?;
        let next = page_devices(&mut doc, &["annotations", "phases", "iterations/items"], at);
        ans.set("next_cursor", next);
        self.deliver(&mut ans, doc, &detail, &[])?;
        Ok(ans.finish())
    }

    pub(crate) fn live_at(&self, a: &super::params::LiveAtArgs) -> Result<Value, String> {
        let mut ans = Answer::new("live_at");
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), Some(&a.path))?;
        let at = self.page_at(a.limit, a.cursor.as_deref(), &a.path, &detail)?;
        let rules = self.rules(a.rules.as_deref(), None)?;
        let given = [
            a.entry.is_some(),
            a.time_us.is_some(),
            a.phase.is_some(),
            a.peak.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err("give exactly one of entry, time_us, phase or peak".into());
        }
        let (spec, which) = if let Some(e) = a.entry {
            (Some(format!("#{e}..#{e}")), PeakAt::AllocatedPeak)
        } else if let Some(t) = a.time_us {
            // The same cached snapshot the analysis below reads (counted there).
            let (snap, _) = self.cache.get(&self.roots.existing(&a.path)?)?;
            let e = entry_at_time(&snap, a.device, t)?;
            (Some(format!("#{e}..#{e}")), PeakAt::AllocatedPeak)
        } else if let Some(name) = &a.phase {
            let n = a.occurrence.unwrap_or(0);
            (
                Some(format!("@{name}:START:{n}..@{name}:END:{n}")),
                PeakAt::AllocatedPeak,
            )
        } else {
            (None, peak_at(a.peak.as_deref())?)
        };
        let mut doc = self.peak_document(
            &mut ans,
            &a.path,
            &rules,
            which,
            spec.as_deref(),
            at.wanted(),
        )?;
        let next = page_devices(&mut doc, PEAK_LISTS, at);
        let mut live = Vec::new();
        for snap in doc["snapshots"].as_array().into_iter().flatten() {
            for dev in snap["devices"].as_array().into_iter().flatten() {
                let m = &dev["stacks-at-moment"];
                live.push(json!({
                    "device": dev["device"],
                    "at": m["at"],
                    "entry": m.get("entry").cloned().unwrap_or(Value::Null),
                    "allocations": summary::stacks_view(&m["stacks"]),
                }));
            }
        }
        ans.set("window", spec);
        ans.set("live", live);
        ans.set("next_cursor", next);
        self.deliver(
            &mut ans,
            doc,
            &detail,
            &["stacks-at-moment", "stacks-at-peak", "sites-at-peak"],
        )?;
        Ok(ans.finish())
    }

    pub(crate) fn explain_oom(&self, a: &super::params::OomArgs) -> Result<Value, String> {
        let mut ans = Answer::new("explain_oom");
        let detail = self.detail(a.detail.as_deref(), a.document_to.as_deref(), Some(&a.path))?;
        let at = self.page_at(a.limit, a.cursor.as_deref(), &a.path, &detail)?;
        let rules = self.rules(None, None)?;
        let mut doc = self.peak_document(
            &mut ans,
            &a.path,
            &rules,
            PeakAt::AllocatedPeak,
            None,
            at.wanted(),
        )?;
        let next = page_devices(&mut doc, &["oom", "stacks-at-peak", "sites-at-peak"], at);
        let mut ooms = Vec::new();
        let mut events = 0u64;
        let mut dumps = Vec::new();
        for snap in doc["snapshots"].as_array().into_iter().flatten() {
            for dev in snap["devices"].as_array().into_iter().flatten() {
                if dev["dump"].is_object() {
                    dumps.push(answer::dump_view(&dev["device"], &dev["dump"]));
                }
                events += dev["figures"]["oom-events"].as_u64().unwrap_or(0);
                for o in dev["oom"].as_array().into_iter().flatten() {
                    let mut row = json!({"device": dev["device"]});
                    for (k, v) in o.as_object().into_iter().flatten() {
                        row[k] = match (k.as_str(), v.as_u64()) {
                            ("frames", _) => {
                                summary::fold(v.as_array().map(Vec::as_slice).unwrap_or(&[]))
                            }
                            ("entry" | "iteration", _) => v.clone(),
                            (_, Some(n)) => answer::bytes(n),
                            _ => v.clone(),
                        };
                    }
                    ooms.push(row);
                }
            }
        }
        let verdict = if !dumps.is_empty() && events == 0 {
            NO_HISTORY.to_string()
        } else if events == 0 {
            "no out-of-memory event in this trace".to_string()
        } else {
            format!(
                "{events} out-of-memory event(s): each with the request, what the device had \
                 free, what was allocated and reserved, the phase and the call stack"
            )
        };
        ans.set("verdict", verdict);
        ans.set("oom_events", events);
        ans.set("ooms", ooms);
        if !dumps.is_empty() {
            ans.set("dump", dumps);
        }
        ans.set("where", where_view(&doc));
        ans.set("next_cursor", next);
        self.deliver(
            &mut ans,
            doc,
            &detail,
            &["oom", "stacks-at-peak", "stacks-at-moment"],
        )?;
        Ok(ans.finish())
    }

    pub(crate) fn ranks(&self, a: &super::params::RanksArgs) -> Result<Value, String> {
        let mut ans = Answer::new("ranks");
        let at = PageAt::new(a.limit, a.cursor.as_deref())?;
        let rules = self.rules(a.rules.as_deref(), None)?;
        let mut rows = Vec::new();
        for p in few(&a.paths)? {
            let doc = self.peak_document(
                &mut ans,
                p,
                &rules,
                PeakAt::AllocatedPeak,
                a.window.as_deref(),
                1,
            )?;
            ans.trust.add_document(&doc);
            rows.extend(answer::figure_rows(&doc));
        }
        let mut spread = Map::new();
        for id in ["allocated-peak", "reserved-peak", "dynamic-peak"] {
            let vals: Vec<(u64, &Value)> = rows
                .iter()
                .filter_map(|r| Some((r[id]["value"].as_u64()?, r)))
                .collect();
            let (Some(max), Some(min)) = (
                vals.iter().max_by_key(|(v, _)| *v),
                vals.iter().min_by_key(|(v, _)| *v),
            ) else {
                continue;
            };
            spread.insert(
                id.into(),
                json!({
                    "max": answer::bytes(max.0), "max_at": {"path": max.1["path"], "device": max.1["device"]},
                    "min": answer::bytes(min.0), "min_at": {"path": min.1["path"], "device": min.1["device"]},
                    "spread": answer::bytes(max.0 - min.0),
                }),
            );
        }
        let (rows, next) = page::page(&rows, at);
        ans.set("ranks", rows);
        ans.set("spread", Value::Object(spread));
        ans.set(
            "note",
            "per-rank figures, one row per file and device (the cross-rank analysis is not in this build)",
        );
        ans.set("next_cursor", next);
        Ok(ans.finish())
    }
}

/// `explain_oom`'s verdict on a snapshot without allocation history.
const NO_HISTORY: &str = "no allocation history in this snapshot (recorded with history off): \
    whether an out-of-memory event happened cannot be known from it; `dump` gives what the \
    dump itself shows per device: live and reserved bytes, the free cached bytes, the largest \
    free block and the largest live blocks with their frames";

/// The lists of an analysed device that pages walk.
const PEAK_LISTS: &[&str] = &["stacks-at-peak", "sites-at-peak", "stacks-at-moment/stacks"];

/// Cut each device's `lists` (a `/`-path under the device) to the page; the
/// next page's cursor when any was longer.
pub(crate) fn page_devices(doc: &mut Value, lists: &[&str], at: PageAt) -> Option<String> {
    let mut more = false;
    let end = at.offset.saturating_add(at.limit);
    for snap in doc["snapshots"].as_array_mut().into_iter().flatten() {
        for dev in snap["devices"].as_array_mut().into_iter().flatten() {
            for list in lists {
                let pointer = format!("/{list}");
                if let Some(Value::Array(items)) = dev.pointer_mut(&pointer) {
                    more |= items.len() > end;
                    let (kept, _) = page::page(items, at);
                    *items = kept;
                }
            }
        }
    }
    more.then(|| page::cursor(end))
}

/// Each device's stacks at the peak with human sizes and user code first.
fn where_view(doc: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for snap in doc["snapshots"].as_array().into_iter().flatten() {
        for dev in snap["devices"].as_array().into_iter().flatten() {
            out.push(json!({
                "path": snap["path"],
                "device": dev["device"],
                "stacks_at_peak": summary::stacks_view(&dev["stacks-at-peak"]),
            }));
        }
    }
    out
}

/// The index (within `device`'s trace, the first device by default) of the
/// last entry at or before `time_us`.
fn entry_at_time(s: &Snapshot, device: Option<u32>, time_us: i64) -> Result<usize, String> {
    let devices = s.devices();
    let d = match device {
        Some(d) => crate::vocab::Device::new(d),
        None => devices
            .first()
            .copied()
            .ok_or("the snapshot has no device")?,
    };
    let range = s
        .traces
        .get(d.index())
        .ok_or_else(|| format!("device {d}: no trace"))?;
    s.entries
        .range(range.clone())
        .iter()
        .rposition(|e| e.time().is_some_and(|t| t <= time_us))
        .ok_or_else(|| format!("device {d}: no timed entry at or before time_us {time_us}"))
}

pub(crate) fn few(paths: &[String]) -> Result<&[String], String> {
    match paths.len() {
        0 => Err("no path given".into()),
        n if n > MAX_FILES => Err(format!("{n} files, more than {MAX_FILES} in one call")),
        _ => Ok(paths),
    }
}

pub(crate) fn to_value(doc: &impl serde::Serialize) -> Result<Value, String> {
    serde_json::to_value(doc).map_err(|e| format!("cannot build the answer: {e}"))
}

pub(crate) fn path_text(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real_dir() -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
        if dir.is_dir() {
            return Some(dir);
        }
        eprintln!(
            "SKIPPED: ../shared not found at {}: the 10,000-call MCP test did not run",
            dir.display()
        );
        None
    }

    /// The frame bytes an answer's stacks list, as the report limit counts
    /// them (`snapshot::labels`: each label and 16 bytes).
    fn listed(answer: &Value) -> u64 {
        let mut n = 0;
        for snap in answer["document"]["snapshots"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for dev in snap["devices"].as_array().into_iter().flatten() {
                let lists = [&dev["stacks-at-peak"], &dev["stacks-at-moment"]["stacks"]];
                for stack in lists.into_iter().filter_map(Value::as_array).flatten() {
                    for f in stack["frames"].as_array().into_iter().flatten() {
                        n += f.as_str().map_or(0, str::len) as u64 + 16;
                    }
                }
            }
        }
        n
    }

    fn real_work() -> Option<Work> {
        Some(Work {
            roots: Roots::new(&[real_dir()?]).unwrap(),
            cache: Arc::new(Cache::new(1 << 30)),
            memo: Memo::default(),
            built_in: BuiltIn::default(),
        })
    }

    const SMALL_REAL: &str = "wrapped_jogregoire_diffusion.pickle";

    #[test]
    fn ten_thousand_uses_of_one_cached_real_snapshot_all_list_their_stacks() {
        // Each use lists every stack of the file, as a call's report would:
        // together far past what one snapshot's reports may list, had the
        // count been the cached snapshot's rather than each call's.
        let Some(work) = real_work() else { return };
        let path = work.roots.existing(SMALL_REAL).unwrap();
        let stacks = || {
            let (snap, _) = work.cache.get(&path).unwrap();
            let ids = 0..u32::try_from(snap.stack_count()).unwrap();
            ids.map(crate::snapshot::StackId::from_raw)
        };
        let per_use: u64 = {
            let (snap, _) = work.cache.get(&path).unwrap();
            stacks()
                .flat_map(|id| snap.stack_labels(id).to_vec())
                .map(|l| crate::snapshot::labels::frame_cost(&l))
                .sum()
        };
        let limit = crate::snapshot::labels::MAX_REPORTED_FRAME_BYTES;
        assert!(per_use * 10_000 > limit, "{per_use} bytes a use");
        for i in 0..10_000 {
            let (snap, source) = work.cache.get(&path).unwrap();
            assert_eq!(source, Source::Cached, "use {i}");
            for id in stacks() {
                let labels = snap.stack_labels(id);
                let first = labels.first().map(|l| &**l);
                assert_ne!(first, Some(crate::snapshot::labels::OVER_BUDGET), "use {i}");
            }
            assert_eq!(snap.labels_overflow(), None, "use {i}");
        }
        assert_eq!(work.cache.len(), 1);
    }

    #[test]
    fn a_hundred_peak_calls_on_one_cached_real_snapshot_answer_alike() {
        let Some(work) = real_work() else { return };
        let args = super::super::params::PeakArgs {
            path: SMALL_REAL.into(),
            at: None,
            rules: None,
            window: None,
            limit: Some(page::MAX_LIMIT),
            cursor: None,
            detail: Some("full".into()),
            document_to: None,
        };
        let first = work.peak(&args).unwrap();
        assert!(first["document"].is_object(), "{first}");
        assert!(listed(&first) > 0);
        for i in 1..100 {
            let answer = work
                .peak(&args)
                .unwrap_or_else(|e| panic!("call {i} failed: {e}"));
            assert_eq!(answer["document"], first["document"], "call {i}");
            assert_eq!(answer["cache"]["decoded"], 0, "call {i}");
        }
    }
}
