//! What a run leaves behind: every report, the terminal summary, the
//! GitHub Actions files and annotations, and the exit status; or, when the
//! gate could not judge at all, what still can be written to say why.

use std::io::Write;
use std::path::Path;

use super::outputs::{self, Report, ReportKind};
use super::CheckOptions;
use crate::commands::{Gate, Outcome};
use crate::compare::{Status, Verdict};
use crate::error::Error;
use crate::report::exporter::Context;
use crate::report::html::Charted;
use crate::report::{github, markdown, terminal};

/// Write every report, then map the verdict to the exit status.
pub(crate) fn publish<'c>(
    opts: &CheckOptions,
    reports: &[Report],
    v: &Verdict,
    charted: &dyn Fn(usize, &str) -> Option<Charted<'c>>,
    out: &mut dyn Write,
) -> Outcome {
    let mut errors: Vec<Error> = Vec::new();
    for r in reports {
        // A report links the page from its own folder (an artifact viewer,
        // a merge-request comment), not from the working directory.
        let page = opts.html.as_deref().map(|p| outputs::link_from(&r.dest, p));
        let cx = Context {
            markdown_limit: if opts.comment_size {
                markdown::COMMENT_LIMIT
            } else {
                markdown::STEP_SUMMARY_LIMIT
            },
            page: page.as_deref(),
            charted,
            x_axis: opts.x_axis,
        };
        let text = r.kind.exporter().render(v, &cx);
        if let Err(e) = outputs::write(&r.dest, &text, out, outputs::announced(opts, &r.dest)) {
            errors.push(e.into());
        }
    }
    let mut stderr = std::io::stderr();
    let human: &mut dyn Write = if outputs::take_stdout(reports) {
        &mut stderr
    } else {
        out
    };
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
        let report = outputs::file_of(reports, &[ReportKind::Markdown, ReportKind::Json]);
        let report = report.map(|r| r.display().to_string());
        if let Err(e) = outputs::append(p, &github::outputs(v, report.as_deref())) {
            errors.push(e.into());
        }
    }
    for t in &v.targets {
        for e in t.snapshots.iter().filter_map(|s| s.error.as_ref()) {
            errors.push(Error::NotJudged(e.clone()).in_target(&t.name));
        }
    }
    let gate = match v.verdict {
        Status::Error => Gate::NotJudged,
        Status::Fail if !opts.warn_only => Gate::Failed,
        _ => Gate::Passed,
    };
    Outcome { gate, errors }
}

/// The gate could not judge at all (bad budget file, nothing to judge, an
/// unusable report path): write what still can be written, so CI shows why
/// the job is red: a one-case JUnit `<error>`, a one-line Markdown report
/// and step summary, a metrics report with the verdict `error` only, an
/// HTML page of the reasons, `verdict=error` in `GITHUB_OUTPUT`, `::error`
/// lines. A report path that is itself the problem, or would overwrite one
/// of `inputs`, is left alone (`--json` takes part in those checks though
/// it gets nothing to write). The exit status stays "could not judge".
pub(crate) fn could_not_judge(
    opts: &CheckOptions,
    reports: &[Report],
    mut errors: Vec<Error>,
    inputs: &[&Path],
    out: &mut dyn Write,
) -> Outcome {
    let reasons: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let stamp = opts.timestamp.unwrap_or_else(super::now);
    let mut written: Vec<&Report> = Vec::new();
    for r in outputs::usable(reports, inputs) {
        let Some(text) = r.kind.exporter().render_error(&reasons, stamp) else {
            continue;
        };
        written.push(r);
        if let Err(e) = outputs::write(&r.dest, &text, out, outputs::announced(opts, &r.dest)) {
            errors.push(e.into());
        }
    }
    if opts.github.annotate {
        let mut stderr = std::io::stderr();
        let human: &mut dyn Write = if outputs::take_stdout(written.iter().copied()) {
            &mut stderr
        } else {
            out
        };
        for r in &reasons {
            let _ = writeln!(human, "{}", github::error_annotation(r));
        }
    }
    if let Some(p) = &opts.github.step_summary {
        if let Err(e) = outputs::append(p, &markdown::error_report(&reasons)) {
            errors.push(e.into());
        }
    }
    if let Some(p) = &opts.github.output {
        let report = outputs::file_of(written.iter().copied(), &[ReportKind::Markdown]);
        let report = report.map(|p| p.display().to_string());
        if let Err(e) = outputs::append(p, &github::error_outputs(report.as_deref())) {
            errors.push(e.into());
        }
    }
    Outcome::from_errors(errors)
}
