//! `memgate check`: budget file → snapshots and baselines → verdict →
//! JUnit, Markdown, JSON, GitLab metrics, GitHub Actions outputs, terminal
//! summary.

mod analysis_adapter;
mod baselines;
mod inputs;
mod outputs;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::analysis::{Boundary, DeviceReport, Timeline, Window, WindowError};
use crate::budget;
use crate::compare::{self, Against, Status as CheckStatus, TargetVerdict, Verdict};
use crate::error::{Error, UsageError};
use crate::report::{github, html, json, junit, markdown, metrics, terminal};

use super::{Gate, Outcome};
use inputs::{Baselines, Planned};
use outputs::Dest;

/// The GitHub Actions environment, when running there.
#[derive(Debug, Clone, Default)]
pub struct GithubEnv {
    /// `GITHUB_STEP_SUMMARY`: the Markdown report is appended here.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_OUTPUT`: `verdict`, `regressions`, `report`.
    pub output: Option<PathBuf>,
    /// Print `::error` annotations (`GITHUB_ACTIONS=true`).
    pub annotate: bool,
}

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    pub config: Option<PathBuf>,
    pub snapshots: Vec<String>,
    pub validate: bool,
    pub baseline: Option<String>,
    pub junit: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// GitLab's metrics report (OpenMetrics text).
    pub metrics: Option<PathBuf>,
    /// The HTML page of the run.
    pub html: Option<PathBuf>,
    pub warn_only: bool,
    pub require_baseline: bool,
    pub comment_size: bool,
    /// Seconds since the epoch for the reports (`SOURCE_DATE_EPOCH`); now
    /// when `None`.
    pub timestamp: Option<i64>,
    pub color: bool,
    pub github: GithubEnv,
    /// Judge every target inside this window (replaces the targets'
    /// `window`).
    pub window: Option<Window>,
}

