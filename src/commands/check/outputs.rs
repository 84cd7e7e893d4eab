//! Where `check` writes: the reports asked for, each a kind with its
//! renderer and a destination (checked before any snapshot is read; `-` is
//! stdout), and the GitHub Actions files. A report replaces its
//! file atomically; no report may be another report or an input.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use strum::IntoStaticStr;

use super::CheckOptions;
use crate::error::{DestinationError, OutputError};
use crate::files::{self, same_file};
use crate::report::escape::terminal;
use crate::report::exporter::Exporter;
use crate::report::{bencher, benchmark_json, codequality, html, json, junit, markdown, metrics};

/// A report destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dest {
    Stdout,
    File(PathBuf),
}

impl Dest {
    pub(crate) fn new(path: &Path) -> Dest {
        if path.as_os_str() == "-" {
            Dest::Stdout
        } else {
            Dest::File(path.to_path_buf())
        }
    }

    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            Dest::Stdout => None,
            Dest::File(p) => Some(p),
        }
    }
}

/// The kinds of report `check` writes, in the order it writes them (and
/// names them in errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr)]
pub(crate) enum ReportKind {
    #[strum(serialize = "--junit")]
    Junit,
    #[strum(serialize = "--markdown")]
    Markdown,
    #[strum(serialize = "--json")]
    Json,
    /// GitLab's metrics report (OpenMetrics text).
    #[strum(serialize = "--metrics")]
    Metrics,
    /// The HTML page of the run.
    #[strum(serialize = "--html")]
    Html,
    /// Bencher Metric Format JSON.
    #[strum(serialize = "--bencher")]
    Bencher,
    /// github-action-benchmark's `customSmallerIsBetter` JSON.
    #[strum(serialize = "--benchmark-json")]
    BenchmarkJson,
    /// GitLab's Code Quality report (Code Climate JSON).
    #[strum(serialize = "--codequality")]
    CodeQuality,
}

impl ReportKind {
    /// The option that names the report's destination.
    pub(crate) fn flag(self) -> &'static str {
        self.into()
    }

    pub(crate) fn exporter(self) -> &'static dyn Exporter {
        match self {
            ReportKind::Junit => &junit::Junit,
            ReportKind::Markdown => &markdown::Markdown,
            ReportKind::Json => &json::Json,
            ReportKind::Metrics => &metrics::Metrics,
            ReportKind::Html => &html::Page,
            ReportKind::Bencher => &bencher::Bencher,
            ReportKind::BenchmarkJson => &benchmark_json::BenchmarkJson,
            ReportKind::CodeQuality => &codequality::CodeQuality,
        }
    }
}

/// One report of the run: its kind and where it goes.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) kind: ReportKind,
    pub(crate) dest: Dest,
}

/// `page` as a link from the report `dest`: relative to the report's own
/// folder when both are files under one root, else as given (stdout).
pub(crate) fn link_from(dest: &Dest, page: &Path) -> String {
    let relative = match dest {
        Dest::File(report) => std::env::current_dir()
            .ok()
            .and_then(|cwd| relative_to(&cwd.join(page), cwd.join(report).parent()?)),
        Dest::Stdout => None,
    };
    relative.unwrap_or_else(|| page.display().to_string())
}

/// The path from the folder `dir` to `target`, `/`-separated, both
/// absolute, compared by name (`.` and `..` folded); `None` when they do
/// not share a root or a name is not Unicode.
fn relative_to(target: &Path, dir: &Path) -> Option<String> {
    use std::path::Component;
    let names = |p: &Path| -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::Prefix(x) => out.push(x.as_os_str().to_str()?.to_owned()),
                Component::RootDir => out.push("/".to_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    // Never above the root.
                    if out.len() > 1 {
                        out.pop();
                    }
                }
                Component::Normal(n) => out.push(n.to_str()?.to_owned()),
            }
        }
        Some(out)
    };
    let (to, from) = (names(target)?, names(dir)?);
    let shared = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    if shared == 0 || shared == to.len() {
        return None;
    }
    let mut parts: Vec<&str> = vec![".."; from.len() - shared];
    parts.extend(to[shared..].iter().map(String::as_str));
    Some(parts.join("/"))
}

