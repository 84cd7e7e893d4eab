//! Per-stack facts computed once per snapshot and cached by `StackId`: the
//! category under a rule set and the allocation site (docs/figures.md#stacks-and-sites).

use std::collections::HashMap;

use crate::snapshot::{FrameId, Snapshot, StackId};

use super::rules::RuleSet;
use super::sites::{is_python, SiteKeys};

const UNSET: u32 = u32::MAX;
/// A string no custom rule matches.
const NONE: u32 = u32::MAX - 1;

/// Site of a stack whose frames name none (docs/figures.md#memory-with-no-story).
pub(crate) const UNKNOWN_SITE: &str = crate::vocab::NoStory::UnknownSite.id();

/// Lazily filled category and site of every stack of one snapshot.
pub(crate) struct StackInfo<'a> {
    snap: &'a Snapshot,
    rules: &'a RuleSet,
    category: Vec<u32>,
    /// The default rules' category of each frame by frame id (`NONE`: no
    /// row matches it), matched once however many stacks hold the frame.
    frame_category: Vec<u32>,
    /// The first custom rule matching each string of the snapshot (a
    /// frame's name or file), by string id: each is matched once, however
    /// many frames and stacks share it. Empty without custom rules.
    first_custom: Vec<u32>,
    /// How many strings were matched against the custom rules.
    matched: usize,
    site: Vec<u32>,
    site_names: Vec<String>,
    /// Each site's file as recorded (of the first stack with that site).
    site_files: Vec<Option<String>>,
    site_ids: HashMap<String, u32>,
    /// The snapshot's site keys and whether each file (by string id) is
    /// the user's, made on the first site asked for.
    keys: Option<Sites<'a>>,
}

/// The site rule applied to one snapshot's files.
struct Sites<'a> {
    keys: SiteKeys<'a>,
    user: HashMap<u32, bool>,
}

impl<'a> Sites<'a> {
    fn new(snap: &'a Snapshot, rules: &'a RuleSet) -> Sites<'a> {
        let mut files: Vec<u32> = snap.frames.iter().map(|f| f.filename).collect();
        files.sort_unstable();
        files.dedup();
        let keys = SiteKeys::new(rules.sites(), files.iter().map(|&id| snap.str(id)));
        let user = files
            .iter()
            .map(|&id| {
                let file = snap.str(id);
                (id, is_python(file) && keys.is_user(file))
            })
            .collect();
        Sites { keys, user }
    }

    /// `function (portable file)` of the innermost frame of the user's
    /// code; else of the innermost Python frame; else [`UNKNOWN_SITE`]; with
    /// that frame's file as recorded. Names are kept as the snapshot has
    /// them: renderers escape them.
    fn site_of(&self, snap: &Snapshot, frames: &[FrameId]) -> (String, Option<String>) {
        let python = || {
            frames
                .iter()
                .copied()
                .filter(|&f| is_python(snap.frame_file(f)))
        };
        let pick = python()
            .find(|&f| self.user.get(&snap.frame(f).filename) == Some(&true))
            .or_else(|| python().next());
        match pick {
            Some(f) => {
                let file = snap.frame_file(f);
                let name = format!("{} ({})", snap.frame_name(f), self.keys.key(file));
                (name, Some(file.to_string()))
            }
            None => (UNKNOWN_SITE.to_string(), None),
        }
    }
}