pub fn run(opts: &CheckOptions, out: &mut dyn Write) -> Outcome {
    let config = opts
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from("memgate.toml"));
    let (budget, rules, windows) =
        match analysis_adapter::load_budget(&config, opts.snapshots.is_empty()) {
            Ok(b) => b,
            Err(unusable) => {
                let errors = unusable.errors.into_iter().map(Error::from).collect();
                let read: Vec<&Path> = std::iter::once(config.as_path())
                    .chain(unusable.rules_file.as_deref())
                    .collect();
                return could_not_judge(opts, errors, &read, out);
            }
        };
    if opts.validate {
        let _ = writeln!(
            out,
            "{}: valid, {} target(s)",
            config.display(),
            budget.targets.len()
        );
        return Outcome::ok();
    }
    let [junit_to, markdown_to, json_to, metrics_to] = destinations(opts);
    // A file always: the page is no report for a terminal.
    let html_to = opts.html.clone().map(Dest::File);
    let mut named = by_flag([&junit_to, &markdown_to, &json_to, &metrics_to]);
    named.extend(html_to.as_ref().map(|d| ("--html", d)));
    let unusable = usage(outputs::check(&named));

    let mut plans: Vec<Vec<Planned>> = Vec::new();
    // Per target, the baseline entries no snapshot is named after.
    let mut unclaimed: Vec<Vec<(String, PathBuf)>> = Vec::new();
    let mut errors: Vec<Error> = Vec::new();
    // The files of targets that could not be planned: not read, but no
    // report written to say why may replace one.
    let mut unplanned: Vec<PathBuf> = Vec::new();
    for t in &budget.targets {
        let spec = opts.baseline.as_deref().or(t.baseline.as_deref());
        let planned = Baselines::resolve(spec, t.key.as_ref())
            .map_err(|e| vec![e.into()])
            .and_then(|b| {
                let p = inputs::plan(t, &opts.snapshots, &b)?;
                let claimed: Vec<&str> = p.iter().map(|p| p.key.as_str()).collect();
                let left = b
                    .unclaimed(&claimed)
                    .into_iter()
                    .map(|(k, f)| (k.to_string(), f.to_path_buf()))
                    .collect();
                Ok((p, left))
            });
        match planned {
            Ok((p, _)) if p.is_empty() => errors.push(Error::NothingToJudge.in_target(&t.name)),
            Ok((p, left)) => {
                plans.push(p);
                unclaimed.push(left);
            }
            Err(e) => {
                errors.extend(e.into_iter().map(|e| e.in_target(&t.name)));
                unplanned.extend(inputs::named_files(t, &opts.snapshots, spec));
            }
        }
    }
    // Every file the run reads, that no report may replace: the budget and
    // rules files, each snapshot and every baseline entry.
    let inputs: Vec<&Path> = std::iter::once(config.as_path())
        .chain(analysis_adapter::rules_file(&budget))
        .chain(
            plans
                .iter()
                .flatten()
                .flat_map(|p| std::iter::once(p.path.as_path()).chain(p.baseline.as_deref())),
        )
        .chain(unclaimed.iter().flatten().map(|(_, f)| f.as_path()))
        .chain(unplanned.iter().map(PathBuf::as_path))
        .collect();
    // A bad report path is named first; the inputs are known by now, so the
    // reports still written cannot replace one.
    if !unusable.is_empty() {
        return could_not_judge(opts, unusable, &inputs, out);
    }
    if !errors.is_empty() {
        return could_not_judge(opts, errors, &inputs, out);
    }
    let errors = usage(outputs::clash_with_inputs(&named, &inputs));
    if !errors.is_empty() {
        return could_not_judge(opts, errors, &inputs, out);
    }

    // Each target's window (`--window`, else its own `window`) and
    // iteration boundary: a file is analysed once per pair.
    let boundaries: Vec<Option<Boundary>> = budget
        .targets
        .iter()
        .map(|t| t.iteration_boundary.clone().map(Boundary::Prefix))
        .collect();
    let lenses: Vec<Lens> = windows
        .iter()
        .zip(&boundaries)
        .map(|(w, b)| Lens {
            window: opts.window.as_ref().or(w.as_ref()),
            boundary: b.as_ref(),
        })
        .collect();
    // Every file once per lens, all in parallel: current snapshots and
    // baselines (those no snapshot claims too: what they hold is reported).
    let mut files: Vec<(PathBuf, Lens)> = plans
        .iter()
        .zip(&unclaimed)
        .zip(&lenses)
        .flat_map(|((planned, left), &l)| {
            planned
                .iter()
                .flat_map(|p| std::iter::once(p.path.clone()).chain(p.baseline.clone()))
                .chain(left.iter().map(|(_, f)| f.clone()))
                .map(move |f| (f, l))
        })
        .collect();
    files.sort_by_key(|(p, l)| file_key(p, *l));
    files.dedup_by_key(|(p, l)| file_key(p, *l));
    let snapshots: HashSet<&Path> = plans.iter().flatten().map(|p| p.path.as_path()).collect();
    // With --html, each snapshot's timelines come from the same replay.
    let points = opts.html.as_ref().map(|_| html::points_for(files.len()));
    let analysed: Vec<Analysed> = files
        .par_iter()
        .map(|(p, l)| {
            let current = snapshots.contains(p.as_path());
            let (f, t, u) = match inputs::figures(p, &rules, current, l.window, l.boundary, points)
            {
                Ok((f, t, u)) => (Ok(f), t, u),
                Err(e) => (Err(e), None, Vec::new()),
            };
            (file_key(p, *l), f, t, u)
        })
        .collect();
    let mut figures: HashMap<FileKey, Result<Vec<DeviceReport>, Error>> = HashMap::new();
    let mut timelines: HashMap<FileKey, Vec<Timeline>> = HashMap::new();
    // Per file, the devices its window places nothing on.
    let mut unplaced: HashMap<FileKey, Vec<WindowError>> = HashMap::new();
    for (k, f, t, u) in analysed {
        if let Some(t) = t {
            timelines.insert(k.clone(), t);
        }
        unplaced.insert(k.clone(), u);
        figures.insert(k, f);
    }

    let targets: Vec<TargetVerdict> = budget
        .targets
        .iter()
        .zip(plans.iter().zip(&unclaimed))
        .zip(&lenses)
        .map(|((t, (planned, left)), &lens)| {
            let figures = |path: &PathBuf| &figures[&file_key(path, lens)];
            // The judged devices (the target's `device`, else all) the
            // window places nothing on.
            let missed = |path: &PathBuf| -> Vec<WindowError> {
                unplaced[&file_key(path, lens)]
                    .iter()
                    .filter(|e| t.device.is_none_or(|want| want == e.device))
                    .cloned()
                    .collect()
            };
            let mut snapshots: Vec<_> = planned
                .iter()
                .map(|p| {
                    let path = p.path.display().to_string();
                    let base_name = p.baseline.as_ref().map(|b| b.display().to_string());
                    let base = p.baseline.as_ref().map(figures);
                    match (figures(&p.path), base) {
                        (Err(e), _) => {
                            compare::unreadable(p.name.clone(), path, base_name, e.to_string())
                        }
                        (_, Some(Err(e))) => compare::unreadable(
                            p.name.clone(),
                            path,
                            base_name,
                            format!("baseline {e}"),
                        ),
                        (Ok(cur), _) if places_none(t, cur, &missed(&p.path)).is_some() => {
                            let error = places_none(t, cur, &missed(&p.path))
                                .map(|error| Error::Window {
                                    path: p.path.clone(),
                                    error,
                                })
                                .map(|e| e.to_string())
                                .unwrap_or_default();
                            compare::unreadable(p.name.clone(), path, base_name, error)
                        }
                        (Ok(cur), _) if nothing_to_judge(t, cur).is_some() => {
                            let why = nothing_to_judge(t, cur).unwrap_or_default();
                            compare::unreadable(p.name.clone(), path, base_name, why)
                        }
                        (Ok(cur), base) => {
                            let against = Against {
                                budget: &budget,
                                target: t,
                                baseline: base_name
                                    .as_deref()
                                    .zip(base.and_then(|b| b.as_deref().ok())),
                                lookup: p.lookup.as_ref(),
                                require_baseline: opts.require_baseline,
                            };
                            let mut v = compare::judge(p.name.clone(), path.clone(), cur, &against);
                            compare::window_not_placed(&mut v, missed(&p.path));
                            if v.devices.iter().all(|d| d.checks.is_empty()) {
                                // `figures = []` and no budget: a pass here
                                // would be a pass on nothing.
                                compare::unreadable(
                                    p.name.clone(),
                                    path,
                                    base_name,
                                    "no check to judge: the target budgets nothing and \
                                     `[defaults] figures` is empty"
                                        .into(),
                                )
                            } else {
                                v
                            }
                        }
                    }
                })
                .collect();
            snapshots.extend(left.iter().map(|(name, file)| {
                let shown = file.display().to_string();
                match figures(file) {
                    Ok(devices) => {
                        compare::no_snapshot(name.clone(), shown, devices, opts.require_baseline)
                    }
                    Err(e) => compare::unreadable(
                        name.clone(),
                        shown.clone(),
                        Some(shown),
                        format!("baseline {e}"),
                    ),
                }
            }));
            TargetVerdict::new(t.name.clone(), snapshots)
        })
        .collect();
    let verdict = Verdict::new(&budget, opts.timestamp.unwrap_or_else(now), targets);
    let mut outcome = report(
        opts,
        &verdict,
        [junit_to, markdown_to, json_to, metrics_to],
        out,
    );
    if let Some(d) = &html_to {
        // The page finds each file as its target analysed it (the lens).
        let charted = |t: usize, path: &str| {
            let key = file_key(Path::new(path), lenses.get(t).copied()?);
            let devices = figures.get(&key)?.as_deref().ok()?;
            let timelines = timelines.get(&key)?;
            Some(html::Charted { devices, timelines })
        };
        let page = html::render_check(&verdict, &charted);
        if let Err(e) = outputs::write(d, &page, out) {
            outcome.errors.push(e.into());
        }
    }
    outcome
}

