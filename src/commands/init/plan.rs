//! What `init` can budget in each snapshot, and the targets it makes of
//! them: a snapshot is refused when it holds nothing to judge, put with
//! the others of its kind (a whole trace, one that started mid-run, none)
//! and, within a kind, with those of a like size (docs/commands.md#init).

use std::path::{Path, PathBuf};

use crate::analysis::{DeviceReport, Figures, HostFigures};
use crate::baseline::Summary;
use crate::compare::lower_bounds;

/// What the trace of a snapshot lets a budget judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// Every device's trace is whole: every figure can be judged.
    Traced,
    /// A device's trace started mid-run: its trace-based figures are lower
    /// bounds, which the gate never passes; only the segment figures can.
    MidRun,
    /// A device has no allocation history: its trace-based figures are the
    /// state at dump time.
    NoHistory,
    /// No device, only pinned host memory (`record_cuda=False`): judged on
    /// its host figures (docs/figures.md#pinned-host-memory).
    HostOnly,
}

impl Kind {
    /// The word naming the kind in target names and golden directories.
    pub(super) fn word(self) -> &'static str {
        match self {
            Kind::Traced => "traced",
            Kind::MidRun => "mid-run",
            Kind::NoHistory => "no-history",
            Kind::HostOnly => "host-only",
        }
    }

    /// Whether the target compares with golden summaries: a baseline whose
    /// trace-based figures are lower bounds (or dump-time states) judges
    /// nothing, so those targets gate on their budgets alone.
    pub(super) fn has_baseline(self) -> bool {
        self == Kind::Traced
    }
}

/// Why a snapshot gets no budget at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    NoDevice,
    NoMemory,
}

impl Refusal {
    pub(super) fn why(self) -> &'static str {
        match self {
            Refusal::NoDevice => "it holds no device (no segments and no trace): nothing to judge",
            Refusal::NoMemory => "it holds no memory on any device: nothing to judge",
        }
    }
}

/// One snapshot read, with what its trace lets a budget judge.
pub(super) struct Member {
    pub(super) path: PathBuf,
    pub(super) stem: String,
    pub(super) summary: Summary,
    pub(super) kind: Kind,
}

/// What can be budgeted in `summary`, or why nothing can.
pub(super) fn classify(summary: &Summary) -> Result<Kind, Refusal> {
    let devices = &summary.devices;
    if devices.is_empty() {
        return Err(Refusal::NoDevice);
    }
    // What `check` judges a host-only snapshot on: its host figures.
    if devices.iter().all(|d| d.host.is_some_and(|h| h.only)) {
        return Ok(Kind::HostOnly);
    }
    let empty = |d: &DeviceReport| {
        let f = &d.figures;
        f.reserved_peak == 0 && f.allocated_peak == 0 && f.static_memory == 0
    };
    if devices.iter().all(empty) {
        return Err(Refusal::NoMemory);
    }
    if devices.iter().any(lower_bounds) {
        Ok(Kind::MidRun)
    } else if devices.iter().any(|d| d.figures.trace_entries == 0) {
        Ok(Kind::NoHistory)
    } else {
        Ok(Kind::Traced)
    }
}

/// A group's smallest snapshot is at least its largest divided by this:
/// a budget fitted to a 57 GiB run would let a 450 MiB one grow a
/// hundredfold unnoticed.
pub(super) const SPREAD: u64 = 2;

/// The snapshots of one target.
pub(super) struct Group<'a> {
    pub(super) kind: Kind,
    /// `traced`, `mid-run-2`…: what tells the target apart from the
    /// others (`None` when it is the only one).
    pub(super) label: Option<String>,
    pub(super) members: Vec<&'a Member>,
}

impl Group<'_> {
    /// The largest value of a figure over the devices of the group.
    pub(super) fn max(&self, f: impl Fn(&Figures) -> u64) -> u64 {
        self.devices().map(|d| f(&d.figures)).max().unwrap_or(0)
    }

    /// The largest value of a host figure over the devices of the group.
    pub(super) fn max_host(&self, f: impl Fn(&HostFigures) -> u64) -> u64 {
        self.devices()
            .filter_map(|d| d.host.as_ref().map(&f))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn devices(&self) -> impl Iterator<Item = &DeviceReport> {
        self.members.iter().flat_map(|m| &m.summary.devices)
    }

    /// `NAME devN` of each device for which `pick` holds.
    pub(super) fn named(&self, pick: impl Fn(&DeviceReport) -> bool) -> Vec<String> {
        let mut out = Vec::new();
        for m in &self.members {
            for d in m.summary.devices.iter().filter(|d| pick(d)) {
                out.push(format!("{} dev{}", m.stem, d.device));
            }
        }
        out
    }

    /// Where its golden summaries go, when it compares with any.
    pub(super) fn golden(&self, root: &Path) -> Option<PathBuf> {
        self.kind.has_baseline().then(|| match &self.label {
            Some(l) => root.join(l),
            None => root.to_path_buf(),
        })
    }
}

/// The size a snapshot is grouped by: the figure its budget gates.
fn size(m: &Member) -> u64 {
    let gated = |d: &DeviceReport| match m.kind {
        Kind::Traced => d.figures.allocated_peak,
        Kind::MidRun | Kind::NoHistory => d.figures.reserved_peak,
        Kind::HostOnly => d.host.map_or(0, |h| h.allocated_peak),
    };
    m.summary.devices.iter().map(gated).max().unwrap_or(0)
}

/// The targets: one per kind and size class, largest first within a kind,
/// each labelled when there is more than one.
pub(super) fn groups(members: &[Member]) -> Vec<Group<'_>> {
    let mut sorted: Vec<&Member> = members.iter().collect();
    sorted.sort_by(|a, b| {
        (a.kind, std::cmp::Reverse(size(a)), &a.path).cmp(&(
            b.kind,
            std::cmp::Reverse(size(b)),
            &b.path,
        ))
    });
    let mut groups: Vec<Group> = Vec::new();
    for m in sorted {
        let fits = groups.last().is_some_and(|g| {
            let largest = size(g.members[0]);
            g.kind == m.kind && size(m).saturating_mul(SPREAD) >= largest
        });
        match groups.last_mut() {
            Some(g) if fits => g.members.push(m),
            _ => groups.push(Group {
                kind: m.kind,
                label: None,
                members: vec![m],
            }),
        }
    }
    if groups.len() > 1 {
        for i in 0..groups.len() {
            let kind = groups[i].kind;
            let of_kind: Vec<usize> = (0..groups.len())
                .filter(|&j| groups[j].kind == kind)
                .collect();
            let label = if of_kind.len() > 1 {
                let n = of_kind.iter().position(|&j| j == i).unwrap_or(0) + 1;
                format!("{}-{n}", kind.word())
            } else {
                kind.word().to_string()
            };
            groups[i].label = Some(label);
        }
    }
    groups
}
