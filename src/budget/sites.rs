//! `[sites]`: what counts as the user's code and where the project's own
//! files are named from (docs/figures.md#sites), each value checked at its
//! own position. The budget keeps them as text: `check` builds the site
//! rule from them where budget and analysis meet.

use toml::Value;

use super::raw::RawSites;
use super::validate::Validator;

/// `[sites]` as checked: `project-root` and the `user-code` globs.
#[derive(Debug, Clone, Default)]
pub struct Sites {
    pub project_root: Option<String>,
    pub user_code: Vec<String>,
}

/// Whether a `project-root` names at least one folder.
fn names_a_folder(root: &str) -> bool {
    root.split(['/', '\\'])
        .any(|p| !p.is_empty() && p != "." && p != "..")
}

impl Validator<'_> {
    /// The `[sites]` values; a wrong one is reported and left out.
    pub(super) fn sites(&mut self, raw: Option<&RawSites>) -> Sites {
        let mut sites = Sites::default();
        let Some(raw) = raw else {
            return sites;
        };
        if let Some(leaf) = &raw.project_root {
            if let Some(s) = self.string(leaf, "sites.project-root") {
                if names_a_folder(&s) {
                    sites.project_root = Some(s);
                } else {
                    let msg = format!("{s:?} names no folder");
                    self.err(leaf.span(), "sites.project-root", msg);
                }
            }
        }
        let Some(list) = &raw.user_code else {
            return sites;
        };
        let Some(items) = &list.items else {
            let found = list.whole.get_ref().type_str();
            let msg = format!("must be a list of globs, e.g. [\"myproject/*\"], not {found}");
            self.err(list.whole.span(), "sites.user-code", msg);
            return sites;
        };
        for item in items {
            let glob = match item.get_ref() {
                Value::String(s) => glob::Pattern::new(&s.replace('\\', "/"))
                    .map(|_| s.clone())
                    .map_err(|e| format!("{s:?} is not a glob: {}", e.msg)),
                other => Err(format!(
                    "must be a glob (a string), not {}",
                    other.type_str()
                )),
            };
            match glob {
                Ok(g) => sites.user_code.push(g),
                Err(m) => self.err(item.span(), "sites.user-code", m),
            }
        }
        sites
    }
}