/// How a target looks at its files: inside its window, with its
/// iteration boundary.
#[derive(Clone, Copy)]
struct Lens<'a> {
    window: Option<&'a Window>,
    boundary: Option<&'a Boundary>,
}

/// A file as analysed for a target: its path, the window's spec and the
/// iteration boundary's prefix.
type FileKey = (PathBuf, Option<String>, Option<String>);

/// A file's figures (or why there are none), with `--html` a snapshot's
/// timelines, and the devices its window places nothing on.
type Analysed = (
    FileKey,
    Result<Vec<DeviceReport>, Error>,
    Option<Vec<Timeline>>,
    Vec<WindowError>,
);

fn file_key(path: &Path, lens: Lens<'_>) -> FileKey {
    let boundary = lens.boundary.map(|b| match b {
        Boundary::Default => String::new(),
        Boundary::Prefix(p) => p.clone(),
    });
    (
        path.to_path_buf(),
        lens.window.map(ToString::to_string),
        boundary,
    )
}

/// The window's error on a judged device, when it places nothing on any
/// device the target judges (`missed` are those it places nothing on):
/// judging the others would be a pass on nothing.
fn places_none(
    t: &budget::Target,
    devices: &[DeviceReport],
    missed: &[WindowError],
) -> Option<WindowError> {
    let judged = devices
        .iter()
        .any(|d| t.device.is_none_or(|want| want == d.device));
    (!judged).then(|| missed.first().cloned()).flatten()
}

