//! The verdict of `check` as data: one [`Check`] per judged figure or
//! category of each device, rolled up per snapshot, target and gate.

use crate::vocab::Device;
use std::fmt;

use serde::{Serialize, Serializer};
use strum::IntoStaticStr;

use super::group;
use super::Finding;
use super::Regression;
use crate::analysis::{OomDetail, PeakPhase, PoolFigures, WindowReport};
use crate::budget::{Budget, Loc};
use crate::vocab::{Figure, Unit};

/// Bumped only on an incompatible change of the verdict JSON. 2: each
/// check's English `message` became typed `findings`. 3: a figure with
/// neither budget nor baseline is `reported` (was `skipped`), counted in
/// `counts.reported`.
pub const SCHEMA_VERSION: u32 = 3;

/// The outcome of one check, and of the whole gate. Ordered from the
/// least to the most serious: a target's status is its worst check's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Status {
    /// A figure with neither budget nor baseline: given, not judged. Below
    /// `pass`, so a target whose judged checks pass is `pass`.
    Reported,
    Pass,
    /// Not judged at all (a device its window places nothing on).
    Skipped,
    Warn,
    /// A failure a `[[waiver]]` lets through (docs/gate.md#waivers): it
    /// does not fail the gate.
    Waived,
    Fail,
    Error,
}

impl Status {
    /// The status as every report writes it (its JSON value too).
    pub fn id(self) -> &'static str {
        self.into()
    }
}

/// What a check judges; written as its stable id (JUnit name, JSON value,
/// metrics label): `allocated-peak`, `category.NAME`, `phase.NAME.FIGURE`,
/// `baseline`, `window`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckId {
    /// A figure of the whole device (`[target.budget]`).
    Figure(Figure),
    /// A category's peak bytes (`[target.budget.category]`).
    Category(String),
    /// A figure of one phase (`[target.budget.phase."NAME"]`).
    Phase { phase: String, figure: Figure },
    /// A figure of one memory pool (`[target.budget.pool."NAME"]`).
    Pool { pool: String, figure: Figure },
    /// Whether the snapshot had a baseline to compare with.
    Baseline,
    /// A device the window places nothing on.
    Window,
    /// A figure across the target's ranks (`[target.ranks]`).
    Ranks(super::RankCheckId),
    /// Whether the baseline was recorded in the run's environment.
    Environment,
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckId::Figure(x) => f.write_str(x.id()),
            CheckId::Category(name) => write!(f, "category.{name}"),
            CheckId::Phase { phase, figure } => write!(f, "phase.{phase}.{}", figure.id()),
            CheckId::Pool { pool, figure } => write!(f, "pool.{pool}.{}", figure.id()),
            CheckId::Baseline => f.write_str("baseline"),
            CheckId::Window => f.write_str("window"),
            CheckId::Ranks(r) => r.fmt(f),
            CheckId::Environment => f.write_str("environment"),
        }
    }
}

/// Tests build checks from the ids reports write.
#[cfg(test)]
impl From<&str> for CheckId {
    fn from(id: &str) -> CheckId {
        let figure = |f: &str| Figure::from_id(f).unwrap_or_else(|| panic!("no figure {f}"));
        match id {
            "baseline" => CheckId::Baseline,
            "window" => CheckId::Window,
            "environment" => CheckId::Environment,
            _ if id.starts_with("category.") => CheckId::Category(id["category.".len()..].into()),
            _ if id.starts_with("pool.") => {
                let (pool, f) = id["pool.".len()..].rsplit_once('.').unwrap();
                CheckId::Pool {
                    pool: pool.into(),
                    figure: figure(f),
                }
            }
            _ if id.starts_with("phase.") => {
                let (phase, f) = id["phase.".len()..].rsplit_once('.').unwrap();
                CheckId::Phase {
                    phase: phase.into(),
                    figure: figure(f),
                }
            }
            _ => CheckId::Figure(figure(id)),
        }
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One judged figure or category of one device.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Check {
    pub id: CheckId,
    pub status: Status,
    pub unit: Unit,
    pub current: u64,
    pub baseline: Option<u64>,
    pub budget: Option<u64>,
    /// Allowed growth over the baseline, percent.
    pub tolerance: Option<f64>,
    /// Why the check has its status; never empty.
    pub findings: Vec<Finding>,
    /// The budget-file key this check's verdict comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_line: Option<Loc>,
    /// The budget as the budget file writes it (`"0.2 GB"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_written: Option<String>,
    /// How much of the budget is used, for a judged check with a budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom: Option<Headroom>,
    /// The id of the check leading the finding this one moved with: the
    /// same regression, reported there (docs/figures.md#findings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo_of: Option<String>,
    /// On a warning or failure that leads a finding: its figures, change
    /// and cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regression: Option<Regression>,
}

/// A budget's headroom, in the check's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Headroom {
    /// Budget minus current: negative when over.
    pub left: i64,
    /// Current over budget (1.0: all of it); absent for a zero budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fraction_used: Option<f64>,
}

impl Headroom {
    pub fn of(current: u64, budget: u64) -> Headroom {
        let left = i128::from(budget) - i128::from(current);
        Headroom {
            left: i64::try_from(left).unwrap_or(if left < 0 { i64::MIN } else { i64::MAX }),
            fraction_used: (budget > 0).then(|| current as f64 / budget as f64),
        }
    }
}

impl Check {
    /// A check of `current` with no baseline, budget, finding, budget-file
    /// line or regression yet: what every judging step starts from.
    pub fn new(id: CheckId, status: Status, unit: Unit, current: u64) -> Check {
        Check {
            id,
            status,
            unit,
            current,
            baseline: None,
            budget: None,
            tolerance: None,
            findings: Vec::new(),
            config_line: None,
            budget_written: None,
            headroom: None,
            echo_of: None,
            regression: None,
        }
    }

