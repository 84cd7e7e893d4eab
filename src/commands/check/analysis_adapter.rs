//! The seam between `check` and the analysis: the budget file and the rule
//! set it names, read and compiled once, with every category the budget
//! names checked against that rule set and every target's window parsed.

use std::path::{Path, PathBuf};

use crate::budget::{self, Budget, ConfigError, Loc, Rules, Validated};

pub use crate::analysis::RuleSet;
use crate::analysis::{InlineRules, SiteRule, Window};

/// Each target's window, in target order (`None`: the whole trace).
pub(crate) type Windows = Vec<Option<Window>>;

/// A budget that cannot be used: every problem, and the rules file it
/// names when it was read that far (an input no report may replace).
pub(crate) struct Unusable {
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) rules_file: Option<PathBuf>,
}

/// Read and validate the budget file and compile its rule set. Problems of
/// both come together, sorted by position, as `check --validate` lists them.
pub(crate) fn load_budget(
    path: &Path,
    check_globs: bool,
    inline: Option<&InlineRules>,
) -> Result<(Budget, RuleSet, Windows), Unusable> {
    compiled(budget::validate_file(path, check_globs), inline)
}

/// [`load_budget`] of a budget given as a JSON document (`check
/// --budget-json`, the Python API's mappings): the same reader and
/// validation; `name` names it in messages, relative paths are relative
/// to `dir`.
pub(crate) fn load_budget_data(
    json: &str,
    name: &str,
    dir: &Path,
    check_globs: bool,
    inline: Option<&InlineRules>,
) -> Result<(Budget, RuleSet, Windows), Unusable> {
    let validated = budget::budget_from_json(json, name, dir, check_globs);
    compiled(validated, inline)
}

/// A validated budget with its rule set compiled, or everything that
/// keeps it from being used (and the rules file it names, if any).
fn compiled(
    validated: Validated,
    inline: Option<&InlineRules>,
) -> Result<(Budget, RuleSet, Windows), Unusable> {
    let rules_file = validated
        .budget
        .as_ref()
        .and_then(rules_file)
        .map(Path::to_path_buf);
    with_rules(validated, inline).map_err(|errors| Unusable { errors, rules_file })
}

/// The `[defaults] rules` file, when the budget names one.
pub(crate) fn rules_file(budget: &Budget) -> Option<&Path> {
    match &budget.rules {
        Rules::File(p) => Some(p),
        Rules::Default | Rules::Mosaic => None,
    }
}

/// The budget's rule set and windows, and the category and window checks a
/// budget cannot make.
fn with_rules(
    validated: Validated,
    inline: Option<&InlineRules>,
) -> Result<(Budget, RuleSet, Windows), Vec<ConfigError>> {
    let Validated { budget, mut errors } = validated;
    let Some(budget) = budget else {
        return Err(errors);
    };
    let rules = rule_set(&budget, inline, &mut errors);
    let windows = windows(&budget, &mut errors);
    if errors.is_empty() {
        return Ok((budget, rules, windows));
    }
    errors.sort_by_key(|e| (e.loc.line, e.loc.col));
    Err(errors)
}

