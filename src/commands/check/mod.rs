//! `memgate check` as a pipeline: the reports asked for → the budget file →
//! a plan per target (its snapshots, their baselines, its lens) → every file
//! analysed once per lens → one verdict per target → the reports (JUnit,
//! Markdown, JSON, GitLab metrics, HTML), the GitHub Actions files and the
//! terminal summary.

mod analyse;
mod analysis_adapter;
mod baselines;
mod inputs;
mod judge;
mod outputs;
mod owners;
mod plan;
mod publish;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analysis::{InlineRules, Window};
use crate::compare::{TargetVerdict, Verdict};
use crate::error::{DestinationError, Error, UsageError};

use super::Outcome;
use analyse::Files;
use publish::{could_not_judge, publish};

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
    /// The page's x axis at first (`--x`).
    pub x_axis: crate::report::html::XAxis,
    /// Bencher Metric Format JSON of the figures.
    pub bencher: Option<PathBuf>,
    /// github-action-benchmark's `customSmallerIsBetter` JSON of the figures.
    pub benchmark_json: Option<PathBuf>,
    /// GitLab's Code Quality report of the checks that did not pass.
    pub codequality: Option<PathBuf>,
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
    /// `--categories`: custom rules tried before the budget's
    /// `[categories]`.
    pub categories: Option<String>,
    /// The budget as a JSON document (the structure of the budget file)
    /// instead of the file; `config` then names it in messages, and its
    /// relative paths are taken from `config`'s directory (the current
    /// directory for a bare name such as the command line's `budget`).
    pub budget_json: Option<String>,
    /// Report files the caller made for itself and removes when it returns
    /// (the Python API's and the MCP server's verdict), or names itself
    /// (the MCP answer's page): written like the others but not named on
    /// stderr (`wrote PATH`).
    pub unannounced: Vec<PathBuf>,
    /// Snapshots the caller already holds decoded (`memgate mcp`'s cache).
    pub decoded: Option<crate::commands::Decoded>,
}

pub fn run(opts: &CheckOptions, out: &mut dyn Write) -> Outcome {
    let config = opts
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from("memgate.toml"));
    let reports = outputs::reports(opts);
    let inline = match opts.categories.as_deref().map(InlineRules::parse) {
        None => None,
        Some(Ok(i)) => Some(i),
        Some(Err(e)) => {
            let errors = vec![UsageError::Categories(e).into()];
            return could_not_judge(opts, &reports, errors, &[config.as_path()], out);
        }
    };
    let check_globs = opts.snapshots.is_empty();
    // A budget given as data has no file that a report could replace.
    let config_file = opts.budget_json.is_none().then_some(config.as_path());
    let loaded = match &opts.budget_json {
        Some(json) => analysis_adapter::load_budget_data(
            json,
            &config.display().to_string(),
            config.parent().unwrap_or(Path::new("")),
            check_globs,
            inline.as_ref(),
        ),
        None => analysis_adapter::load_budget(&config, check_globs, inline.as_ref()),
    };
    let (budget, rules, windows) = match loaded {
        Ok(b) => b,
        Err(unusable) => {
            let errors = unusable.errors.into_iter().map(Error::from).collect();
            let read: Vec<&Path> = config_file
                .into_iter()
                .chain(unusable.rules_file.as_deref())
                .collect();
            return could_not_judge(opts, &reports, errors, &read, out);
        }
    };
    let owners = match owners::OwnerLookup::load(&budget) {
        Ok(o) => o,
        Err(errors) => {
            let errors = errors.into_iter().map(Error::from).collect();
            let read: Vec<&Path> = config_file.into_iter().collect();
            return could_not_judge(opts, &reports, errors, &read, out);
        }
    };
    if opts.validate {
        return valid(&config, budget.targets.len(), out);
    }
    let unusable = usage(outputs::check(&reports));
    let (plans, not_planned) = plan::plan(&budget, &windows, opts);
    let read: Vec<&Path> = config_file
        .into_iter()
        .chain(analysis_adapter::rules_file(&budget))
        .chain(owners.as_ref().and_then(|o| o.file.as_deref()))
        .collect();
    let inputs = plans.inputs(&read);
    // A bad report path is named first; the inputs are known by now, so the
    // reports still written cannot replace one.
    let clashes = usage(outputs::clash_with_inputs(&reports, &inputs));
    for errors in [unusable, not_planned, clashes] {
        if !errors.is_empty() {
            return could_not_judge(opts, &reports, errors, &inputs, out);
        }
    }

    let files = Files::analyse(&plans.targets, &rules, opts);
    let targets: Vec<TargetVerdict> = budget
        .targets
        .iter()
        .zip(&plans.targets)
        .map(|(t, plan)| judge::judge_target(&budget, t, plan, &files, opts.require_baseline))
        .collect();
    let mut verdict = Verdict::new(&budget, opts.timestamp.unwrap_or_else(now), targets);
    owners.iter().for_each(|o| o.assign(&mut verdict));
    // The page finds each file as its target analysed it (the lens).
    let charted = |t: usize, path: &str| {
        let lens = plans.targets.get(t)?.lens();
        files.charted(Path::new(path), lens)
    };
    publish(opts, &reports, &verdict, &charted, out)
}

/// `check --validate`'s line for a budget that can be used.
fn valid(config: &Path, targets: usize, out: &mut dyn Write) -> Outcome {
    let _ = writeln!(out, "{}: valid, {targets} target(s)", config.display());
    Outcome::ok()
}

fn usage(errors: Vec<DestinationError>) -> Vec<Error> {
    errors
        .into_iter()
        .map(|e| UsageError::from(e).into())
        .collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