    /// A check every report lists whatever its status: a device the window
    /// places nothing on is said, never dropped, and a peak's headroom to
    /// a known device memory is said in every report.
    pub fn always_listed(&self) -> bool {
        self.findings.iter().any(|f| {
            matches!(
                f,
                Finding::WindowNotPlaced { .. } | Finding::DeviceHeadroom { .. }
            )
        })
    }

    /// Current minus baseline.
    pub fn delta(&self) -> Option<i128> {
        self.baseline
            .map(|b| i128::from(self.current) - i128::from(b))
    }

    /// The change relative to the baseline, percent; none from a zero one.
    pub fn delta_pct(&self) -> Option<f64> {
        match (self.delta(), self.baseline) {
            (Some(d), Some(b)) if b > 0 => Some(d as f64 * 100.0 / b as f64),
            _ => None,
        }
    }
}

/// Bytes of one category at the allocated peak.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct CategoryRow {
    pub category: String,
    pub baseline: Option<u64>,
    pub current: u64,
}

/// Bytes live at the peak from one allocation site.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct SiteRow {
    pub site: String,
    pub baseline: Option<u64>,
    pub current: Option<u64>,
}

impl SiteRow {
    pub fn growth(&self) -> i128 {
        i128::from(self.current.unwrap_or(0)) - i128::from(self.baseline.unwrap_or(0))
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct DeviceVerdict {
    pub device: Device,
    /// Where each peak of the run was reached (docs/figures.md#peak-phase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_phase: Option<PeakPhase>,
    /// The first OOM entries of the run in detail (docs/figures.md#oom).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oom: Vec<OomDetail>,
    pub trace_complete: bool,
    /// What the analysis found odd (the figures are still given).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub checks: Vec<Check>,
    pub categories: Vec<CategoryRow>,
    /// Largest growth first.
    pub sites: Vec<SiteRow>,
    /// Where the judged window lies, when the target has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowReport>,
    /// The run's memory pools (docs/figures.md#pools), when it has more
    /// than the default one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolFigures>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotVerdict {
    /// The snapshot's key (capture group or file stem): the JUnit class.
    pub name: String,
    pub path: String,
    pub status: Status,
    pub baseline: Option<String>,
    /// Why the snapshot (or its baseline) could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<SnapshotError>,
    pub devices: Vec<DeviceVerdict>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct TargetVerdict {
    pub name: String,
    pub status: Status,
    pub snapshots: Vec<SnapshotVerdict>,
    /// The figures across the target's ranks, when it has `[target.ranks]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<super::RanksVerdict>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Counts {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    /// Failures a waiver lets through.
    pub waived: usize,
    /// Figures given without a budget or baseline to judge them by.
    pub reported: usize,
    pub skipped: usize,
    pub error: usize,
    /// Failing findings: failed checks that moved together count once.
    pub regressions: usize,
}

impl Counts {
    fn add(&mut self, s: Status) {
        match s {
            Status::Pass => self.pass += 1,
            Status::Warn => self.warn += 1,
            Status::Fail => self.fail += 1,
            Status::Waived => self.waived += 1,
            Status::Reported => self.reported += 1,
            Status::Skipped => self.skipped += 1,
            Status::Error => self.error += 1,
        }
    }
}

/// The whole gate.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Verdict {
    /// Spelled as docs/figures.md#json-documents spells it in every JSON document.
    #[serde(rename = "schema_version")]
    pub schema_version: u32,
    pub kind: &'static str,
    /// `pass`, `warn`, `fail` or `error`.
    pub verdict: Status,
    /// Seconds since the Unix epoch (`SOURCE_DATE_EPOCH` when set).
    pub generated_at: i64,
    pub config: String,
    pub tolerance: f64,
    pub noise_floor: u64,
    pub counts: Counts,
    pub targets: Vec<TargetVerdict>,
    /// Every `[[waiver]]` and what became of it (docs/gate.md#waivers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waivers: Vec<super::waivers::WaiverUse>,
}

impl Verdict {
    pub fn new(config: &Budget, generated_at: i64, mut targets: Vec<TargetVerdict>) -> Verdict {
        // "Today" is the report's own time, so `SOURCE_DATE_EPOCH` fixes it.
        let today = generated_at.div_euclid(86_400);
        let waivers = super::waivers::apply(&mut targets, &config.waivers, today);
        for d in targets
            .iter_mut()
            .flat_map(|t| &mut t.snapshots)
            .flat_map(|s| &mut s.devices)
        {
            group::read(d);
        }
        let mut counts = Counts::default();
        for s in targets.iter().flat_map(|t| &t.snapshots) {
            if s.error.is_some() {
                counts.error += 1;
            }
            for c in s.devices.iter().flat_map(|d| &d.checks) {
                counts.add(c.status);
                counts.regressions += usize::from(c.status == Status::Fail && c.echo_of.is_none());
            }
        }
        for c in targets
            .iter()
            .filter_map(|t| t.ranks.as_ref())
            .flat_map(|r| &r.checks)
        {
            counts.add(c.status);
            // Each failing rank check is a finding of its own.
            counts.regressions += usize::from(c.status == Status::Fail);
        }
        // Reported figures and skipped devices judge nothing: the gate's
        // verdict is that of the checks judged.
        let verdict = match targets
            .iter()
            .map(|t| t.status)
            .filter(|s| *s > Status::Skipped)
            .max()
            .unwrap_or(Status::Pass)
        {
            // A waived failure does not fail the gate; the gate says
            // `warn`, as for any check that passed with a remark.
            Status::Waived => Status::Warn,
            s => s,
        };
        Verdict {
            schema_version: SCHEMA_VERSION,
            kind: "memgate-verdict",
            verdict,
            generated_at,
            config: config.file.clone(),
            tolerance: config.tolerance.pct.0,
            noise_floor: config.noise_floor.0,
            counts,
            targets,
            waivers,
        }
    }

    /// Failing findings (the `regressions` output): checks that moved
    /// together count once.
    pub fn regressions(&self) -> usize {
        self.counts.regressions
    }

    /// Every check with its target, snapshot and device.
    pub fn checks(
        &self,
    ) -> impl Iterator<Item = (&TargetVerdict, &SnapshotVerdict, &DeviceVerdict, &Check)> {
        self.targets.iter().flat_map(|t| {
            t.snapshots.iter().flat_map(move |s| {
                s.devices
                    .iter()
                    .flat_map(move |d| d.checks.iter().map(move |c| (t, s, d, c)))
            })
        })
    }
}

impl SnapshotVerdict {
    /// The worst status of its checks; `skipped` with none.
    pub fn worst_check(&self) -> Status {
        self.devices
            .iter()
            .flat_map(|d| &d.checks)
            .map(|c| c.status)
            .max()
            .unwrap_or(Status::Skipped)
    }
}

impl TargetVerdict {
    pub fn new(name: String, snapshots: Vec<SnapshotVerdict>) -> TargetVerdict {
        let status = snapshots
            .iter()
            .map(|s| s.status)
            .max()
            .unwrap_or(Status::Pass);
        TargetVerdict {
            name,
            status,
            snapshots,
            ranks: None,
        }
    }

    /// The target with its figures across ranks, which count in its status.
    pub fn with_ranks(mut self, ranks: Option<super::RanksVerdict>) -> TargetVerdict {
        if let Some(r) = &ranks {
            self.status = self.status.max(r.status);
        }
        self.ranks = ranks;
        self
    }
}

/// Why a snapshot was not judged; written as its sentence (the JSON
/// `error` too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// The snapshot could not be read or analysed, as the reading layer
    /// says.
    #[error("{0}")]
    Unreadable(String),
    /// Its baseline could not be read or analysed.
    #[error("baseline {0}")]
    Baseline(String),
    #[error("the snapshot holds no device (no segment and no trace entry): nothing to judge")]
    NoDevice,
    #[error(
        "the target asks for dev{want} (`device = {want}`), but the snapshot holds only {}",
        devices(.holds)
    )]
    NoSuchDevice { want: Device, holds: Vec<Device> },
    /// Repeated runs of one name (docs/gate.md#repeated-runs) that hold
    /// other devices than the first run: they are not runs of one job.
    #[error(
        "the repeated runs of this name hold different devices: {first} holds {}, {file} holds {}",
        devices(.want),
        devices(.holds)
    )]
    RepeatsDiffer {
        first: String,
        file: String,
        want: Vec<Device>,
        holds: Vec<Device>,
    },
    /// `figures = []` and no budget: a pass would be a pass on nothing.
    #[error("no check to judge: the target budgets nothing and `[defaults] figures` is empty")]
    NoCheck,
}

/// `dev0, dev1`.
fn devices(ids: &[Device]) -> String {
    let names: Vec<String> = ids.iter().map(|d| format!("dev{d}")).collect();
    names.join(", ")
}

impl Serialize for SnapshotError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A snapshot that could not be read: judged as an error, not a failure.
pub fn unreadable(
    name: String,
    path: String,
    baseline: Option<String>,
    error: SnapshotError,
) -> SnapshotVerdict {
    SnapshotVerdict {
        name,
        path,
        status: Status::Error,
        baseline,
        error: Some(error),
        devices: Vec::new(),
    }
}
