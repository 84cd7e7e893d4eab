//! What the bytes of a report's `categories` are grouped by (docs/figures.md#categories, #annotation-and-compile-context-groups):
//! the category rules on each allocation's stack, the innermost annotation
//! open at the allocation, or the allocation's `compile_context`. The one
//! replay of a device fills any of them: it asks [`Groups::classify`] the
//! group of each allocation.
//!
//! Grouped by annotation or compile context, a group is listed at a moment
//! once it exists there: from its first allocation (or from the start, for
//! the group holding memory live before recording), even when its bytes
//! fell back to 0. That is what Mosaic's `per_annotation_alloc_sum` /
//! `per_compile_context_alloc_sum` hold at its peak, so `at-dynamic-peak`
//! equals them key for key. The rule categories are always all listed.

use std::collections::HashMap;
use std::str::FromStr;

use crate::snapshot::{Action, Device, Snapshot};

use super::allocator::Origin;
use super::frameless::FramelessCategories;
use super::metadata::{AllocMeta, MetaKey, MAX_META_KEY};
use super::phases::attribute;
use super::replay::DeviceReplay;
use super::rules::RuleSet;
use super::stacks::StackInfo;
use super::types::Categories;

/// What a report's `categories` group the bytes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupBy {
    /// The category rules (`--rules`) on the allocation's stack.
    #[default]
    Category,
    /// The innermost annotation open at the allocation (`""` outside every
    /// one, and for memory live before recording).
    Annotation,
    /// The allocation's `compile_context` ([`NO_COMPILE_CONTEXT`] when it
    /// is missing or empty, and for memory live before recording).
    CompileContext,
    /// The allocation's `user_metadata` (or the first `annotate` note on
    /// it), whole or, with a key, that key's value in its JSON object
    /// (docs/figures.md#user-metadata-groups); `"N/A"` when
    /// it has none.
    UserMetadata(Option<MetaKey>),
}

impl FromStr for GroupBy {
    type Err = String;

    /// `category`, `annotation`, `compile-context`, `user-metadata` or
    /// `user-metadata.KEY`.
    fn from_str(s: &str) -> Result<GroupBy, String> {
        Ok(match s {
            "category" => GroupBy::Category,
            "annotation" => GroupBy::Annotation,
            "compile-context" | "compile_context" => GroupBy::CompileContext,
            "user-metadata" | "user_metadata" => GroupBy::UserMetadata(None),
            _ => match s
                .strip_prefix("user-metadata.")
                .or_else(|| s.strip_prefix("user_metadata."))
            {
                Some(key) => GroupBy::UserMetadata(Some(MetaKey::new(key).ok_or_else(|| {
                    format!("`{s}`: a user-metadata key is 1 to {MAX_META_KEY} bytes long")
                })?)),
                None => {
                    return Err(format!(
                        "`{s}`: give category, annotation, compile-context, user-metadata or \
                         user-metadata.KEY"
                    ))
                }
            },
        })
    }
}

impl GroupBy {
    /// `category`, `annotation` or `compile-context`; the last two are also
    /// the `rules` of the `categories` object they fill.
    pub fn id(self) -> &'static str {
        match self {
            GroupBy::Category => "category",
            GroupBy::Annotation => "annotation",
            GroupBy::CompileContext => "compile-context",
            GroupBy::UserMetadata(_) => "user-metadata",
        }
    }

    /// What the `categories` object's `rules` says: the id, and for a
    /// user-metadata key `user-metadata.KEY`.
    pub fn label(self) -> String {
        match self {
            GroupBy::UserMetadata(Some(k)) => format!("user-metadata.{}", k.as_str()),
            other => other.id().to_string(),
        }
    }
}

/// The compile-context group of an allocation without one (Mosaic's name;
/// memgate also puts an empty `compile_context` there, as docs/figures.md#annotation-and-compile-context-groups says).
pub const NO_COMPILE_CONTEXT: &str = "N/A";

/// How an allocation finds its group.
enum How {
    /// With the categories rules place frameless allocations in, and each
    /// allocation's user metadata (custom rules match it too).
    Rules(FramelessCategories, AllocMeta),
    /// `owner[i]`: the group of entry `i` (empty when the device has no
    /// annotation: every entry is in group 0).
    Annotation(Vec<u32>),
    /// `compile_context` string id → group; a missing or empty one is
    /// group 0.
    Context(HashMap<u32, u32>),
    /// `owner[i]`: the user-metadata group of entry `i`, and the label.
    Metadata(Vec<u32>, String),
}

/// The groups of one device, and which of them exist when.
pub(crate) struct Groups {
    how: How,
    names: Vec<String>,
    /// Per group: the entry of its first allocation.
    first_alloc: Vec<Option<usize>>,
    /// Per group: whether it holds memory live before recording.
    before_trace: Vec<bool>,
}