/// `[defaults] rules` with the `[categories]` custom rules tried first,
/// and `--categories` before those. A rules file that does not compile is
/// an error at `defaults.rules`; the category names are then checked
/// against the default set.
fn rule_set(
    budget: &Budget,
    inline: Option<&InlineRules>,
    errors: &mut Vec<ConfigError>,
) -> RuleSet {
    let base = RuleSet::load(&budget.rules).unwrap_or_else(|m| {
        if let Some(loc) = &budget.rules_loc {
            errors.push(ConfigError {
                loc: loc.clone(),
                key: "defaults.rules".into(),
                message: budget::last_line(&m.to_string()),
            });
        }
        RuleSet::builtin_default()
    });
    // Listed as the budget file reads: the base set, then the custom rules.
    let mut known: Vec<String> = base.categories().to_vec();
    known.extend(budget.categories.iter().map(|r| r.name.clone()));
    known.extend(inline.iter().flat_map(|i| i.names()).map(str::to_string));
    for k in &budget.category_keys {
        if !known.contains(&k.name) {
            errors.push(ConfigError {
                loc: k.loc.clone(),
                key: format!("target.budget.category.{}", k.name),
                message: format!(
                    "unknown category `{}`{}; known: {}",
                    k.name,
                    renamed(&k.name, &known),
                    known.join(", ")
                ),
            });
        }
    }
    let set = if budget.categories.is_empty() {
        Ok(base)
    } else {
        RuleSet::with_custom(budget.categories.clone(), base)
    };
    let set = match (inline, set) {
        (Some(i), Ok(set)) => RuleSet::with_inline(i, set),
        (_, set) => set,
    };
    // Each source was within the limits on rules; together they are not.
    let set = set.unwrap_or_else(|e| {
        errors.push(ConfigError {
            loc: budget.rules_loc.clone().unwrap_or_else(|| file_loc(budget)),
            key: String::new(),
            message: e.to_string(),
        });
        RuleSet::builtin_default()
    });
    // `[sites]` was checked by validation; a value it let through that the
    // rule still refuses is reported all the same.
    let sites = &budget.sites;
    match SiteRule::new(sites.project_root.as_deref(), &sites.user_code) {
        Ok(rule) => set.with_sites(rule),
        Err(e) => {
            errors.push(ConfigError {
                loc: file_loc(budget),
                key: "sites".into(),
                message: e.to_string(),
            });
            set
        }
    }
}

/// The budget file as a whole, for a problem of no one key.
fn file_loc(budget: &Budget) -> Loc {
    Loc {
        file: budget.file.clone(),
        line: 0,
        col: 0,
    }
}

/// ` (renamed `frameless`, docs/figures.md#memory-with-no-story)` for the
/// default rules' old `unknown`, which a budget written before still names.
fn renamed(name: &str, known: &[String]) -> &'static str {
    let frameless = crate::vocab::NoStory::Frameless.id();
    if name == "unknown" && known.iter().any(|k| k == frameless) {
        " (renamed `frameless`, docs/figures.md#memory-with-no-story)"
    } else {
        ""
    }
}

