//! `[owners]` where budget and verdict meet (docs/figures.md#owners): the
//! budget's table and the CODEOWNERS file it points to read into owner
//! rules, then every cause row of the verdict given its site's owners.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::analysis::site_file;
use crate::budget::{Budget, CodeownersAt, ConfigError, Loc};
use crate::compare::{Cause, Verdict};
use crate::owners::{self, Owners, Rule, Steps};

/// The run's owner rules, and what the reports need of the table.
#[derive(Debug)]
pub(crate) struct OwnerLookup {
    owners: Owners,
    /// The CODEOWNERS file read, an input no report may replace.
    pub(crate) file: Option<PathBuf>,
    mention: bool,
}

/// A file's owners, or `None` when the step budget was spent first.
type Found = Option<Vec<String>>;

impl OwnerLookup {
    /// The rules of the budget's `[owners]` table (none: `None`), reading
    /// the CODEOWNERS file it points to.
    pub(crate) fn load(budget: &Budget) -> Result<Option<OwnerLookup>, Vec<ConfigError>> {
        let Some(table) = &budget.owners else {
            return Ok(None);
        };
        let from_budget = table
            .paths
            .iter()
            .map(|p| Rule {
                pattern: p.pattern.clone(),
                owners: p.owners.clone(),
                section: 0,
            })
            .collect();
        let file = match &table.codeowners {
            None => None,
            Some((CodeownersAt::File(f), _)) => Some(f.clone()),
            Some((CodeownersAt::Search(from), loc)) => Some(owners::find(from).map_err(|m| {
                vec![ConfigError {
                    loc: loc.clone(),
                    key: "owners.codeowners".into(),
                    message: m,
                }]
            })?),
        };
        let codeowners = match &file {
            Some(f) => owners::read(f).map_err(|errors| placed(f, errors))?,
            None => Vec::new(),
        };
        Ok(Some(OwnerLookup {
            owners: Owners {
                budget: from_budget,
                codeowners,
            },
            file,
            mention: table.mention,
        }))
    }

    /// Name the owners of every cause row of the verdict.
    pub(crate) fn assign(&self, verdict: &mut Verdict) {
        let mut steps = Steps::new(owners::STEPS);
        let mut seen: HashMap<String, Found> = HashMap::new();
        let causes = verdict
            .targets
            .iter_mut()
            .flat_map(|t| &mut t.snapshots)
            .flat_map(|s| &mut s.devices)
            .flat_map(|d| &mut d.checks)
            .filter_map(|c| c.regression.as_mut().and_then(|r| r.cause.as_mut()));
        for cause in causes {
            self.name(cause, &mut seen, &mut steps);
        }
    }

    fn name(&self, cause: &mut Cause, seen: &mut HashMap<String, Found>, steps: &mut Steps) {
        cause.mention = self.mention;
        for row in cause.grew.iter_mut().chain(&mut cause.shrank) {
            let found = match seen.get(&row.site) {
                Some(f) => f.clone(),
                None => {
                    let f = match site_file(&row.site) {
                        Some(file) => self.owners.owners_of(file, steps),
                        // `pre-trace`, `frameless`: no file, no owner.
                        None => Some(Vec::new()),
                    };
                    seen.insert(row.site.clone(), f.clone());
                    f
                }
            };
            row.owners_unresolved = found.is_none();
            row.owners = found;
        }
    }
}

/// A CODEOWNERS file's problems as budget problems, placed in that file.
fn placed(file: &std::path::Path, errors: Vec<owners::LineError>) -> Vec<ConfigError> {
    let name = file.display().to_string();
    errors
        .into_iter()
        .map(|e| ConfigError {
            loc: Loc {
                file: name.clone(),
                line: e.line,
                col: e.col,
            },
            key: String::new(),
            message: e.message,
        })
        .collect()
}
