//! What a command would read through a path: a directory stands for its
//! files, a pattern for its matches, a budget for its snapshot patterns,
//! baselines and rules file. [`Roots::existing`] confines the path a tool
//! is given; this confines every file behind it, canonicalised (a link
//! inside a root, to a file or a directory, counts by its target), before
//! the command runs. The error names the link through which the read
//! would leave the roots. These checks are by name (run unconfined,
//! [`crate::beneath::by_name`]) and give the error its words; what holds
//! when a name changes between the check and the use is the process's own
//! confinement beneath the roots' descriptors ([`crate::beneath`]).

use std::path::{Path, PathBuf};

use crate::budget::{Budget, Rules};

use super::roots::Roots;

/// The rule sets a budget names that are no file.
const BUILT_IN_RULES: [&str; 2] = ["default", "mosaic"];

impl Roots {
    /// Every file `spec` (a path or glob pattern, as the command is given
    /// it) leads the command to read lies under a root: the entries of a
    /// directory (not hidden, not directories: a superset of what both a
    /// snapshot directory and a baseline directory are read as), the
    /// matches of a pattern (the crate's own expansion, [`crate::walk`]),
    /// or the file itself. A path that does not resolve is left to the
    /// command, which reports it. `what` names the argument or budget key.
    pub(crate) fn reads_inside(&self, what: &str, spec: &str) -> Result<(), String> {
        crate::beneath::by_name(|| self.reads_inside_by_name(what, spec))
    }

    fn reads_inside_by_name(&self, what: &str, spec: &str) -> Result<(), String> {
        let path = Path::new(spec);
        let files: Vec<PathBuf> = if spec.contains(['*', '?', '[']) {
            // A pattern that cannot be expanded fails the command before it
            // reads anything; the matches it has are checked all the same.
            crate::walk::expand(&[spec.to_string()], None).unwrap_or_default()
        } else if path.is_dir() {
            self.leaves(what, spec, path)?;
            // One that cannot be listed fails the command as well.
            let Ok(entries) = std::fs::read_dir(path) else {
                return Ok(());
            };
            entries
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .filter(|p| !p.is_dir())
                .collect()
        } else {
            vec![path.to_path_buf()]
        };
        for f in files {
            self.leaves(what, spec, &f)?;
        }
        Ok(())
    }

    /// An error when `path` resolves to a place outside every root, naming
    /// the first component through which it leaves.
    fn leaves(&self, what: &str, spec: &str, path: &Path) -> Result<(), String> {
        let Ok(canonical) = path.canonicalize() else {
            return Ok(());
        };
        if self.inside(&canonical) {
            return Ok(());
        }
        let via = self.way_out(path);
        let named = if via.as_os_str() == spec {
            format!("{what} `{spec}`")
        } else {
            format!("{what} `{spec}` (through the link {})", via.display())
        };
        Err(self.outside(&named))
    }

    /// The shortest prefix of `path` that resolves outside the roots after
    /// one that resolved inside (the link that leads out), else `path`.
    fn way_out(&self, path: &Path) -> PathBuf {
        let mut prefix = PathBuf::new();
        let mut was_inside = false;
        for c in path.components() {
            prefix.push(c);
            let inside = prefix.canonicalize().is_ok_and(|p| self.inside(&p));
            if was_inside && !inside {
                return prefix;
            }
            was_inside |= inside;
        }
        path.to_path_buf()
    }

    /// Every file the budget `b` leads `check` to read lies under a root:
    /// its targets' snapshot patterns (unless the call names the
    /// snapshots), their baselines (unless the call names one) and the
    /// rules file. The budget was read by the crate's own validation, so
    /// its paths resolve exactly as `check` resolves them; one that does
    /// not validate (`None`) is left to `check`, which reports it and reads
    /// nothing else.
    pub(crate) fn budget_reads_inside(
        &self,
        b: Option<&Budget>,
        snapshots_given: bool,
        baseline_given: bool,
    ) -> Result<(), String> {
        let Some(b) = b else {
            return Ok(());
        };
        if let Rules::File(p) = &b.rules {
            self.reads_inside("defaults.rules", &p.to_string_lossy())?;
        }
        for t in &b.targets {
            if !snapshots_given {
                for s in &t.snapshots {
                    self.reads_inside("target.snapshots", s)?;
                }
            }
            if let Some(base) = t.baseline.as_deref().filter(|_| !baseline_given) {
                self.reads_inside("target.baseline", base)?;
            }
        }
        Ok(())
    }
}

