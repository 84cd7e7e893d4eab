//! Shared by the analysis commands: expand the snapshot arguments, load and
//! analyse every file in parallel, and collect per-file errors. A loaded
//! snapshot is dropped as soon as its figures (and timelines) are computed,
//! so memory stays bounded by the files in flight, not by the file count.

use std::path::{Path, PathBuf};

use crate::analysis::environment::ENV_FILE_LIMIT;
use crate::analysis::{
    analyze_placing, analyze_request, DeviceReport, InlineRules, Placed, Request, RuleSet,
    SiteFlags, Timeline, Window, WindowError,
};
use crate::document::AnalysedSnapshot;
use crate::input;
use crate::snapshot;

use crate::error::{DestinationError, Error, UsageError};
use crate::files;
use crate::vocab::Rules;

use super::Outcome;

/// One analysed snapshot (the snapshot itself already dropped).
pub(crate) struct Analysed {
    pub(crate) path: PathBuf,
    pub(crate) warnings: Vec<String>,
    pub(crate) devices: Vec<DeviceReport>,
    /// One per device, when timelines were asked for.
    pub(crate) timelines: Option<Vec<Timeline>>,
    /// The devices the window places nothing on (not in `devices`).
    pub(crate) unplaced: Vec<WindowError>,
}

/// The files that could be analysed, and one error per file that could not.
pub(crate) struct Batch {
    pub(crate) done: Vec<Analysed>,
    pub(crate) errors: Vec<Error>,
}

impl Batch {
    /// The analysed files as document parts, in input order, and their
    /// timelines (empty where none were asked for).
    pub(crate) fn documents(&mut self) -> (Vec<AnalysedSnapshot>, Vec<Vec<Timeline>>) {
        std::mem::take(&mut self.done)
            .into_iter()
            .map(|a| {
                let t = a.timelines.unwrap_or_default();
                let doc = AnalysedSnapshot::new(&a.path, a.devices, a.unplaced, a.warnings);
                (doc, t)
            })
            .unzip()
    }

    /// The batch's errors, then `more`.
    pub(crate) fn outcome(mut self, more: impl IntoIterator<Item = Error>) -> Outcome {
        self.errors.extend(more);
        Outcome::from_errors(self.errors)
    }
}

/// A report path (`flag` `dest`) that is a file the command reads, one of
/// `inputs` or the `--rules` file, refused before anything is read or
/// written. A pattern that cannot be expanded counts as its literal path.
pub(crate) fn refuse_over_inputs(
    flag: &str,
    dest: &Path,
    inputs: &[String],
    rules: &str,
) -> Result<(), Outcome> {
    let mut read: Vec<PathBuf> = crate::walk::expand(inputs, None)
        .unwrap_or_else(|_| inputs.iter().map(PathBuf::from).collect());
    if let Ok(Rules::File(p)) = rules.parse::<Rules>() {
        read.push(p);
    }
    match read.into_iter().find(|i| files::same_file(dest, i)) {
        Some(input) => Err(Outcome::error(UsageError::from(
            DestinationError::OverwritesInput {
                flag: flag.into(),
                path: dest.to_path_buf(),
                input,
            },
        ))),
        None => Ok(()),
    }
}

/// Parse `--rules` and `--categories` (tried first), with the site rule
/// of `--project-root` and `--user-code`, naming the flag on error.
pub(crate) fn rules(
    spec: &str,
    categories: Option<&str>,
    sites: &SiteFlags,
) -> Result<RuleSet, Outcome> {
    let base = RuleSet::from_spec(spec).map_err(|e| Outcome::error(UsageError::Rules(e)))?;
    let sites = sites
        .rule()
        .map_err(|e| Outcome::error(UsageError::Sites(e)))?;
    let set = match categories {
        None => base,
        Some(text) => InlineRules::parse(text)
            .and_then(|inline| RuleSet::with_inline(&inline, base))
            .map_err(|e| Outcome::error(UsageError::Categories(e)))?,
    };
    Ok(set.with_sites(sites))
}

