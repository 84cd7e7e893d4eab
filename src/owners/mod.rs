//! Who owns a file of the user's code (docs/figures.md#owners): path
//! patterns in CODEOWNERS syntax, the budget's `[owners.paths]` and the
//! repository's CODEOWNERS file, and the lookup of one file's owners. It
//! knows nothing of budgets or verdicts: `check` reads the budget's table
//! into these rules and names the owners of each cause row.

mod codeowners;
mod pattern;
#[cfg(test)]
mod tests;

pub(crate) use codeowners::{find, read, LineError};
pub use pattern::Pattern;
pub(crate) use pattern::Steps;

/// Matching steps a whole run may spend: a few hundred rules against a
/// few dozen sites take well under a million; 10 million take about 0.2 s
/// in a release build.
pub(crate) const STEPS: u64 = 10_000_000;

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
pub(crate) struct Owners {
    pub(crate) budget: Vec<Rule>,
    pub(crate) codeowners: Vec<Rule>,
}

impl Owners {
    /// The owners of `file`: the budget's last matching pattern, else
    /// those of CODEOWNERS's sections (empty: no rule names an owner);
    /// `None` when the steps ran out first.
    pub(crate) fn owners_of(&self, file: &str, steps: &mut Steps) -> Option<Vec<String>> {
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