/// The paths a budget names (snapshot patterns, baselines, rules files)
/// must be relative and stay below its directory: a first, textual check
/// before [`Roots::budget_reads_inside`] resolves them.
pub(crate) fn budget_paths_inside(budget: &toml::Table) -> Result<(), String> {
    let mut named: Vec<(String, String)> = Vec::new();
    let mut take = |what: String, v: Option<&toml::Value>| match v {
        Some(toml::Value::String(s)) => named.push((what, s.clone())),
        Some(toml::Value::Array(a)) => named.extend(
            a.iter()
                .filter_map(|x| x.as_str())
                .map(|s| (what.clone(), s.to_string())),
        ),
        _ => {}
    };
    if let Some(d) = budget.get("defaults").and_then(|d| d.as_table()) {
        take("defaults.rules".into(), d.get("rules"));
        take("defaults.baseline".into(), d.get("baseline"));
    }
    for t in budget
        .get("target")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_table())
    {
        for key in ["snapshots", "baseline", "rules"] {
            take(format!("target.{key}"), t.get(key));
        }
    }
    for (what, value) in named {
        if what.ends_with("rules") && BUILT_IN_RULES.contains(&value.as_str()) {
            continue;
        }
        Roots::relative_inside(&what, &value)?;
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A root with a snapshot of its own, and a directory outside it.
    fn tree() -> (tempfile::TempDir, tempfile::TempDir, Roots) {
        let root = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("runs")).unwrap();
        std::fs::write(root.path().join("runs/rank0.pickle"), b"x").unwrap();
        std::fs::write(other.path().join("secret.pickle"), b"x").unwrap();
        std::fs::write(other.path().join("rules.toml"), b"").unwrap();
        let roots = Roots::new(&[root.path().to_path_buf()]).unwrap();
        (root, other, roots)
    }

    /// [`Roots::budget_reads_inside`] of the budget file `file`.
    fn reads(roots: &Roots, file: &Path, snapshots: bool, baseline: bool) -> Result<(), String> {
        let b = crate::budget::validate_file(file, false).budget;
        roots.budget_reads_inside(b.as_ref(), snapshots, baseline)
    }

    fn budget(root: &Path, text: &str) -> PathBuf {
        let file = root.canonicalize().unwrap().join("memgate.toml");
        std::fs::write(&file, text).unwrap();
        file
    }

    fn target(snapshots: &str, extra: &str) -> String {
        format!(
            "[[target]]\nname = \"t\"\nsnapshots = \"{snapshots}\"\n{extra}\n\
             [target.budget]\nallocated-peak = \"1 GiB\"\n"
        )
    }

    #[test]
    fn a_budget_that_stays_inside_passes() {
        let (root, _other, roots) = tree();
        let file = budget(root.path(), &target("runs/*.pickle", "baseline = \"runs\""));
        reads(&roots, &file, false, false).unwrap();
    }

    #[test]
    fn a_symlinked_directory_out_of_the_root_is_refused_for_every_key() {
        let (root, other, roots) = tree();
        symlink(other.path(), root.path().join("out")).unwrap();
        for (text, key) in [
            // The directory itself, a pattern under it, a file through it.
            (target("out", ""), "target.snapshots"),
            (target("out/*.pickle", ""), "target.snapshots"),
            (target("out/secret.pickle", ""), "target.snapshots"),
            (
                target("runs/*.pickle", "baseline = \"out\""),
                "target.baseline",
            ),
            (
                target("runs/*.pickle", "baseline = \"out/*.pickle\""),
                "target.baseline",
            ),
            (
                format!(
                    "[defaults]\nrules = \"out/rules.toml\"\n{}",
                    target("runs/*.pickle", "")
                ),
                "defaults.rules",
            ),
        ] {
            let file = budget(root.path(), &text);
            let err = reads(&roots, &file, false, false).unwrap_err();
            assert!(err.contains(key), "{text}: {err}");
            assert!(err.contains("outside the roots"), "{text}: {err}");
            // The link is named, never what lies behind it.
            assert!(err.contains("/out"), "{text}: {err}");
            assert!(
                text.contains("secret") || !err.contains("secret"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn a_glob_that_matches_a_link_out_of_the_root_is_refused() {
        let (root, other, roots) = tree();
        // A link among the files, and a linked directory that `*` and `**`
        // match as a component.
        symlink(
            other.path().join("secret.pickle"),
            root.path().join("runs/rank1.pickle"),
        )
        .unwrap();
        let file = budget(root.path(), &target("runs/*.pickle", ""));
        let err = reads(&roots, &file, false, false).unwrap_err();
        assert!(err.contains("runs/rank1.pickle"), "{err}");
        std::fs::remove_file(root.path().join("runs/rank1.pickle")).unwrap();
        std::fs::create_dir(root.path().join("deep")).unwrap();
        symlink(other.path(), root.path().join("deep/d")).unwrap();
        for pattern in ["*/d/*.pickle", "**/*.pickle"] {
            let file = budget(root.path(), &target(pattern, ""));
            let err = reads(&roots, &file, false, false).unwrap_err();
            assert!(err.contains("deep/d"), "{pattern}: {err}");
        }
    }

    #[test]
    fn a_directory_argument_with_a_link_inside_is_refused() {
        let (root, other, roots) = tree();
        let runs = roots.existing("runs").unwrap();
        let runs = runs.to_str().unwrap();
        roots.reads_inside("baseline", runs).unwrap();
        symlink(
            other.path().join("secret.pickle"),
            root.path().join("runs/b.json"),
        )
        .unwrap();
        let err = roots.reads_inside("baseline", runs).unwrap_err();
        assert!(err.contains("runs/b.json"), "{err}");
        // A hidden entry is read by no command.
        std::fs::remove_file(root.path().join("runs/b.json")).unwrap();
        symlink(
            other.path().join("secret.pickle"),
            root.path().join("runs/.hidden"),
        )
        .unwrap();
        roots.reads_inside("baseline", runs).unwrap();
    }

    #[test]
    fn what_the_call_overrides_is_not_checked() {
        let (root, other, roots) = tree();
        symlink(other.path(), root.path().join("out")).unwrap();
        let file = budget(root.path(), &target("out/*.pickle", "baseline = \"out\""));
        reads(&roots, &file, true, true).unwrap();
        assert!(reads(&roots, &file, true, false).is_err());
        assert!(reads(&roots, &file, false, true).is_err());
    }
}
