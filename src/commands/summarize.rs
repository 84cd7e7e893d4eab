//! `memgate summarize`: one summary JSON per snapshot (`DIR/<stem>.json`),
//! the golden files a repository commits as baselines.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analysis::{Boundary, DeviceReport, Request, RuleSet, Window, WindowError};
use crate::baseline::{self, Summary};
use crate::input;
use crate::report::escape::terminal;

use crate::error::{Error, OutputError, UsageError};
use crate::files::{same_file, FileError};
use crate::snapshot::{self, LoadError, Snapshot};
use crate::vocab::{Rules, Statistic};

use super::analysed::{analyse_placing, rules};
use super::{Decoded, Outcome};

pub struct SummarizeOptions {
    pub snapshots: Vec<String>,
    pub output: PathBuf,
    pub rules: String,
    /// `--categories`: custom rules (JSON object or TOML inline table)
    /// tried before `rules`.
    pub categories: Option<String>,
    pub top: usize,
    /// Summarize the figures inside this window (docs/figures.md#windows).
    pub window: Option<Window>,
    /// Iterations start at annotations whose name starts with this (the
    /// default boundaries when `None`).
    pub iteration_boundary: Option<String>,
    /// `--project-root` and `--user-code`: what names an allocation site.
    pub sites: crate::analysis::SiteFlags,
    /// Snapshots the caller already holds decoded (`memgate mcp`'s cache):
    /// those are hashed for the provenance, not decoded again.
    pub decoded: Option<Decoded>,
    /// `--repeats`: inputs with one stem are repeated runs, folded into one
    /// summary at their median that keeps each figure's spread
    /// (docs/gate.md#repeated-runs); otherwise they are an error.
    pub repeats: bool,
}

/// The name of a snapshot's summary: `DIR/<stem>.json`.
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "snapshot".into())
}

pub(crate) fn write_summary(path: &Path, s: &Summary) -> Result<(), OutputError> {
    let error = |error| OutputError::Summary {
        path: path.to_path_buf(),
        error,
    };
    let mut text = serde_json::to_string_pretty(s)
        .map_err(|e| error(FileError::Write(std::io::Error::other(e))))?;
    text.push('\n');
    // A golden is replaced whole or not at all (a full disk, a kill).
    crate::files::write_atomic(path, text.as_bytes()).map_err(error)
}

/// Analyse a snapshot file into its summary (what `memgate summarize`
/// writes and `check` compares against): figures, categories and the top
/// `top` sites per device; no stack groups.
pub fn summarize_file(path: &Path, rules: &RuleSet, top: usize) -> Result<Summary, LoadError> {
    summarize_file_with(path, None, |snap| {
        Ok(crate::analysis::analyze(snap, rules, top))
    })
}

/// A snapshot file's summary, its devices analysed by `analyse`: figures,
/// categories and the top sites per device; no stack groups. The file is
/// read once, for the snapshot and its digest together; a snapshot
/// `decoded` holds is only hashed.
fn summarize_file_with<E: From<LoadError>>(
    path: &Path,
    decoded: Option<&Decoded>,
    analyse: impl FnOnce(&Snapshot) -> Result<Vec<DeviceReport>, E>,
) -> Result<Summary, E> {
    let (snap, digest) = match decoded.and_then(|d| d.get(path)) {
        Some(snap) => (snap, snapshot::digest_of(path)?),
        None => {
            let (content, digest) = snapshot::read_input_hashed(path)?;
            (content.into_snapshot(path)?, digest)
        }
    };
    let mut devices = analyse(&snap)?;
    // docs/figures.md#summaries: a *small* file (figures, categories, top sites, provenance);
    // full stacks with C++ frames would make it hundreds of KiB.
    for d in &mut devices {
        d.stacks_at_peak.clear();
    }
    Ok(baseline::summarize(path, &snap, digest, devices))
}

/// A snapshot's summary as `opts` asks for it, and the devices the window
/// places nothing on (not in the summary, as a check of that window does
/// not judge them).
pub(crate) fn summary_of(
    path: &Path,
    opts: &SummarizeOptions,
    rules: &RuleSet,
) -> Result<(Summary, Vec<WindowError>), Error> {
    let boundary = opts.iteration_boundary.clone().map(Boundary::Prefix);
    let mut unplaced = Vec::new();
    let summary = summarize_file_with(path, opts.decoded.as_ref(), |snap| {
        let window = opts.window.as_ref();
        let req = Request {
            window,
            iteration_boundary: boundary.as_ref(),
            ..Request::top(opts.top)
        };
        analyse_placing(path, snap, rules, req).map(|(devices, _, missed)| {
            unplaced = missed;
            devices
        })
    })?;
    Ok((summary, unplaced))
}