/// The reports the options ask for, in the order they are written:
/// `--junit`, `--markdown`, `--json`, `--metrics` (each a file or `-`),
/// then `--html` (a file always: the page is no report for a terminal),
/// then the dashboards' `--bencher`, `--benchmark-json` and GitLab's
/// `--codequality` (each a file or `-`).
pub(crate) fn reports(opts: &CheckOptions) -> Vec<Report> {
    let to = |kind, path: &Option<PathBuf>, dest: fn(&Path) -> Dest| {
        let dest = dest(path.as_deref()?);
        Some(Report { kind, dest })
    };
    let file = |p: &Path| Dest::File(p.to_path_buf());
    [
        to(ReportKind::Junit, &opts.junit, Dest::new),
        to(ReportKind::Markdown, &opts.markdown, Dest::new),
        to(ReportKind::Json, &opts.json, Dest::new),
        to(ReportKind::Metrics, &opts.metrics, Dest::new),
        to(ReportKind::Html, &opts.html, file),
        to(ReportKind::Bencher, &opts.bencher, Dest::new),
        to(ReportKind::BenchmarkJson, &opts.benchmark_json, Dest::new),
        to(ReportKind::CodeQuality, &opts.codequality, Dest::new),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Whether one of `reports` takes stdout (the terminal summary then goes
/// to stderr).
pub(crate) fn take_stdout<'a>(reports: impl IntoIterator<Item = &'a Report>) -> bool {
    reports.into_iter().any(|r| r.dest == Dest::Stdout)
}

/// The file of the first of `reports` of one of `kinds`.
pub(crate) fn file_of<'a>(
    reports: impl IntoIterator<Item = &'a Report>,
    kinds: &[ReportKind],
) -> Option<&'a Path> {
    reports
        .into_iter()
        .filter(|r| kinds.contains(&r.kind))
        .find_map(|r| r.dest.file())
}

/// Every problem with the destinations: a missing directory, a
/// directory given as a file, stdout asked for twice.
pub(crate) fn check(reports: &[Report]) -> Vec<DestinationError> {
    let mut errors = Vec::new();
    let to_stdout = reports.iter().filter(|r| r.dest == Dest::Stdout).count();
    if to_stdout > 1 {
        errors.push(DestinationError::StdoutTwice);
    }
    if to_stdout > 0 && stdout_discards() {
        errors.push(DestinationError::StdoutDiscards);
    }
    let files: Vec<(&str, &Path)> = reports
        .iter()
        .filter_map(|r| r.dest.file().map(|p| (r.kind.flag(), p)))
        .collect();
    for (i, (flag, p)) in files.iter().enumerate() {
        if let Some((other, _)) = files[..i].iter().find(|(_, q)| same_file(p, q)) {
            errors.push(DestinationError::SameFile {
                flag: flag.to_string(),
                path: p.to_path_buf(),
                other: other.to_string(),
            });
        }
    }
    for r in reports {
        let Dest::File(p) = &r.dest else { continue };
        let parent = p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let (flag, path) = (r.kind.flag().to_string(), p.to_path_buf());
        if p.is_dir() {
            errors.push(DestinationError::Directory { flag, path });
        } else if let Some(parent) = in_the_way(parent) {
            errors.push(DestinationError::NoDirectory { flag, path, parent });
        } else if p.exists()
            && std::fs::metadata(p)
                .map(|m| m.permissions().readonly())
                .unwrap_or(false)
        {
            errors.push(DestinationError::ReadOnly { flag, path });
        }
    }
    errors
}

/// What keeps `dir` from being created: its nearest existing ancestor,
/// when that is not a directory. A missing report directory is created
/// when the report is written ([`write`]).
fn in_the_way(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.exists())
        .filter(|a| !a.is_dir())
        .map(Path::to_path_buf)
}

/// Whether what is written to stdout goes nowhere (a closed stdout, or
/// one sent to the null device).
fn stdout_discards() -> bool {
    crate::platform::stdout_is_null()
}