impl Groups {
    /// The groups of `device` under `by`; the rule categories come from
    /// `info`.
    pub(crate) fn new(
        snap: &Snapshot,
        device: Device,
        by: GroupBy,
        info: &mut StackInfo,
    ) -> Groups {
        let (how, names) = match by {
            GroupBy::Category => (
                How::Rules(
                    FramelessCategories::new(snap, device, info),
                    AllocMeta::new(snap.trace(device)),
                ),
                info.rules_categories().to_vec(),
            ),
            GroupBy::Annotation => {
                let att = attribute(snap, device);
                (How::Annotation(att.owner), att.names)
            }
            GroupBy::CompileContext => {
                let mut names = vec![NO_COMPILE_CONTEXT.to_string()];
                let mut by_name: HashMap<&str, u32> = HashMap::from([(NO_COMPILE_CONTEXT, 0)]);
                let mut ids = HashMap::new();
                for e in snap.trace(device) {
                    if e.action() != Action::Alloc || ids.contains_key(&e.context) {
                        continue;
                    }
                    let Some(ctx) = snap.context(&e).filter(|c| !c.is_empty()) else {
                        continue;
                    };
                    let g = *by_name.entry(ctx).or_insert_with(|| {
                        names.push(ctx.to_string());
                        #[expect(
                            clippy::cast_possible_truncation,
                            reason = "one name per distinct 32-bit context id at most"
                        )]
                        let g = (names.len() - 1) as u32;
                        g
                    });
                    ids.insert(e.context, g);
                }
                (How::Context(ids), names)
            }
            GroupBy::UserMetadata(key) => {
                let (owner, names) = super::metadata::groups(snap, device, key);
                (How::Metadata(owner, by.label()), names)
            }
        };
        let n = names.len();
        Groups {
            how,
            names,
            first_alloc: vec![None; n],
            before_trace: vec![false; n],
        }
    }

    /// Group names, by index.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The group (index into [`Groups::names`]) of `origin`, noting that
    /// the group exists from there on.
    pub(crate) fn classify(&mut self, origin: Origin<'_>, info: &mut StackInfo<'_>) -> usize {
        // A custom rule matching the allocation's metadata before any of
        // its frames decides first.
        let by_meta = match (&self.how, origin) {
            (How::Rules(_, metas), Origin::Alloc(i, e)) => {
                info.metadata_category(e.stack, metas.at(i))
            }
            _ => None,
        };
        let g = match (&self.how, origin) {
            _ if by_meta.is_some() => by_meta.unwrap_or_default(),
            // Memory from before recording whose stack says nothing.
            (How::Rules(..), Origin::BeforeTrace(s)) if info.frameless(s) => {
                info.pre_trace().unwrap_or_else(|| info.category(s))
            }
            // Made with no frames: by phase and lifetime where a rule fits.
            (How::Rules(placed, _), Origin::Alloc(i, e)) if info.frameless(e.stack) => {
                placed.get(i).unwrap_or_else(|| info.category(e.stack))
            }
            (How::Rules(..), o) => info.category(o.stack()),
            (_, Origin::BeforeTrace(_)) => 0,
            (How::Annotation(owner) | How::Metadata(owner, _), Origin::Alloc(i, _)) => {
                owner.get(i).map_or(0, |&g| g as usize)
            }
            (How::Context(ids), Origin::Alloc(_, e)) => {
                ids.get(&e.context).map_or(0, |&g| g as usize)
            }
        };
        match origin {
            Origin::Alloc(i, _) => {
                self.first_alloc[g].get_or_insert(i);
            }
            Origin::BeforeTrace(_) => self.before_trace[g] = true,
        }
        g
    }

    /// The `categories` object of the replay `r`: the rule categories all
    /// listed; annotation and compile-context groups where they exist (see
    /// the module comment).
    pub(crate) fn categories(&self, r: &DeviceReplay, set: &RuleSet) -> Categories {
        let rules_source = set.source();
        let rules = match self.how {
            How::Rules(..) => rules_source.to_string(),
            How::Annotation(_) => GroupBy::Annotation.id().to_string(),
            How::Context(_) => GroupBy::CompileContext.id().to_string(),
            How::Metadata(_, ref label) => label.clone(),
        };
        let all = matches!(self.how, How::Rules(..));
        // Groups existing once entry `upto` is applied (none applied: `None`).
        let exists = |g: usize, upto: Option<usize>, before: bool| {
            all || (before && self.before_trace[g])
                || self.first_alloc[g].is_some_and(|f| upto.is_some_and(|u| f <= u))
        };
        let named = |v: &[u64], upto: Option<usize>, before: bool| {
            self.names
                .iter()
                .zip(v)
                .enumerate()
                .filter(|&(g, _)| exists(g, upto, before))
                .map(|(_, (name, &b))| (name.clone(), b))
                .collect()
        };
        // Mosaic's sums are empty while its usage never rose above 0.
        let dyn_upto = (r.figures.dynamic_peak > 0)
            .then_some(r.peak_entry.dynamic_peak)
            .flatten();
        let alloc_upto = (!r.allocated_peak_at_start)
            .then_some(r.peak_entry.allocated_peak)
            .flatten();
        let end = r.figures.trace_entries.checked_sub(1);
        let at = |i: Option<u64>| i.map(crate::convert::index);
        Categories {
            rules,
            at_allocated_peak: named(&r.cats_at_allocated, at(alloc_upto), true),
            at_dynamic_peak: named(&r.cats_at_dynamic, at(dyn_upto), false),
            peaks: named(&r.cat_peaks, at(end), true),
            custom: if all {
                set.custom_names().to_vec()
            } else {
                Vec::new()
            },
        }
    }
}
