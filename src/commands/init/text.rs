//! The budget file `init` writes: a commented `[defaults]` and one
//! `[[target]]` per group, each budgeting only the figures its snapshots
//! let the gate judge (docs/commands.md#init).

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use super::plan::{Group, Kind};
use super::InitOptions;
use crate::budget::Budget;
use crate::report::escape::terminal;
use crate::units::{counted, Bytes};
use crate::vocab::Figure;

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
pub(super) fn relative(from: &Path, to: &Path) -> PathBuf {
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

/// What the budget text needs besides the groups.
pub(super) struct Layout<'a> {
    pub(super) opts: &'a InitOptions,
    /// Leads from the budget file's directory to the one the snapshot
    /// patterns and the golden directory are relative to.
    pub(super) to_cwd: PathBuf,
    /// Keep the user's patterns (one group holds every snapshot they
    /// match), else list each group's files.
    pub(super) patterns: bool,
}

impl Layout<'_> {
    /// `p` (relative to the working directory) as the budget file sees it.
    fn at(&self, p: &str) -> String {
        if Path::new(p).is_absolute() || self.to_cwd.as_os_str().is_empty() {
            p.to_string()
        } else {
            self.to_cwd.join(p).to_string_lossy().into_owned()
        }
    }

    fn snapshots(&self, g: &Group) -> String {
        let list: Vec<String> = if self.patterns {
            self.opts.snapshots.clone()
        } else {
            // Listed files are read as patterns: `[`, `*` and `?` in a
            // name must match themselves.
            let files = g.members.iter().map(|m| m.path.to_string_lossy());
            files.map(|p| glob::Pattern::escape(&p)).collect()
        };
        let quoted: Vec<String> = list.iter().map(|p| quoted(&self.at(p))).collect();
        quoted.join(", ")
    }

    fn target_name(&self, g: &Group) -> String {
        match &g.label {
            Some(l) => format!("{}-{l}", self.opts.name),
            None => self.opts.name.clone(),
        }
    }

    fn budget(&self, bytes: u64) -> String {
        quoted(&round_up(with_margin(bytes, self.opts.margin)))
    }
}

/// The whole budget file.
pub(super) fn budget_text(layout: &Layout, groups: &[Group]) -> String {
    let opts = layout.opts;
    let snapshots: usize = groups.iter().map(|g| g.members.len()).sum();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# memgate budget file, written by `memgate init` from {} ({}).\n\
         # Budgets: today's figures + {}%, rounded up to two significant digits.\n\
         # Tighten or loosen them as you see fit; every key: docs/config.md.\n\
         #\n\
         #   memgate check --config {}    # 0 pass, 1 fail, 2 could not judge\n",
        counted(snapshots as u64, "snapshot", "snapshots"),
        counted(groups.len() as u64, "target", "targets"),
        opts.margin,
        terminal(&opts.config.display().to_string()),
    );
    let _ = writeln!(
        t,
        "[defaults]\n\
         tolerance = \"5%\"        # allowed growth over the golden summaries, per figure\n\
         noise-floor = \"4 MiB\"   # growth smaller than this never fails"
    );
    if groups.iter().any(|g| g.kind == Kind::MidRun) {
        let figures: Vec<String> = Budget::default_figures()
            .into_iter()
            .filter(|f| *f != Figure::OomEvents)
            .map(|f| quoted(f.id()))
            .collect();
        let _ = writeln!(
            t,
            "# oom-events only where a target budgets it: a trace that started\n\
             # mid-run holds a lower bound of the count, which never passes.\n\
             figures = [{}]",
            figures.join(", ")
        );
    }
    for g in groups {
        t.push('\n');
        match g.kind {
            Kind::Traced => traced(&mut t, layout, g),
            Kind::MidRun | Kind::NoHistory => segments_only(&mut t, layout, g),
            Kind::HostOnly => host_only(&mut t, layout, g),
        }
    }
    t
}