/// Reports that would overwrite an input (budget file, snapshot, baseline):
/// refused before anything is written.
pub(crate) fn clash_with_inputs(reports: &[Report], inputs: &[&Path]) -> Vec<DestinationError> {
    let mut errors = Vec::new();
    for r in reports {
        let Some(p) = r.dest.file() else { continue };
        if let Some(input) = inputs.iter().find(|i| same_file(p, i)) {
            errors.push(DestinationError::OverwritesInput {
                flag: r.kind.flag().to_string(),
                path: p.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    errors
}

/// The destinations a report can still go to when the gate could not judge:
/// each one that passes [`check`] alone, is no other report's file and would
/// overwrite none of `inputs`. A bad path never stops the good ones.
pub(crate) fn usable<'a>(reports: &'a [Report], inputs: &[&Path]) -> Vec<&'a Report> {
    let shared = |i: usize, d: &Dest| {
        reports.iter().enumerate().any(|(j, other)| {
            j != i
                && match (d, &other.dest) {
                    (Dest::Stdout, Dest::Stdout) => true,
                    (Dest::File(a), Dest::File(b)) => same_file(a, b),
                    _ => false,
                }
        })
    };
    reports
        .iter()
        .enumerate()
        .filter(|&(i, r)| {
            let alone = std::slice::from_ref(r);
            check(alone).is_empty()
                && clash_with_inputs(alone, inputs).is_empty()
                && !shared(i, &r.dest)
        })
        .map(|(_, r)| r)
        .collect()
}

/// Whether a report file is named on stderr when written: every one but
/// those the caller made for itself and removes (`CheckOptions::unannounced`).
pub(crate) fn announced(opts: &super::CheckOptions, dest: &Dest) -> bool {
    match dest {
        Dest::Stdout => false,
        Dest::File(p) => !opts.unannounced.iter().any(|q| q == p),
    }
}

/// Write a whole report; a file is named on stderr when `announce` says.
pub fn write(
    dest: &Dest,
    text: &str,
    stdout: &mut dyn Write,
    announce: bool,
) -> Result<(), OutputError> {
    match dest {
        Dest::Stdout => stdout
            .write_all(text.as_bytes())
            .map_err(OutputError::ReportToStdout),
        Dest::File(p) => {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::beneath::create_dir_all(dir).map_err(|error| OutputError::Directory {
                    path: dir.to_path_buf(),
                    error,
                })?;
            }
            files::write_atomic(p, text.as_bytes()).map_err(|error| OutputError::Report {
                path: p.clone(),
                error,
            })?;
            // Every report written is named, so a CI log says where it
            // went; not a private one, gone when the caller returns.
            if announce {
                eprintln!("wrote {}", terminal(&p.display().to_string()));
            }
            Ok(())
        }
    }
}

/// Append to a file GitHub Actions reads (step summary, outputs).
pub(crate) fn append(path: &Path, text: &str) -> Result<(), OutputError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|error| OutputError::Append {
            path: path.to_path_buf(),
            error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reports_come_in_the_order_they_are_written_and_the_page_is_always_a_file() {
        let opts = CheckOptions {
            html: Some("-".into()),
            metrics: Some("m.txt".into()),
            json: Some("-".into()),
            junit: Some("j.xml".into()),
            ..CheckOptions::default()
        };
        let got: Vec<(&str, Dest)> = reports(&opts)
            .into_iter()
            .map(|r| (r.kind.flag(), r.dest))
            .collect();
        assert_eq!(
            got,
            [
                ("--junit", Dest::File("j.xml".into())),
                ("--json", Dest::Stdout),
                ("--metrics", Dest::File("m.txt".into())),
                ("--html", Dest::File("-".into())),
            ]
        );
    }

    #[test]
    fn only_the_json_and_dashboard_reports_write_nothing_when_the_gate_could_not_judge() {
        let kinds = [
            ReportKind::Junit,
            ReportKind::Markdown,
            ReportKind::Json,
            ReportKind::Metrics,
            ReportKind::Html,
            ReportKind::Bencher,
            ReportKind::BenchmarkJson,
            ReportKind::CodeQuality,
        ];
        let reasons = ["m.toml:1:1: broken".to_string()];
        for k in kinds {
            let text = k.exporter().render_error(&reasons, 0);
            let silent = [
                ReportKind::Json,
                ReportKind::Bencher,
                ReportKind::BenchmarkJson,
            ];
            assert_eq!(text.is_none(), silent.contains(&k), "{}", k.flag());
        }
    }
}

#[cfg(test)]
mod link_tests {
    use super::relative_to;
    use std::path::Path;

    #[test]
    fn a_page_is_linked_from_the_reports_own_folder() {
        let rel = |t: &str, d: &str| relative_to(Path::new(t), Path::new(d));
        assert_eq!(
            rel("/w/reports/memgate.html", "/w/reports").as_deref(),
            Some("memgate.html")
        );
        assert_eq!(
            rel("/w/memgate.html", "/w/reports").as_deref(),
            Some("../memgate.html")
        );
        assert_eq!(
            rel("/w/pages/p.html", "/w/reports/md").as_deref(),
            Some("../../pages/p.html")
        );
        assert_eq!(
            rel("/w/./a/../p.html", "/w/r/.").as_deref(),
            Some("../p.html")
        );
        assert_eq!(rel("/w", "/w"), None, "a folder is no page");
    }

    #[test]
    fn a_report_the_caller_made_for_itself_is_not_announced_and_every_other_file_is() {
        use super::super::CheckOptions;
        use super::{announced, Dest};
        let opts = CheckOptions {
            unannounced: vec!["/tmp/memgate-x/verdict.json".into()],
            ..CheckOptions::default()
        };
        let file = |p: &str| Dest::File(p.into());
        assert!(!announced(&opts, &file("/tmp/memgate-x/verdict.json")));
        assert!(announced(&opts, &file("/tmp/memgate-x/other.json")));
        assert!(announced(&opts, &file("verdict.json")));
        assert!(!announced(&opts, &Dest::Stdout));
        assert!(announced(&CheckOptions::default(), &file("v.json")));
    }
}