impl<'a> StackInfo<'a> {
    /// The rule set the categories come from.
    pub(crate) fn rules(&self) -> &'a RuleSet {
        self.rules
    }

    pub(crate) fn new(snap: &'a Snapshot, rules: &'a RuleSet) -> StackInfo<'a> {
        let n = snap.stack_count();
        StackInfo {
            snap,
            rules,
            category: vec![UNSET; n],
            frame_category: if rules.by_frame() {
                vec![UNSET; snap.frames.len()]
            } else {
                Vec::new()
            },
            first_custom: if rules.has_custom() {
                vec![UNSET; snap.strings.len()]
            } else {
                Vec::new()
            },
            matched: 0,
            site: vec![UNSET; n],
            site_names: Vec::new(),
            site_files: Vec::new(),
            site_ids: HashMap::new(),
            keys: None,
        }
    }

    pub(crate) fn rules_categories(&self) -> &[String] {
        self.rules.categories()
    }

    /// Category index of memory live since before recording began, when
    /// the rules have one (see [`RuleSet::pre_trace`]).
    pub(crate) fn pre_trace(&self) -> Option<usize> {
        self.rules.pre_trace()
    }

    /// Whether a stack has no frame at all.
    pub(crate) fn frameless(&self, stack: StackId) -> bool {
        self.snap.stack(stack).is_empty()
    }

    /// Category index (into `rules.categories()`) of a stack.
    pub(crate) fn category(&mut self, stack: StackId) -> usize {
        let cached = self.category[stack.index()];
        if cached == UNSET {
            let custom = self.custom_rule(stack);
            let category = if custom.is_none() && self.rules.by_frame() {
                self.by_frames(stack)
            } else {
                let frames = if custom.is_some() {
                    Vec::new()
                } else {
                    rule_frames(self.snap, stack)
                };
                self.rules.classify_after(custom, &frames)
            };
            let slot = &mut self.category[stack.index()];
            // A category index past the cache's range is computed each time.
            *slot = u32::try_from(category).unwrap_or(UNSET);
            return category;
        }
        cached as usize
    }

    /// The default rules' category of a stack without a custom rule: that
    /// of its innermost frame a row matches, as [`RuleSet::classify_after`]
    /// finds it, each frame matched once.
    fn by_frames(&mut self, stack: StackId) -> usize {
        let snap = self.snap;
        let frames = snap.stack(stack);
        for &f in frames {
            if let Some(c) = self.frame_category_of(f) {
                return c;
            }
        }
        self.rules.fallback(!frames.is_empty())
    }

    fn frame_category_of(&mut self, f: FrameId) -> Option<usize> {
        let (snap, rules) = (self.snap, self.rules);
        cached_match(&mut self.frame_category[f.index()], || {
            let frame = snap.frame(f);
            rules.frame_category(snap.str(frame.name), snap.str(frame.filename))
        })
    }

    /// The category a custom rule gives an allocation by its user metadata
    /// string `meta` (docs/figures.md#custom-rules): when a rule matches the
    /// metadata and no earlier rule matches a frame of `stack` (which
    /// [`StackInfo::category`] already decides). `None` otherwise.
    pub(crate) fn metadata_category(&mut self, stack: StackId, meta: u32) -> Option<usize> {
        if meta == crate::snapshot::NO_META || self.first_custom.is_empty() {
            return None;
        }
        let by_meta = self.first_custom_of(meta)?;
        match self.custom_rule(stack) {
            Some(by_frame) if by_frame <= by_meta => None,
            _ => Some(self.rules.classify_after(Some(by_meta), &[])),
        }
    }

    /// The first custom rule matching any frame of `stack` (the least of
    /// its names' and files' first rules; see [`RuleSet::classify`]).
    fn custom_rule(&mut self, stack: StackId) -> Option<usize> {
        if self.first_custom.is_empty() {
            return None;
        }
        let mut best: Option<usize> = None;
        for &f in self.snap.stack(stack) {
            let frame = self.snap.frame(f);
            for s in [frame.name, frame.filename] {
                if let Some(h) = self.first_custom_of(s) {
                    best = Some(best.map_or(h, |b| b.min(h)));
                }
            }
        }
        best
    }

    /// The first custom rule matching string `s`, matched once.
    fn first_custom_of(&mut self, s: u32) -> Option<usize> {
        let (snap, rules, matched) = (self.snap, self.rules, &mut self.matched);
        cached_match(&mut self.first_custom[s as usize], || {
            *matched += 1;
            rules.first_custom(snap.str(s))
        })
    }

    /// How many distinct strings were matched against the custom rules
    /// (what a test counts).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    pub(crate) fn matched(&self) -> usize {
        self.matched
    }

    /// Site id of a stack; its name is [`StackInfo::site_name`].
    pub(crate) fn site(&mut self, stack: StackId) -> u32 {
        let cached = self.site[stack.index()];
        if cached != UNSET {
            return cached;
        }
        let (snap, rules) = (self.snap, self.rules);
        let (name, file) = self
            .keys
            .get_or_insert_with(|| Sites::new(snap, rules))
            .site_of(snap, snap.stack(stack));
        let id = self.named_site(name, file);
        self.site[stack.index()] = id;
        id
    }

    /// Site id of a site name, with its file as recorded (the names of
    /// memory with no story are sites of no stack of their own, and no file).
    pub(crate) fn named_site(&mut self, name: String, file: Option<String>) -> u32 {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "one site per distinct 32-bit stack id at most"
        )]
        let next = self.site_names.len() as u32;
        let id = *self.site_ids.entry(name.clone()).or_insert(next);
        if id == next {
            self.site_names.push(name);
            self.site_files.push(file);
        }
        id
    }

    pub(crate) fn site_name(&self, id: u32) -> &str {
        &self.site_names[id as usize]
    }

    /// The file of site `id` as the snapshot recorded it.
    pub(crate) fn site_file(&self, id: u32) -> Option<&str> {
        self.site_files[id as usize].as_deref()
    }
}

