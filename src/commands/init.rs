//! `memgate init SNAPSHOTS…`: a first budget file from the snapshots one
//! has. Their golden summaries are written (as `summarize` writes them),
//! and a commented `memgate.toml` whose budgets are today's figures plus a
//! margin, rounded up to two significant digits in binary units, so that
//! `check` passes on these snapshots and fails when they grow.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::baseline::Summary;
use crate::error::{Error, OutputError, UsageError};
use crate::input::{self, Input};
use crate::report::escape::terminal;
use crate::units::Bytes;

use super::summarize::{self, SummarizeOptions};
use super::Outcome;

pub struct InitOptions {
    pub snapshots: Vec<String>,
    /// The budget file to write.
    pub config: PathBuf,
    /// Where the golden summaries go.
    pub golden: PathBuf,
    /// Percent added to today's figures.
    pub margin: f64,
    /// Overwrite an existing budget file.
    pub force: bool,
    /// The target's name.
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

/// The smallest size of at most two significant digits, in the largest
/// binary unit it has at least one of, that is at least `bytes`: `"230
/// MiB"` for 220.1 MiB, `"5.5 GiB"` for 5.41 GiB. Exact integer arithmetic,
/// so the size written is never below `bytes`.
pub fn round_up(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    let Some(&(name, unit)) = UNITS.iter().find(|(_, u)| bytes >= *u) else {
        return format!("{bytes} B");
    };
    let (b, u) = (u128::from(bytes), u128::from(unit));
    let ceil = |num: u128, den: u128| num.div_ceil(den);
    // bytes / unit is in [1, 1024): its first digit's place decides the step.
    if b < 10 * u {
        let tenths = ceil(10 * b, u);
        if tenths % 10 == 0 {
            format!("{} {name}", tenths / 10)
        } else {
            format!("{}.{} {name}", tenths / 10, tenths % 10)
        }
    } else if b < 100 * u {
        format!("{} {name}", ceil(b, u))
    } else if b < 1000 * u {
        format!("{} {name}", ceil(b, 10 * u) * 10)
    } else {
        format!("{} {name}", ceil(b, 100 * u) * 100)
    }
}

/// `bytes` plus `margin` percent, rounded up to a whole byte.
pub fn with_margin(bytes: u64, margin: f64) -> u64 {
    let v = (bytes as f64 * (100.0 + margin) / 100.0).ceil();
    if v >= u64::MAX as f64 {
        return u64::MAX;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "not negative (bytes and margin are), below u64::MAX (checked above)"
    )]
    let v = v as u64;
    v.max(bytes)
}

/// The path that leads from directory `from` to `to` (both absolute).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (a, b): (Vec<Component>, Vec<Component>) =
        (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in &b[common..] {
        out.push(c);
    }
    out
}

/// A TOML basic string holding `s`.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// What the snapshots measured, over all their devices.
#[derive(Default)]
struct Today {
    devices: usize,
    allocated_peak: u64,
    reserved_peak: u64,
    /// `NAME devN` of each device whose trace started mid-run.
    lower_bounds: Vec<String>,
}

impl Today {
    fn add(&mut self, name: &str, s: &Summary) {
        for d in &s.devices {
            self.devices += 1;
            self.allocated_peak = self.allocated_peak.max(d.figures.allocated_peak);
            self.reserved_peak = self.reserved_peak.max(d.figures.reserved_peak);
            if !d.trace_complete {
                self.lower_bounds.push(format!("{name} dev{}", d.device));
            }
        }
    }
}

/// The budget file's text; `to_cwd` leads from its directory to the one
/// the snapshot patterns and the golden directory are relative to.
fn budget_text(opts: &InitOptions, today: &Today, to_cwd: &Path) -> String {
    let at = |p: &str| {
        if Path::new(p).is_absolute() || to_cwd.as_os_str().is_empty() {
            p.to_string()
        } else {
            to_cwd.join(p).to_string_lossy().into_owned()
        }
    };
    let patterns: Vec<String> = opts.snapshots.iter().map(|p| quoted(&at(p))).collect();
    let golden = format!(
        "{}/",
        at(&opts.golden.to_string_lossy()).trim_end_matches('/')
    );
    let allocated = round_up(with_margin(today.allocated_peak, opts.margin));
    let reserved = round_up(with_margin(today.reserved_peak, opts.margin));
    let devices = crate::units::counted(today.devices as u64, "device", "devices");
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# memgate budget file, written by `memgate init` from {} ({devices}).\n\
         # Budgets: today's figures + {}%, rounded up to two significant digits.\n\
         # Tighten or loosen them as you see fit; every key: docs/config.md.\n\
         #\n\
         #   memgate check --config {}    # 0 pass, 1 fail, 2 could not judge\n",
        crate::units::counted(opts.snapshots.len() as u64, "pattern", "patterns"),
        opts.margin,
        terminal(&opts.config.display().to_string()),
    );
    if !today.lower_bounds.is_empty() {
        let _ = writeln!(
            t,
            "# Note: the trace of {} started mid-run (the allocator's ring buffer\n\
             # wrapped): its figures are lower bounds, which `check` does not pass.\n\
             # Record with a larger max_entries, or set `accept-lower-bounds = true`\n\
             # in the target to judge them as they are.\n",
            terminal(&today.lower_bounds.join(", "))
        );
    }
    let _ = writeln!(
        t,
        "[defaults]\n\
         tolerance = \"5%\"        # allowed growth over the golden summaries, per figure\n\
         noise-floor = \"4 MiB\"   # growth smaller than this never fails\n\
         \n\
         [[target]]\n\
         name = {}\n\
         snapshots = [{}]   # what the job dumps (`check SNAPSHOT…` overrides)\n\
         baseline = {}      # golden summaries (`memgate summarize` refreshes them)\n\
         \n\
         [target.budget]\n\
         allocated-peak = {}   # today {} (the largest of {devices}): the figure to gate\n\
         reserved-peak = {{ limit = {}, level = \"warn\" }}   # today {}: what the allocator holds, warns only\n\
         oom-events = 0   # any out-of-memory event fails",
        quoted(&opts.name),
        patterns.join(", "),
        quoted(&golden),
        quoted(&allocated),
        Bytes(today.allocated_peak),
        quoted(&reserved),
        Bytes(today.reserved_peak),
    );
    t
}