/// Load and analyse one file; what `req` asks for comes from the same
/// replay pass.
pub(crate) fn analyse_one(
    path: &Path,
    rules: &RuleSet,
    req: Request<'_>,
) -> Result<Analysed, Error> {
    let snap = snapshot::load(path)?;
    let (devices, timelines, unplaced) = analyse_placing(path, &snap, rules, req)?;
    Ok(Analysed {
        path: path.to_path_buf(),
        warnings: snap.warnings.clone(),
        devices,
        timelines,
        unplaced,
    })
}

/// A file's device reports, a snapshot's timelines when asked for, and the
/// devices its window places nothing on (never any in a summary).
pub(crate) type Figures = (Vec<DeviceReport>, Option<Vec<Timeline>>, Vec<WindowError>);

/// A snapshot's device reports as `req` asks, on the devices its window
/// can be placed on, with why it cannot on the others; when it can be
/// placed on none, or its stacks went past the report limit, an error
/// naming `path` (nothing would be judged).
pub(crate) fn analyse_placing(
    path: &Path,
    snap: &snapshot::Snapshot,
    rules: &RuleSet,
    req: Request<'_>,
) -> Result<Figures, Error> {
    let Placed { devices, unplaced } = analyze_placing(snap, rules, req);
    if devices.is_empty() {
        if let Some(error) = unplaced.first() {
            return Err(Error::Window {
                path: path.to_path_buf(),
                error: error.clone(),
            });
        }
    }
    within_label_limit(path, snap)?;
    let (mut devices, timelines): (Vec<DeviceReport>, Vec<Option<Timeline>>) =
        devices.into_iter().unzip();
    with_recorded_environment(path, &mut devices)?;
    Ok((devices, timelines.into_iter().collect(), unplaced))
}

/// A snapshot's device reports as `req` asks, and each device's timeline
/// when it asks for them; a window that cannot be placed, or stacks past
/// the report limit (`snapshot::labels`), is an error naming `path`.
pub(crate) fn analyse_snapshot(
    path: &Path,
    snap: &snapshot::Snapshot,
    rules: &RuleSet,
    req: Request<'_>,
) -> Result<(Vec<DeviceReport>, Option<Vec<Timeline>>), Error> {
    let (mut devices, timelines): (Vec<DeviceReport>, Vec<Option<Timeline>>) =
        analyze_request(snap, rules, req)
            .map_err(|error| Error::Window {
                path: path.to_path_buf(),
                error,
            })?
            .into_iter()
            .unzip();
    within_label_limit(path, snap)?;
    with_recorded_environment(path, &mut devices)?;
    Ok((devices, timelines.into_iter().collect()))
}

/// The file `record()` writes beside the snapshot `path`:
/// `DIR/.NAME.env.json` for `DIR/NAME.pickle`.
pub(crate) fn environment_path(path: &Path) -> Option<std::path::PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    Some(path.with_file_name(format!(".{stem}.env.json")))
}

/// Adds what `record()` wrote beside `path` (docs/figures.md#environment)
/// to each device's environment. No such file: nothing added. One that is
/// not a small regular file of the right shape, or a link that leaves the
/// snapshot's directory (it is opened beneath that directory's descriptor,
/// never followed out), is an error naming it.
pub(crate) fn with_recorded_environment(
    path: &Path,
    devices: &mut [DeviceReport],
) -> Result<(), Error> {
    let Some(env) = environment_path(path) else {
        return Ok(());
    };
    let fail = |why: String| -> Error {
        snapshot::LoadError::new(
            &env,
            format!("environment file beside {}: {why}", path.display()),
        )
        .into()
    };
    let Some(text) = read_environment(path, &env).map_err(fail)? else {
        return Ok(());
    };
    for d in devices.iter_mut() {
        let base = d.environment.take().unwrap_or_default();
        d.environment = Some(base.with_record(&text).map_err(&fail)?);
    }
    Ok(())
}

