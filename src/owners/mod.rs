//! Who owns the code a finding points at (docs/figures.md#owners): the
//! budget's `[owners]` patterns, then the repository's CODEOWNERS, matched
//! against the file of each cause row's site. The verdict keeps the owners
//! as data; `report/` writes them, escaped for each sink, and as an
//! `@mention` only where the budget opts in.

mod codeowners;
mod pattern;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;

use crate::analysis::site_file;
use crate::budget::{Budget, CodeownersAt, ConfigError};
use crate::compare::{Cause, Verdict};
pub(crate) use pattern::Pattern;
use pattern::Steps;

/// Matching steps a whole run may spend: a few hundred rules against a
/// few dozen sites take well under a million; 10 million take about 0.2 s
/// in a release build.
const STEPS: u64 = 10_000_000;

/// One pattern and its owners.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) pattern: Pattern,
    pub(crate) owners: Vec<String>,
    /// GitLab's sections: the last match of each counts (0 on GitHub).
    pub(crate) section: usize,
}

/// The owner rules of a run: the budget's first, then CODEOWNERS's.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    budget: Vec<Rule>,
    codeowners: Vec<Rule>,
    /// The CODEOWNERS file read, an input no report may replace.
    pub file: Option<PathBuf>,
    mention: bool,
}

/// A file's owners, or `None` when the step budget was spent first.
type Found = Option<Vec<String>>;

impl Owners {
    /// The owners the budget's `[owners]` table names (none: `None`),
    /// reading the CODEOWNERS file it points to.
    pub fn load(budget: &Budget) -> Result<Option<Owners>, Vec<ConfigError>> {
        let Some(table) = &budget.owners else {
            return Ok(None);
        };
        let budget_rules = table
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
            Some((CodeownersAt::Search(from), loc)) => match codeowners::find(from) {
                Ok(f) => Some(f),
                Err(message) => {
                    return Err(vec![ConfigError {
                        loc: loc.clone(),
                        key: "owners.codeowners".into(),
                        message,
                    }])
                }
            },
        };
        let codeowners = match &file {
            Some(f) => codeowners::read(f)?,
            None => Vec::new(),
        };
        Ok(Some(Owners {
            budget: budget_rules,
            codeowners,
            file,
            mention: table.mention,
        }))
    }

    /// Name the owners of every cause row of the verdict.
    pub fn assign(&self, verdict: &mut Verdict) {
        let mut steps = Steps::new(STEPS);
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
                        Some(file) => self.owners_of(file, steps),
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

    /// The owners of `file`: the budget's last matching pattern, else
    /// those of CODEOWNERS's sections (empty: no rule names an owner).
    fn owners_of(&self, file: &str, steps: &mut Steps) -> Found {
        if let Some(owners) = last_match(&self.budget, file, steps)?.first() {
            return Some(owners.clone());
        }
        Some(last_match(&self.codeowners, file, steps)?.concat())
    }
}

/// The owners of the last rule of each section that matches `file`, in
/// section order; `None` when the steps ran out.
fn last_match(rules: &[Rule], file: &str, steps: &mut Steps) -> Option<Vec<Vec<String>>> {
    let mut decided: Vec<(usize, &Vec<String>)> = Vec::new();
    for rule in rules.iter().rev() {
        if decided.iter().any(|(s, _)| *s == rule.section) {
            continue;
        }
        if rule.pattern.matches(file, steps)? {
            decided.push((rule.section, &rule.owners));
        }
    }
    decided.sort_by_key(|(s, _)| *s);
    let mut out: Vec<Vec<String>> = Vec::new();
    for (_, owners) in decided {
        let fresh: Vec<String> = owners
            .iter()
            .filter(|o| !out.iter().flatten().any(|p| p == *o))
            .cloned()
            .collect();
        out.push(fresh);
    }
    Some(out)
}

/// A GitHub or GitLab handle (`@user`, `@org/team`): what may be written
/// as an `@mention` when the budget opts in; anything else never is.
pub fn is_handle(owner: &str) -> bool {
    let Some(name) = owner.strip_prefix('@') else {
        return false;
    };
    let mut parts = name.splitn(2, '/');
    let user = parts.next().unwrap_or("");
    let ok = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.len() <= 100
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || extra.contains(&c))
    };
    ok(user, &[]) && parts.next().is_none_or(|team| ok(team, &['_', '.']))
}