/// Why a readable snapshot gives the target nothing to judge: it holds no
/// device at all, or not the one the target asks for.
fn nothing_to_judge(t: &budget::Target, devices: &[DeviceReport]) -> Option<String> {
    let found = || {
        devices
            .iter()
            .map(|d| format!("dev{}", d.device))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match t.device {
        _ if devices.is_empty() => Some(
            "the snapshot holds no device (no segment and no trace entry): nothing to judge".into(),
        ),
        Some(want) if !devices.iter().any(|d| d.device == want) => Some(format!(
            "the target asks for dev{want} (`device = {want}`), but the snapshot holds only {}",
            found()
        )),
        _ => None,
    }
}

fn usage(errors: Vec<crate::error::DestinationError>) -> Vec<Error> {
    errors
        .into_iter()
        .map(|e| UsageError::from(e).into())
        .collect()
}

#[expect(
    clippy::cast_possible_wrap,
    reason = "issue 20 item 8: cast audit pending in this module"
)]
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Where `--junit`, `--markdown`, `--json` and `--metrics` send their
/// reports.
fn destinations(opts: &CheckOptions) -> [Option<Dest>; 4] {
    [&opts.junit, &opts.markdown, &opts.json, &opts.metrics].map(|p| p.as_deref().map(Dest::new))
}

/// The given destinations, each with the flag that named it.
fn by_flag(dests: [&Option<Dest>; 4]) -> Vec<(&'static str, &Dest)> {
    ["--junit", "--markdown", "--json", "--metrics"]
        .into_iter()
        .zip(dests)
        .filter_map(|(f, d)| d.as_ref().map(|d| (f, d)))
        .collect()
}

