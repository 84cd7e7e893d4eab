//! The set matcher against the sequential matching it replaced
//! (docs/figures.md#custom-rules: the first rule, in order, whose regex
//! matches any frame's name or file), on a real snapshot with random
//! rules; and the matcher run once per distinct string, not per stack.

use std::collections::HashSet;
use std::path::PathBuf;

use regex::Regex;

use super::rules::RuleSet;
use super::stacks::{rule_frames, StackInfo};
use crate::patterns::PatternBudget;
use crate::snapshot::{self, Snapshot, StackId};

/// A real snapshot of the shared fixtures, or `None` (said loudly) when
/// `../shared` is not there.
fn real(name: &str) -> Option<Snapshot> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/real")
        .join(name);
    if !path.exists() {
        eprintln!(
            "SKIPPED: {} not found: the set-matcher test did not run",
            path.display()
        );
        return None;
    }
    Some(snapshot::load(&path).expect("the real fixture loads"))
}

/// xorshift64: reproducible rules without a random-number crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).expect("below n")
    }
}

/// `n` rules: pieces of the snapshot's own names and files (so that many
/// match, and several match one stack), anchored, case-folded or plain,
/// and a few that match nothing or everything; names repeat, so two rules
/// may share a category.
fn random_rules(rng: &mut Rng, strings: &[&str], n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let s = strings[rng.below(strings.len())];
            let chars: Vec<char> = s.chars().collect();
            let from = rng.below(chars.len().max(1));
            let len = 1 + rng.below(6);
            let piece: String = chars.iter().skip(from).take(len).collect();
            let piece = regex::escape(&piece);
            let pattern = match rng.below(7) {
                0 => format!("^{piece}"),
                1 => format!("{piece}$"),
                2 => format!("(?i){piece}"),
                3 => format!("{piece}|never-{i}"),
                4 => format!("no-such-frame-{i}"),
                5 if i % 11 == 0 => ".".to_string(),
                _ => piece,
            };
            (format!("c{}", rng.below(n / 2 + 1)), pattern)
        })
        .collect()
}

/// The category the rules give a stack by the sequential matching: each
/// rule in order against every frame, else the default rules.
fn sequential(rules: &[(String, Regex)], frames: &[(&str, &str)]) -> String {
    rules
        .iter()
        .find(|(_, rx)| frames.iter().any(|(n, f)| rx.is_match(n) || rx.is_match(f)))
        .map_or_else(
            || RuleSet::builtin_default().category_of(frames).to_string(),
            |(name, _)| name.clone(),
        )
}

fn rule_set(pairs: &[(String, String)]) -> RuleSet {
    let mut budget = PatternBudget::default();
    let rules = pairs
        .iter()
        .map(|(n, p)| budget.rule(n, p, "test").expect("a small rule"))
        .collect();
    RuleSet::with_custom(rules, RuleSet::builtin_default()).expect("within the limits")
}

#[test]
fn the_set_matcher_gives_every_stack_of_a_real_snapshot_the_sequential_category() {
    let Some(snap) = real("muduard_layoutediting_list.pkl") else {
        return;
    };
    let stacks: Vec<StackId> = (0..u32::try_from(snap.stack_count()).unwrap())
        .map(StackId::from_raw)
        .collect();
    let strings: Vec<&str> = stacks
        .iter()
        .flat_map(|&s| rule_frames(&snap, s))
        .flat_map(|(n, f)| [n, f])
        .collect();
    assert!(strings.len() > 100, "the fixture has frames");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut custom_wins = 0;
    for n in [1, 3, 20, 200] {
        let pairs = random_rules(&mut rng, &strings, n);
        let set = rule_set(&pairs);
        let compiled: Vec<(String, Regex)> = pairs
            .iter()
            .map(|(n, p)| (n.clone(), Regex::new(p).unwrap()))
            .collect();
        let mut info = StackInfo::new(&snap, &set);
        for &stack in &stacks {
            let frames = rule_frames(&snap, stack);
            let want = sequential(&compiled, &frames);
            assert_eq!(set.category_of(&frames), want, "rules {pairs:?}");
            let cached = info.category(stack);
            assert_eq!(set.categories()[cached], want, "rules {pairs:?}");
            custom_wins += usize::from(pairs.iter().any(|(n, _)| *n == want));
        }
    }
    assert!(custom_wins > stacks.len(), "the random rules decide stacks");
}

#[test]
fn each_distinct_name_and_file_is_matched_once_however_many_stacks_share_it() {
    let Some(snap) = real("muduard_layoutediting_list.pkl") else {
        return;
    };
    let set = rule_set(&[
        ("opt".into(), "optim".into()),
        ("fwd".into(), "forward".into()),
    ]);
    let mut info = StackInfo::new(&snap, &set);
    let mut distinct = HashSet::new();
    let mut frames = 0;
    for i in 0..u32::try_from(snap.stack_count()).unwrap() {
        let stack = StackId::from_raw(i);
        info.category(stack);
        info.category(stack);
        for &f in snap.stack(stack) {
            frames += 2;
            distinct.insert(snap.frame(f).name);
            distinct.insert(snap.frame(f).filename);
        }
    }
    assert!(
        frames > 2 * distinct.len(),
        "stacks share frames in the fixture"
    );
    assert_eq!(info.matched(), distinct.len());
}