/// Each target's `window`, parsed; one that does not parse is an error at
/// `target.window`.
fn windows(budget: &Budget, errors: &mut Vec<ConfigError>) -> Windows {
    budget
        .targets
        .iter()
        .map(|t| {
            let (spec, loc) = t.window.as_ref()?;
            spec.parse::<Window>()
                .map_err(|e| {
                    errors.push(ConfigError {
                        loc: loc.clone(),
                        key: "target.window".into(),
                        message: e.to_string(),
                    })
                })
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        text: &str,
        file: &str,
        dir: &Path,
        check_globs: bool,
    ) -> Result<Budget, Vec<ConfigError>> {
        with_rules(budget::validate(text, file, dir, check_globs), None).map(|(b, _, _)| b)
    }

    fn errors(text: &str) -> Vec<String> {
        match parse(text, "memgate.toml", Path::new(""), false) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn every_problem_is_reported_at_once_with_its_position() {
        let e = errors(
            r#"[defaults]
tolerence = "5%"
noise-floor = -3

[[target]]
name = "t"
colour = "red"

[target.budget]
overall-peek = "1 GiB"
reserved-peak = "40 G"
allocated-peak = "-1 GiB"

[target.budget.category]
activations = "1 GiB"

[target.tolerance]
dynamic-peak = 5
"#,
        );
        let want = [
            "memgate.toml:2:1: unknown key `tolerence` in [defaults]",
            "memgate.toml:3:15: `defaults.noise-floor`: -3 is negative",
            "memgate.toml:7:1: unknown key `colour` in [[target]]",
            "memgate.toml:10:1: unknown key `overall-peek` in [target.budget]",
            "memgate.toml:11:17: `target.budget.reserved-peak`: \"40 G\" is ambiguous: write \"40 GiB\" (binary, 1024-based) or \"40 GB\"",
            "memgate.toml:12:18: `target.budget.allocated-peak`: \"-1 GiB\" is negative",
            "memgate.toml:15:1: `target.budget.category.activations`: unknown category",
            "memgate.toml:18:16: `target.tolerance.dynamic-peak`: 5 is not a percentage",
        ];
        assert_eq!(e.len(), want.len(), "{e:#?}");
        for w in want {
            assert!(
                e.iter().any(|e| e.starts_with(w)),
                "missing {w:?} in {e:#?}"
            );
        }
    }

    #[test]
    fn a_budget_naming_the_old_unknown_category_is_told_it_is_now_frameless() {
        let old = "[[target]]\nname = \"t\"\n[target.budget.category]\nunknown = \"1 GiB\"\n";
        let e = errors(old);
        assert_eq!(e.len(), 1, "{e:#?}");
        assert!(
            e[0].contains("unknown category `unknown` (renamed `frameless`"),
            "{e:#?}"
        );
        assert!(errors(&old.replace("unknown =", "frameless =")).is_empty());
        // Under Mosaic's rules `unknown` was never a name: no rename to tell.
        let mosaic = format!("[defaults]\nrules = \"mosaic\"\n{old}");
        assert!(!errors(&mosaic)[0].contains("renamed"));
    }

    #[test]
    fn custom_categories_and_mosaic_names_are_known_category_names() {
        let ok = r#"
[defaults]
rules = "mosaic"
[categories]
hccl = "hccl"
[[target]]
name = "t"
[target.budget.category]
ACTIVATION = "1 GiB"
hccl = "1 MiB"
"#;
        assert_eq!(errors(ok), Vec::<String>::new());
        assert!(errors(&ok.replace("ACTIVATION", "activation"))[0].contains("unknown category"));
    }

    #[test]
    fn a_rules_file_adds_its_category_names_and_a_broken_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.toml"),
            "[categories]\nhccl = \"hccl\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.toml"), "[categories]\nx = \"(\"\n").unwrap();
        let text = "[defaults]\nrules = \"rules.toml\"\n[[target]]\nname = \"t\"\n[target.budget.category]\nhccl = \"1 GiB\"\nactivation = \"1 GiB\"\n";
        let b = parse(text, "memgate.toml", dir.path(), false).unwrap();
        assert_eq!(b.rules, Rules::File(dir.path().join("rules.toml")));
        let e = parse(
            &text.replace("rules.toml", "bad.toml"),
            "memgate.toml",
            dir.path(),
            false,
        )
        .unwrap_err();
        assert_eq!(e[0].loc.line, 2);
        assert_eq!(e[0].key, "defaults.rules");
    }

    #[test]
    fn category_errors_sort_among_the_budget_files_own() {
        let e = errors(
            "[[target]]\nname = 3\n[target.budget.category]\nnope = 1\n[target.budget]\noom-events = -1\n",
        );
        assert_eq!(e.len(), 3, "{e:#?}");
        assert!(e[0].starts_with("memgate.toml:2:8: `target.name`"));
        assert!(e[1].starts_with("memgate.toml:4:1: `target.budget.category.nope`: unknown"));
        assert!(e[2].starts_with("memgate.toml:6:14: `target.budget.oom-events`"));
    }

    #[test]
    fn the_compiled_rule_set_tries_the_custom_rules_first() {
        let text = "[categories]\nhccl = \"hccl\"\n[[target]]\nname = \"t\"\n";
        let (_, rules, _) =
            with_rules(budget::validate(text, "m.toml", Path::new(""), false), None).unwrap();
        assert_eq!(rules.category_of(&[("hccl_allreduce", "x.py")]), "hccl");
    }
}
