//! `[sites]`: what counts as the user's code and where the project's own
//! files are named from (docs/figures.md#stacks-and-sites), each value
//! checked at its own position.

use toml::Value;

use super::raw::RawSites;
use super::validate::Validator;
use crate::analysis::SiteRule;

impl Validator<'_> {
    /// The site rule `[sites]` writes; the default when absent or wrong
    /// (every problem is reported).
    pub(super) fn sites(&mut self, raw: Option<&RawSites>) -> SiteRule {
        let Some(raw) = raw else {
            return SiteRule::default();
        };
        let root = raw.project_root.as_ref().and_then(|leaf| {
            let s = self.string(leaf, "sites.project-root")?;
            match SiteRule::new(Some(&s), &[]) {
                Ok(_) => Some(s),
                Err(e) => {
                    self.err(leaf.span(), "sites.project-root", e.to_string());
                    None
                }
            }
        });
        let mut globs = Vec::new();
        if let Some(list) = &raw.user_code {
            let Some(items) = &list.items else {
                let found = list.whole.get_ref().type_str();
                let msg = format!("must be a list of globs, e.g. [\"myproject/**\"], not {found}");
                self.err(list.whole.span(), "sites.user-code", msg);
                return SiteRule::default();
            };
            for item in items {
                let glob = match item.get_ref() {
                    Value::String(s) => SiteRule::new(None, std::slice::from_ref(s))
                        .map(|_| s.clone())
                        .map_err(|e| e.to_string()),
                    other => Err(format!("must be a glob (a string), not {}", other.type_str())),
                };
                match glob {
                    Ok(g) => globs.push(g),
                    Err(m) => self.err(item.span(), "sites.user-code", m),
                }
            }
        }
        SiteRule::new(root.as_deref(), &globs).unwrap_or_default()
    }
}
