//! `memgate init SNAPSHOTS…`: a first budget file from the snapshots one
//! has. Each snapshot is budgeted on what its trace lets the gate judge
//! (every figure of a whole trace; only the segments' figures of a trace
//! that started mid-run or of a dump with no history), snapshots of very
//! different sizes get targets of their own, and one that holds nothing
//! to judge is refused by name. The golden summaries and a commented
//! `memgate.toml` are written, never over a file without `--force` nor
//! through a link, and then judged in process by `check` itself, whose
//! outcome is `init`'s last line (docs/commands.md#init).

mod guard;
mod plan;
mod text;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, OutputError, UsageError};
use crate::report::escape::terminal;
use crate::units::Bytes;

use super::summarize::{self, SummarizeOptions};
use super::{Gate, Outcome};
use plan::{Group, Kind, Member};
pub use text::{round_up, with_margin};

pub struct InitOptions {
    pub snapshots: Vec<String>,
    /// The budget file to write.
    pub config: PathBuf,
    /// Where the golden summaries go.
    pub golden: PathBuf,
    /// Percent added to today's figures.
    pub margin: f64,
    /// Replace an existing budget file and golden summaries.
    pub force: bool,
    /// The target's name (the prefix of each target's, when there are
    /// several).
    pub name: String,
}

/// `--margin 10%` (or `10`): the percent.
pub fn parse_margin(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let t = if t.ends_with('%') {
        t.to_string()
    } else {
        format!("{t}%")
    };
    crate::units::Percent::parse(&t).map(|p| p.0)
}

/// The sites and stacks each golden summary keeps (`summarize`'s default).
const TOP: usize = 50;

/// Every snapshot read and judged budgetable, and the errors of those
/// that are not (one per snapshot, naming it).
fn read(paths: &[PathBuf]) -> Result<(Vec<Member>, Vec<Error>), Outcome> {
    let opts = SummarizeOptions {
        snapshots: Vec::new(),
        output: PathBuf::new(),
        rules: "default".into(),
        top: TOP,
        window: None,
        categories: None,
        sites: Default::default(),
        iteration_boundary: None,
        decoded: None,
        repeats: false,
    };
    let rules = super::analysed::rules(&opts.rules, None, &opts.sites)?;
    let read = crate::input::par_map(paths, |p| summarize::summary_of(p, &opts, &rules));
    let mut members = Vec::new();
    let mut refused = Vec::new();
    for (path, r) in paths.iter().zip(read) {
        let summary = match r {
            Ok((s, _)) => s,
            Err(e) => {
                refused.push(e);
                continue;
            }
        };
        match plan::classify(&summary) {
            Ok(kind) => members.push(Member {
                path: path.clone(),
                stem: summarize::stem(path),
                summary,
                kind,
            }),
            Err(why) => refused.push(
                UsageError::InitRefused {
                    path: path.clone(),
                    why: why.why(),
                }
                .into(),
            ),
        }
    }
    Ok((members, refused))
}

/// The golden summaries to write: (snapshot, summary file, summary).
fn goldens<'a>(groups: &'a [Group], root: &Path) -> Vec<(&'a Member, PathBuf)> {
    let mut out = Vec::new();
    for g in groups {
        if let Some(dir) = g.golden(root) {
            for m in &g.members {
                out.push((*m, dir.join(format!("{}.json", m.stem))));
            }
        }
    }
    out
}

/// Why nothing can be written: a clash with an input, a file already
/// there (without `--force`), a link on the way.
fn refuse_outputs(
    opts: &InitOptions,
    paths: &[PathBuf],
    goldens: &[(&Member, PathBuf)],
) -> Vec<Error> {
    let read: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let pairs: Vec<(&Path, PathBuf)> = goldens
        .iter()
        .map(|(m, g)| (m.path.as_path(), g.clone()))
        .collect();
    let mut errors = summarize::clashes(&pairs, &read);
    if let Some(input) = read
        .iter()
        .find(|p| crate::files::same_file(&opts.config, p))
    {
        errors.push(
            UsageError::SummaryOverInput {
                target: opts.config.clone(),
                input: input.to_path_buf(),
            }
            .into(),
        );
    }
    let files: Vec<PathBuf> = goldens.iter().map(|(_, g)| g.clone()).collect();
    let unsafe_writes = guard::outputs(&opts.config, &files, opts.force);
    errors.extend(unsafe_writes.into_iter().map(Error::from));
    errors
}

/// Write the golden summaries and the budget file.
fn write_all(
    opts: &InitOptions,
    goldens: &[(&Member, PathBuf)],
    text: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    for (m, file) in goldens {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|error| OutputError::Directory {
                path: dir.to_path_buf(),
                error,
            })?;
        }
        summarize::write_summary(file, &m.summary)?;
        let _ = writeln!(out, "wrote {}", terminal(&file.display().to_string()));
    }
    crate::files::write_atomic(&opts.config, text.as_bytes()).map_err(|error| {
        OutputError::Report {
            path: opts.config.clone(),
            error,
        }
    })?;
    Ok(())
}