/// A match kept in `slot` (`UNSET`: not matched yet, `NONE`: nothing
/// matches), made by `find` the first time; an index past the slot's range
/// is matched each time.
fn cached_match(slot: &mut u32, find: impl FnOnce() -> Option<usize>) -> Option<usize> {
    if *slot == UNSET {
        let hit = find();
        *slot = hit.map_or(NONE, |h| {
            u32::try_from(h).ok().filter(|&h| h < NONE).unwrap_or(UNSET)
        });
        return hit;
    }
    (*slot != NONE).then_some(*slot as usize)
}

/// A stack's (function, file) pairs for the rules, innermost first, each
/// pair once (its first, innermost, place). Every rule asks whether any
/// frame matches or which frame matches first, so dropping repeats
/// changes no answer, and a frame a file repeats a million times (memo
/// or `DUP`, two bytes each) is matched once, not a million times.
pub(crate) fn rule_frames(snap: &Snapshot, stack: StackId) -> Vec<(&str, &str)> {
    let mut seen: std::collections::HashSet<_, foldhash::fast::RandomState> = Default::default();
    snap.stack(stack)
        .iter()
        .map(|&f| snap.frame(f))
        .filter(|f| seen.insert((f.name, f.filename)))
        .map(|f| (snap.str(f.name), snap.str(f.filename)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each frame matched once gives every stack the category that
    /// matching the stack's frames in order gives it.
    #[test]
    fn frames_matched_once_give_each_stack_the_category_of_its_frames_in_order() {
        let rules = RuleSet::builtin_default();
        assert!(rules.by_frame());
        let mut stacks = 0;
        for name in [
            "examples/snapshots/rank0.pickle",
            "tests/fixtures/synthetic/v2_11_extras.pickle",
            "tests/fixtures/synthetic/oom_fragmented.pickle",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
            let bytes = std::fs::read(&path).unwrap();
            let snap = crate::snapshot::load_bytes(&path, &bytes).unwrap();
            let mut info = StackInfo::new(&snap, &rules);
            for k in 0..snap.stack_count() {
                let stack = StackId::try_from(k).unwrap();
                let want = rules.classify_after(None, &rule_frames(&snap, stack));
                assert_eq!(info.category(stack), want, "{name}: stack {k}");
                stacks += 1;
            }
        }
        assert!(
            stacks > 20,
            "the fixtures hold stacks to compare ({stacks})"
        );
    }
}