/// The gate could not judge at all (bad budget file, nothing to judge, an
/// unusable report path): write what still can be written, so CI shows why
/// the job is red: a one-case JUnit `<error>`, a one-line Markdown report
/// and step summary, a metrics report with the verdict `error` only, an
/// HTML page of the reasons, `verdict=error` in `GITHUB_OUTPUT`, `::error`
/// lines.
/// A report path that is itself the problem, or would overwrite one of
/// `inputs`, is left alone. The exit status stays "could not judge".
fn could_not_judge(
    opts: &CheckOptions,
    mut errors: Vec<Error>,
    inputs: &[&Path],
    out: &mut dyn Write,
) -> Outcome {
    let reasons: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let [junit_to, markdown_to, json_to, metrics_to] = destinations(opts);
    let html_to = opts.html.clone().map(Dest::File);
    // --json takes part in the clash checks though it gets nothing to write.
    let mut named = by_flag([&junit_to, &markdown_to, &json_to, &metrics_to]);
    named.extend(html_to.as_ref().map(|d| ("--html", d)));
    let usable: Vec<(&str, &Dest)> = outputs::usable(&named, inputs)
        .into_iter()
        .filter(|(flag, _)| *flag != "--json")
        .collect();
    let stamp = opts.timestamp.unwrap_or_else(now);
    let line = markdown::error_report(&reasons);
    for &(flag, d) in &usable {
        let text = match flag {
            "--junit" => junit::error_report(&reasons, stamp),
            "--metrics" => metrics::error_report(),
            "--html" => html::render_check_error(&reasons),
            _ => line.clone(),
        };
        if let Err(e) = outputs::write(d, &text, out) {
            errors.push(e.into());
        }
    }
    if opts.github.annotate {
        let stdout_taken = usable.iter().any(|(_, d)| **d == Dest::Stdout);
        let mut stderr = std::io::stderr();
        let human: &mut dyn Write = if stdout_taken { &mut stderr } else { out };
        for r in &reasons {
            let _ = writeln!(human, "{}", github::error_annotation(r));
        }
    }
    if let Some(p) = &opts.github.step_summary {
        if let Err(e) = outputs::append(p, &line) {
            errors.push(e.into());
        }
    }
    if let Some(p) = &opts.github.output {
        let report = usable
            .iter()
            .filter(|(flag, _)| *flag == "--markdown")
            .find_map(|(_, d)| d.file())
            .map(|p| p.display().to_string());
        if let Err(e) = outputs::append(p, &github::error_outputs(report.as_deref())) {
            errors.push(e.into());
        }
    }
    Outcome::from_errors(errors)
}

/// Write every report, then map the verdict to the exit status.
fn report(
    opts: &CheckOptions,
    v: &Verdict,
    [junit_to, markdown_to, json_to, metrics_to]: [Option<Dest>; 4],
    out: &mut dyn Write,
) -> Outcome {
    let mut errors: Vec<Error> = Vec::new();
    let limit = if opts.comment_size {
        markdown::COMMENT_LIMIT
    } else {
        markdown::STEP_SUMMARY_LIMIT
    };
    let mut written = |dest: &Option<Dest>, render: &dyn Fn() -> String| {
        if let Some(d) = dest {
            if let Err(e) = outputs::write(d, &render(), out) {
                errors.push(e.into());
            }
        }
    };
    written(&junit_to, &|| junit::render(v));
    // The Markdown links to the page when one is written next to it.
    let page_link = opts
        .html
        .as_deref()
        .map(|p| markdown::page_link(&p.display().to_string()))
        .unwrap_or_default();
    written(&markdown_to, &|| {
        markdown::render(v, limit.saturating_sub(page_link.len())) + &page_link
    });
    written(&json_to, &|| json::render(v));
    written(&metrics_to, &|| metrics::render(v));
    let stdout_taken = [&junit_to, &markdown_to, &json_to, &metrics_to]
        .iter()
        .any(|d| **d == Some(Dest::Stdout));
    let mut stderr = std::io::stderr();
    let human: &mut dyn Write = if stdout_taken { &mut stderr } else { out };
    let _ = human.write_all(terminal::render(v, opts.color).as_bytes());
    if opts.github.annotate {
        for a in github::annotations(v) {
            let _ = writeln!(human, "{a}");
        }
    }
    if let Some(p) = &opts.github.step_summary {
        if let Err(e) = outputs::append(p, &markdown::render(v, markdown::STEP_SUMMARY_LIMIT)) {
            errors.push(e.into());
        }
    }
    if let Some(p) = &opts.github.output {
        let report = [&markdown_to, &json_to]
            .into_iter()
            .flatten()
            .find_map(|d| d.file())
            .map(Path::display);
        let report = report.map(|r| r.to_string());
        if let Err(e) = outputs::append(p, &github::outputs(v, report.as_deref())) {
            errors.push(e.into());
        }
    }
    for (t, s) in v
        .targets
        .iter()
        .flat_map(|t| t.snapshots.iter().map(move |s| (t, s)))
    {
        if let Some(e) = &s.error {
            errors.push(Error::NotJudged(e.clone()).in_target(&t.name));
        }
    }
    let gate = match v.verdict {
        CheckStatus::Error => Gate::NotJudged,
        CheckStatus::Fail if !opts.warn_only => Gate::Failed,
        _ => Gate::Passed,
    };
    Outcome { gate, errors }
}