/// The budget file's directory, created; and the path from it to the
/// working directory.
fn config_dir(opts: &InitOptions) -> Result<PathBuf, Error> {
    let dir = opts.config.parent().unwrap_or(Path::new(""));
    if dir.as_os_str().is_empty() {
        return Ok(PathBuf::new());
    }
    std::fs::create_dir_all(dir).map_err(|error| OutputError::Directory {
        path: dir.to_path_buf(),
        error,
    })?;
    Ok(match (std::env::current_dir(), dir.canonicalize()) {
        (Ok(cwd), Ok(d)) => text::relative(&d, &cwd),
        _ => PathBuf::new(),
    })
}

pub fn run(opts: &InitOptions, out: &mut dyn Write) -> Outcome {
    if !(opts.margin.is_finite() && opts.margin >= 0.0) {
        return Outcome::error(UsageError::Margin(opts.margin));
    }
    // Refused before any snapshot is read, as before.
    if let Err(e) = guard::file(&opts.config, "budget file", opts.force) {
        return Outcome::error(e);
    }
    let paths = match crate::walk::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::from_errors(errors.into_iter().map(Into::into).collect()),
    };
    let (members, refused) = match read(&paths) {
        Ok(r) => r,
        Err(o) => return o,
    };
    if members.is_empty() {
        return Outcome::from_errors(refused);
    }
    let groups = plan::groups(&members);
    let goldens = goldens(&groups, &opts.golden);
    let errors = refuse_outputs(opts, &paths, &goldens);
    if !errors.is_empty() {
        return Outcome::from_errors(refused.into_iter().chain(errors).collect());
    }
    let to_cwd = match config_dir(opts) {
        Ok(p) => p,
        Err(e) => return Outcome::error(e),
    };
    let layout = text::Layout {
        opts,
        to_cwd,
        patterns: groups.len() == 1 && refused.is_empty(),
    };
    let budget = text::budget_text(&layout, &groups);
    if let Err(e) = write_all(opts, &goldens, &budget, out) {
        return Outcome::error(e);
    }
    say_targets(opts, &groups, out);
    let gate = judge(opts, !goldens.is_empty(), refused.len(), out);
    Outcome {
        gate,
        errors: refused,
    }
}

/// One line per target: what it budgets, and for each snapshot what it
/// cannot budget and why.
fn say_targets(opts: &InitOptions, groups: &[Group], out: &mut dyn Write) {
    let config = terminal(&opts.config.display().to_string()).into_owned();
    for g in groups {
        let name = match &g.label {
            Some(l) => format!("{}-{l}", opts.name),
            None => opts.name.clone(),
        };
        let name = terminal(&name).into_owned();
        let snapshots = crate::units::counted(g.members.len() as u64, "snapshot", "snapshots");
        let budget = |bytes: u64| round_up(with_margin(bytes, opts.margin));
        let _ = match g.kind {
            Kind::Traced => writeln!(
                out,
                "wrote {config}: target {name} ({snapshots}): allocated-peak {} (today {} + {}%), \
                 reserved-peak {} (warns), oom-events {}",
                budget(g.max(|f| f.allocated_peak)),
                Bytes(g.max(|f| f.allocated_peak)),
                opts.margin,
                budget(g.max(|f| f.reserved_peak)),
                g.max(|f| f.oom_events),
            ),
            Kind::MidRun | Kind::NoHistory => writeln!(
                out,
                "wrote {config}: target {name} ({snapshots}): static-memory {}, reserved-peak {} only",
                budget(g.max(|f| f.static_memory)),
                budget(g.max(|f| f.reserved_peak)),
            ),
            Kind::HostOnly => writeln!(
                out,
                "wrote {config}: target {name} ({snapshots}): host-allocated-peak {} (today {} + \
                 {}%), host-reserved-peak {} (warns)",
                budget(g.max_host(|h| h.allocated_peak)),
                Bytes(g.max_host(|h| h.allocated_peak)),
                opts.margin,
                budget(g.max_host(|h| h.reserved_peak)),
            ),
        };
        for m in &g.members {
            say_member(m, out);
        }
    }
}