/// The text of the environment file `env` beside the snapshot `path`, read
/// through the one handle opened beneath the snapshot's directory; `None`
/// when there is none.
fn read_environment(path: &Path, env: &Path) -> Result<Option<String>, String> {
    let name = env.file_name().map(|n| n.to_string_lossy().into_owned());
    let opened = crate::beneath::open_beside(path, &name.unwrap_or_default());
    let file = match opened {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(None),
        // cap-std's word for a link out: say it without its target.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(format!(
                "cannot be read beside the snapshot (a link out of its directory, which \
                 memgate does not follow, or no permission): {e}"
            ))
        }
        Err(e) => return Err(e.to_string()),
    };
    let (file, len) = crate::files::regular(file).map_err(|e| e.to_string())?;
    if len > ENV_FILE_LIMIT {
        let limit = ENV_FILE_LIMIT >> 10;
        return Err(format!("{len} bytes, more than {limit} KiB"));
    }
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, ENV_FILE_LIMIT + 1),
        &mut text,
    )
    .map_err(|e| e.to_string())?;
    if text.len() as u64 > ENV_FILE_LIMIT {
        return Err(format!("more than {} KiB", ENV_FILE_LIMIT >> 10));
    }
    String::from_utf8(text)
        .map(Some)
        .map_err(|_| "not UTF-8".into())
}

/// An error naming `path` when the stacks its reports list went past the
/// report limit (`snapshot::labels`) while they were analysed.
fn within_label_limit(path: &Path, snap: &snapshot::Snapshot) -> Result<(), Error> {
    match snap.labels_overflow() {
        None => Ok(()),
        Some(bytes) => Err(snapshot::LoadError::new(
            path,
            format!(
                "its call stacks would put {} MiB of frames in the report, more than memgate's \
                 limit of {} MiB (one frame shared by very many or very deep stacks?)",
                bytes >> 20,
                snapshot::labels::MAX_REPORTED_FRAME_BYTES >> 20
            ),
        )
        .into()),
    }
}

/// A summary's devices, when their figures are of `window` (or, without
/// one, of the whole trace): figures of another span compare with nothing.
pub(crate) fn summary_in_window(
    path: &Path,
    devices: Vec<DeviceReport>,
    window: Option<&Window>,
) -> Result<Vec<DeviceReport>, Error> {
    let asked = window.map(|w| w.texts());
    for d in &devices {
        let held = d.window.as_ref().map(|w| (w.from.as_str(), w.to.as_str()));
        if held == asked {
            continue;
        }
        let (window, problem) = match (asked, held) {
            (Some(_), None) => (
                window.map(ToString::to_string).unwrap_or_default(),
                "this summary holds the whole trace's figures; give the snapshot itself, \
                 or a summary of the same window"
                    .to_string(),
            ),
            (_, Some((from, to))) => (
                format!("{from}..{to}"),
                match window {
                    None => "this summary holds this window's figures only, and no window \
                             was asked for"
                        .to_string(),
                    Some(w) => format!("this summary holds this window's figures, not `{w}`'s"),
                },
            ),
            (None, None) => unreachable!("equal spans were skipped"),
        };
        return Err(Error::Window {
            path: path.to_path_buf(),
            error: WindowError {
                device: d.device,
                window,
                problem,
            },
        });
    }
    Ok(devices)
}

/// Expand patterns and analyse every file on the thread pool, input order kept.
pub(crate) fn analyse_all(patterns: &[String], rules: &RuleSet, req: Request<'_>) -> Batch {
    let paths = match crate::walk::expand(patterns, None) {
        Ok(p) => p,
        Err(errors) => {
            return Batch {
                done: Vec::new(),
                errors: errors.into_iter().map(Error::from).collect(),
            }
        }
    };
    let mut batch = Batch {
        done: Vec::new(),
        errors: Vec::new(),
    };
    for r in input::par_map(&paths, |p| analyse_one(p, rules, req)) {
        match r {
            Ok(a) => batch.done.push(a),
            Err(e) => batch.errors.push(e),
        }
    }
    batch
}