/// A target whose traces are whole: the allocated peak gated, the
/// reserved peak warned about, and today's out-of-memory count allowed.
fn traced(t: &mut String, layout: &Layout, g: &Group) {
    let golden = g.golden(&layout.opts.golden).unwrap_or_default();
    let golden = format!(
        "{}/",
        layout.at(&golden.to_string_lossy()).trim_end_matches('/')
    );
    let devices = counted(g.devices().count() as u64, "device", "devices");
    let allocated = g.max(|f| f.allocated_peak);
    let reserved = g.max(|f| f.reserved_peak);
    let _ = writeln!(
        t,
        "[[target]]\n\
         name = {}\n\
         snapshots = [{}]   # what the job dumps (`check SNAPSHOT…` overrides)\n\
         baseline = {}      # golden summaries (`memgate summarize` refreshes them)\n\
         \n\
         [target.budget]\n\
         allocated-peak = {}   # today {} (the largest of {devices}): the figure to gate\n\
         reserved-peak = {{ limit = {}, level = \"warn\" }}   # today {}: what the allocator holds, warns only",
        quoted(&layout.target_name(g)),
        layout.snapshots(g),
        quoted(&golden),
        layout.budget(allocated),
        Bytes(allocated),
        layout.budget(reserved),
        Bytes(reserved),
    );
    let ooms = g.max(|f| f.oom_events);
    if ooms == 0 {
        let _ = writeln!(t, "oom-events = 0   # any out-of-memory event fails");
    } else {
        let _ = writeln!(
            t,
            "# These snapshots already hold out-of-memory events ({ooms} on one device at\n\
             # most): today's count is allowed, so only more fail. Lower it once fixed.\n\
             oom-events = {ooms}"
        );
    }
}

/// A target whose trace started mid-run or is missing: only the figures
/// of the segments (exact whatever the trace holds) are budgeted.
fn segments_only(t: &mut String, layout: &Layout, g: &Group) {
    let names = match g.kind {
        Kind::MidRun => g.named(crate::compare::lower_bounds),
        _ => g.named(|d| d.figures.trace_entries == 0),
    };
    let names = terminal(&names.join(", ")).into_owned();
    if g.kind == Kind::MidRun {
        let _ = writeln!(
            t,
            "# The trace of {names} started mid-run (the allocator's ring buffer\n\
             # dropped its start): allocated-peak, dynamic-peak, overall-peak and\n\
             # oom-events are lower bounds there, which the gate never passes, so the\n\
             # peaks are reported, not budgeted, and oom-events is not judged. To gate\n\
             # them, record the whole run:\n\
             #   torch.cuda.memory._record_memory_history(max_entries=1_000_000)\n\
             # (large enough for every event of the run), then run `memgate init` again.\n\
             # static-memory and reserved-peak are exact (docs/figures.md#lower-bounds)."
        );
    } else {
        let _ = writeln!(
            t,
            "# No allocation history in {names} (dumped without\n\
             # _record_memory_history): the figures are the state at dump time, so\n\
             # only the segments' static-memory and reserved-peak are budgeted, and\n\
             # `require-trace = false` judges the rest as dump-time numbers. To gate\n\
             # the peaks, record a trace before the run:\n\
             #   torch.cuda.memory._record_memory_history(max_entries=1_000_000)\n\
             # and dump with torch.cuda.memory._dump_snapshot(...), then init again."
        );
    }
    let statics = g.max(|f| f.static_memory);
    let reserved = g.max(|f| f.reserved_peak);
    let _ = writeln!(
        t,
        "[[target]]\n\
         name = {}\n\
         snapshots = [{}]   # what the job dumps (`check SNAPSHOT…` overrides)",
        quoted(&layout.target_name(g)),
        layout.snapshots(g),
    );
    // A device with an empty trace beside a wrapped one is judged on its
    // dump-time figures too, never failed for want of a trace.
    if g.devices().any(|d| d.figures.trace_entries == 0) {
        let _ = writeln!(
            t,
            "require-trace = false   # no trace to judge on some devices: see above"
        );
    }
    let _ = writeln!(
        t,
        "\n[target.budget]\n\
         static-memory = {}   # today {}: exact, from the segments\n\
         reserved-peak = {}   # today {}: what the allocator holds, the figure to gate",
        layout.budget(statics),
        Bytes(statics),
        layout.budget(reserved),
        Bytes(reserved),
    );
}

/// A target of host-only snapshots (`record_cuda=False`): the pinned host
/// allocated peak gated, its reserved peak warned about
/// (docs/figures.md#pinned-host-memory).
fn host_only(t: &mut String, layout: &Layout, g: &Group) {
    let allocated = g.max_host(|h| h.allocated_peak);
    let reserved = g.max_host(|h| h.reserved_peak);
    let _ = writeln!(
        t,
        "# No device in these snapshots, only pinned host memory (recorded with\n\
         # record_pinned_host_memory=True, record_cuda=False): they are judged on\n\
         # their host figures (docs/figures.md#pinned-host-memory).\n\
         [[target]]\n\
         name = {}\n\
         snapshots = [{}]   # what the job dumps (`check SNAPSHOT…` overrides)\n\
         \n\
         [target.budget]\n\
         host-allocated-peak = {}   # today {}: pinned host bytes handed out, the figure to gate\n\
         host-reserved-peak = {{ limit = {}, level = \"warn\" }}   # today {}: what the host allocator holds, warns only",
        quoted(&layout.target_name(g)),
        layout.snapshots(g),
        layout.budget(allocated),
        Bytes(allocated),
        layout.budget(reserved),
        Bytes(reserved),
    );
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