/// The summary of `path` (and of its repeated runs `more`, folded in)
/// written, and the devices the window places nothing on in `path`.
fn one(
    path: &Path,
    more: &[PathBuf],
    opts: &SummarizeOptions,
    rules: &RuleSet,
) -> Result<(PathBuf, Vec<WindowError>), Error> {
    let (mut summary, unplaced) = summary_of(path, opts, rules)?;
    if !more.is_empty() {
        let mut runs = vec![std::mem::take(&mut summary.devices)];
        let mut files = vec![path.display().to_string()];
        for p in more {
            runs.push(summary_of(p, opts, rules)?.0.devices);
            files.push(p.display().to_string());
        }
        let runs: Vec<&[DeviceReport]> = runs.iter().map(Vec::as_slice).collect();
        summary.devices = crate::compare::repeats::fold(&runs, &files, Statistic::Median)
            .map_err(Error::NotJudged)?;
    }
    let target = opts.output.join(format!("{}.json", stem(path)));
    write_summary(&target, &summary)?;
    Ok((target, unplaced))
}

/// Why summaries cannot be written where `pairs` (input, summary) say:
/// two inputs with one summary, or a summary that would replace one of the
/// files `read` (through a symlink or a hard link too).
pub(crate) fn clashes(pairs: &[(&Path, PathBuf)], read: &[&Path]) -> Vec<Error> {
    let mut errors: Vec<Error> = Vec::new();
    let mut seen: HashMap<&Path, &Path> = HashMap::new();
    for (input, summary) in pairs {
        if let Some(first) = seen.insert(summary, input) {
            errors.push(
                UsageError::SameSummary {
                    first: first.to_path_buf(),
                    second: input.to_path_buf(),
                    stem: stem(input),
                }
                .into(),
            );
        }
    }
    for (_, summary) in pairs {
        if let Some(input) = read.iter().find(|q| same_file(summary, q)) {
            errors.push(
                UsageError::SummaryOverInput {
                    target: summary.clone(),
                    input: input.to_path_buf(),
                }
                .into(),
            );
        }
    }
    errors
}

/// The first input of each summary, and with `repeats` the other inputs of
/// the same stem (repeated runs) by that first one; without, every input
/// is a summary of its own.
fn runs_by_stem(
    paths: &[PathBuf],
    repeats: bool,
) -> (Vec<PathBuf>, HashMap<PathBuf, Vec<PathBuf>>) {
    if !repeats {
        return (paths.to_vec(), HashMap::new());
    }
    let mut firsts: Vec<PathBuf> = Vec::new();
    let mut by_stem: HashMap<String, PathBuf> = HashMap::new();
    let mut more: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
    for p in paths {
        match by_stem.get(&stem(p)) {
            Some(first) => more.entry(first.clone()).or_default().push(p.clone()),
            None => {
                by_stem.insert(stem(p), p.clone());
                firsts.push(p.clone());
            }
        }
    }
    (firsts, more)
}

pub fn run(opts: &SummarizeOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules, opts.categories.as_deref(), &opts.sites) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let paths = match crate::walk::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::from_errors(errors.into_iter().map(Into::into).collect()),
    };
    // A summary written over one of the inputs (a snapshot, the rules file;
    // through a symlink or a hard link too) would lose it.
    let rules_file = match opts.rules.parse::<Rules>() {
        Ok(Rules::File(p)) => Some(p),
        _ => None,
    };
    let read: Vec<&Path> = paths
        .iter()
        .map(PathBuf::as_path)
        .chain(rules_file.as_deref())
        .collect();
    let (firsts, more) = runs_by_stem(&paths, opts.repeats);
    let pairs: Vec<(&Path, PathBuf)> = firsts
        .iter()
        .map(|p| (p.as_path(), opts.output.join(format!("{}.json", stem(p)))))
        .collect();
    let mut errors = clashes(&pairs, &read);
    if !errors.is_empty() {
        return Outcome::from_errors(errors);
    }
    if let Err(error) = crate::beneath::create_dir_all(&opts.output) {
        return Outcome::error(OutputError::Directory {
            path: opts.output.clone(),
            error,
        });
    }
    let none: Vec<PathBuf> = Vec::new();
    let more_of = |p: &Path| more.get(p).unwrap_or(&none);
    for r in input::par_map(&firsts, |p| one(p, more_of(p), opts, &rules)) {
        match r {
            Ok((target, unplaced)) => {
                let _ = writeln!(out, "wrote {}", terminal(&target.display().to_string()));
                let _ = crate::report::window_not_placed(out, &unplaced);
            }
            Err(e) => errors.push(e),
        }
    }
    Outcome::from_errors(errors)
}