/// What a snapshot's budget leaves out, and why (nothing for a whole trace
/// without out-of-memory events).
fn say_member(m: &Member, out: &mut dyn Write) {
    let name = terminal(&m.path.display().to_string()).into_owned();
    let ooms = m
        .summary
        .devices
        .iter()
        .map(|d| d.figures.oom_events)
        .max()
        .unwrap_or(0);
    let _ = match m.kind {
        Kind::Traced if ooms > 0 => writeln!(
            out,
            "  {name}: holds {ooms} out-of-memory event(s) already: oom-events is budgeted at \
             today's count, not 0"
        ),
        Kind::Traced => Ok(()),
        Kind::MidRun => writeln!(
            out,
            "  {name}: the trace started mid-run: allocated-, dynamic- and overall-peak are \
             lower bounds, reported only, and oom-events is not judged (record with a larger \
             max_entries to gate them)"
        ),
        Kind::NoHistory => writeln!(
            out,
            "  {name}: no allocation history: only the segment figures are budgeted, with \
             require-trace = false (record a trace with _record_memory_history to gate the peaks)"
        ),
        Kind::HostOnly => writeln!(
            out,
            "  {name}: no device, only pinned host memory (record_cuda=False): only the host \
             figures are budgeted"
        ),
    };
}

/// Judge the budget just written, as `memgate check --config` will, and
/// say so: the outcome is the last line, and what did not pass above it.
fn judge(opts: &InitOptions, goldens: bool, refused: usize, out: &mut dyn Write) -> Gate {
    let check_opts = super::check::CheckOptions {
        config: Some(opts.config.clone()),
        ..Default::default()
    };
    let mut said = Vec::new();
    let outcome = super::check::run(&check_opts, &mut said);
    let code = outcome.exit_code();
    let config = terminal(&opts.config.display().to_string()).into_owned();
    let golden = terminal(&opts.golden.display().to_string()).into_owned();
    let commit = if goldens {
        format!("{config} {golden}")
    } else {
        config.clone()
    };
    let _ = writeln!(
        out,
        "next:\n  git add {commit}   # commit the budget{}\n  \
         memgate check --config {config} --junit memgate.xml --markdown memgate.md   # in CI, after the job dumps its snapshots",
        if goldens { " and the golden summaries" } else { "" }
    );
    let refused = if refused == 0 {
        String::new()
    } else {
        format!(
            "; {} refused, not budgeted (its error line says why)",
            crate::units::counted(refused as u64, "snapshot", "snapshots")
        )
    };
    let run = format!("memgate check --config {config}");
    if code == 0 {
        // Its count line says how much was judged and how much only reported.
        if let Some(counts) = String::from_utf8_lossy(&said).lines().last() {
            let _ = writeln!(out, "  | {counts}");
        }
        let _ = writeln!(
            out,
            "judged in process: `{run}` passes on these snapshots{refused}"
        );
        return Gate::Passed;
    }
    // What check would print, then why it did not pass.
    for line in String::from_utf8_lossy(&said).lines() {
        let _ = writeln!(out, "  | {line}");
    }
    for e in &outcome.errors {
        let _ = writeln!(out, "  | error: {}", terminal(&e.to_string()));
    }
    let (word, gate) = if code == 1 {
        ("FAILS (exit 1)", Gate::Failed)
    } else {
        ("cannot judge these snapshots (exit 2)", Gate::NotJudged)
    };
    let _ = writeln!(
        out,
        "judged in process: `{run}` {word}: see the check's lines above{refused}"
    );
    gate
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `judge` on a budget file of one target over the synthetic fixture
    /// `file` with `allocated-peak = LIMIT` (absolute paths, so the working
    /// directory does not matter): its outcome and last line.
    fn judged(file: &str, limit: &str) -> (Gate, String) {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("memgate.toml");
        let budget = format!(
            "[[target]]\nname = \"t\"\nsnapshots = {:?}\n[target.budget]\nallocated-peak = {limit:?}\n",
            fixture(file)
        );
        std::fs::write(&config, budget).unwrap();
        let opts = InitOptions {
            snapshots: Vec::new(),
            config,
            golden: dir.path().join("golden"),
            margin: 10.0,
            force: false,
            name: "main".into(),
        };
        let mut out = Vec::new();
        let gate = judge(&opts, false, 0, &mut out);
        let out = String::from_utf8(out).unwrap();
        let last = out.lines().last().unwrap_or_default().to_string();
        (gate, last)
    }

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/synthetic")
            .join(name);
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn the_last_line_says_fails_when_the_budget_written_does_not_pass() {
        let (gate, last) = judged("rank0.pickle", "1 MiB");
        assert_eq!(gate, Gate::Failed);
        assert!(
            last.ends_with("` FAILS (exit 1): see the check's lines above"),
            "{last}"
        );
        assert!(!last.contains("passes"), "{last}");
    }

    #[test]
    fn the_last_line_says_cannot_judge_when_a_lower_bound_is_within_its_budget() {
        // ring_wrapped's trace started mid-run: 356 MiB is only a lower
        // bound, which a 1 GiB budget cannot pass.
        let (gate, last) = judged("ring_wrapped.pickle", "1 GiB");
        assert_eq!(gate, Gate::NotJudged);
        assert!(
            last.contains("cannot judge these snapshots (exit 2)"),
            "{last}"
        );
    }
}