pub fn run(opts: &InitOptions, out: &mut dyn Write) -> Outcome {
    if opts.config.exists() && !opts.force {
        return Outcome::error(UsageError::ConfigExists {
            path: opts.config.clone(),
        });
    }
    if !(opts.margin.is_finite() && opts.margin >= 0.0) {
        return Outcome::error(UsageError::Margin(opts.margin));
    }
    let paths = match crate::walk::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::from_errors(errors.into_iter().map(Into::into).collect()),
    };
    let written = summarize::run(
        &SummarizeOptions {
            snapshots: opts.snapshots.clone(),
            output: opts.golden.clone(),
            rules: "default".into(),
            top: TOP,
            window: None,
            categories: None,
            sites: Default::default(),
            iteration_boundary: None,
        },
        out,
    );
    if written.exit_code() != 0 {
        return written;
    }
    let mut today = Today::default();
    for p in &paths {
        let golden = opts.golden.join(format!("{}.json", summarize::stem(p)));
        match input::read_baseline(&golden) {
            Ok(Input::Summary(s)) => today.add(&summarize::stem(p), &s),
            Ok(Input::Snapshot(_)) => unreachable!("summarize writes summaries"),
            Err(e) => return Outcome::error(e),
        }
    }
    let dir = opts.config.parent().unwrap_or(Path::new(""));
    if !dir.as_os_str().is_empty() {
        if let Err(error) = std::fs::create_dir_all(dir) {
            let path = dir.to_path_buf();
            return Outcome::error(OutputError::Directory { path, error });
        }
    }
    let to_cwd = match (std::env::current_dir(), dir.canonicalize()) {
        (Ok(cwd), Ok(d)) if !dir.as_os_str().is_empty() => relative(&d, &cwd),
        _ => PathBuf::new(),
    };
    let text = budget_text(opts, &today, &to_cwd);
    if let Err(error) = crate::files::write_atomic(&opts.config, text.as_bytes()) {
        let path = opts.config.clone();
        return Outcome::error(Error::from(OutputError::Report { path, error }));
    }
    let config = terminal(&opts.config.display().to_string()).into_owned();
    let _ = writeln!(
        out,
        "wrote {config}: allocated-peak {} (today {} + {}%), reserved-peak {} (warns), oom-events 0",
        round_up(with_margin(today.allocated_peak, opts.margin)),
        Bytes(today.allocated_peak),
        opts.margin,
        round_up(with_margin(today.reserved_peak, opts.margin)),
    );
    if !today.lower_bounds.is_empty() {
        let _ = writeln!(
            out,
            "note: the trace of {} started mid-run: its figures are lower bounds (see the file's note)",
            terminal(&today.lower_bounds.join(", "))
        );
    }
    let golden = terminal(&opts.golden.display().to_string()).into_owned();
    let _ = writeln!(
        out,
        "next:\n  memgate check --config {config}            # passes on these snapshots\n  \
         git add {config} {golden}                     # commit the budget and the golden summaries\n  \
         memgate check --config {config} --junit memgate.xml --markdown memgate.md   # in CI, after the job dumps its snapshots"
    );
    Outcome::ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn sizes_round_up_to_two_significant_digits_in_binary_units() {
        assert_eq!(round_up(220 * MIB + MIB / 10), "230 MiB");
        assert_eq!(round_up(220 * MIB), "220 MiB");
        assert_eq!(round_up(5 * 1024 * MIB + 420 * MIB), "5.5 GiB");
        assert_eq!(round_up(5 * 1024 * MIB), "5 GiB");
        assert_eq!(round_up(9 * 1024 * MIB + 1000 * MIB), "10 GiB");
        assert_eq!(round_up(1010 * MIB), "1100 MiB");
        assert_eq!(round_up(57 * MIB + 1), "58 MiB");
        assert_eq!(round_up(500), "500 B");
        for bytes in [
            1u64,
            1023,
            1024,
            1025,
            10 * MIB + 7,
            999 * MIB + 3,
            u64::MAX / 4,
        ] {
            let (parsed, _) = Bytes::parse(&round_up(bytes)).unwrap();
            assert!(parsed.0 >= bytes, "{bytes} → {}", round_up(bytes));
        }
    }

    #[test]
    fn the_margin_is_added_and_never_lowers_a_figure() {
        assert_eq!(with_margin(100, 10.0), 110);
        assert_eq!(with_margin(101, 10.0), 112);
        assert_eq!(with_margin(7, 0.0), 7);
    }

    #[test]
    fn relative_paths_lead_from_the_budget_file_to_the_working_directory() {
        assert_eq!(
            relative(Path::new("/a/b/c"), Path::new("/a")),
            Path::new("../..")
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a/x")), Path::new("x"));
        assert_eq!(
            relative(Path::new("/a/b"), Path::new("/a/c")),
            Path::new("../c")
        );
    }
}
