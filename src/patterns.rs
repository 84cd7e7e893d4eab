//! Every regex a user writes (category, phase and iteration rules from a
//! budget, a rules file, `--categories`, the Python API or an MCP call; a
//! target's `key`; a rank stage's pattern) is compiled here, under a budget
//! spent before the work starts (docs/figures.md#limits-on-rules): a limit
//! on what one regex may compile to, on how many there are and on what they
//! compile to together. A budget file is hostile input, and the regex
//! crate's own limit (10 MiB a regex, any number of them) let 60 rules of
//! 20 bytes hold 880 MB.

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_automata::meta;

/// The most one regex may compile to (its automata, as the regex engine
/// counts them); also the compiler's own limit, so a larger one stops
/// being built as soon as it passes it.
pub const RULE_BYTES: usize = 1 << 20;
/// The most regexes one budget, rules file or `--categories` may hold, and
/// one rule set with all of them together.
pub const MAX_RULES: usize = 1024;
/// The most they may compile to together.
pub const TOTAL_BYTES: usize = 8 << 20;
/// The longest regex text compiled: parsing holds far more than the text
/// (8 MB of text held 780 MB before a byte was compiled), so a longer one
/// is refused unread. A regex's text counts toward the total as well.
pub const PATTERN_CHARS: usize = 16 << 10;
/// The lazy DFA's cache of one regex (per thread matching with it).
const RULE_CACHE: usize = 256 << 10;
/// The lazy DFA's cache of the set matcher over all rules.
const SET_CACHE: usize = 2 << 20;

/// One compiled user regex, and what it costs.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The name it is written under (category or phase name, a key).
    pub name: String,
    pub regex: Regex,
    /// What it compiled to, in bytes.
    pub bytes: usize,
    /// Where it is written: `file:line:col`, or the flag or argument.
    pub at: String,
}

/// What a run of regexes has spent of the limits so far.
#[derive(Debug, Default, Clone)]
pub struct PatternBudget {
    /// Regexes tried, compiled or not.
    count: usize,
    /// What they compiled to; a regex refused as too large counts as
    /// [`RULE_BYTES`], what finding out cost.
    bytes: usize,
    /// Whether a regex was refused for the count or the total: every
    /// later one would be too.
    exhausted: bool,
}

/// MiB with one decimal, for the messages.
fn mib(bytes: usize) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a size shown to one decimal place"
    )]
    let m = bytes as f64 / f64::from(1u32 << 20);
    format!("{m:.1} MiB")
}

impl PatternBudget {
    /// `pattern` compiled if the limits allow it, and what it compiled to;
    /// else why not, one line without the rule's name or place (the caller
    /// adds them). The count and the total are checked before anything is
    /// compiled, the size as the compiler goes.
    pub fn compile(&mut self, pattern: &str) -> Result<(Regex, usize), String> {
        if self.count >= MAX_RULES {
            self.exhausted = true;
            return Err(format!(
                "one regex more than the {MAX_RULES} that may be given together"
            ));
        }
        if self.bytes >= TOTAL_BYTES {
            self.exhausted = true;
            return Err(format!(
                "not compiled: the regexes before it spent the {} they may compile to \
                 together (a refused one counts as {})",
                mib(TOTAL_BYTES),
                mib(RULE_BYTES)
            ));
        }
        self.count += 1;
        if pattern.len() > PATTERN_CHARS {
            return Err(format!(
                "is {} bytes long, more than the {PATTERN_CHARS} a regex may be",
                pattern.len()
            ));
        }
        let bytes = match measure(pattern) {
            Ok(b) if b + pattern.len() <= RULE_BYTES => b + pattern.len(),
            Ok(b) => return Err(self.too_large(b)),
            Err(Measured::TooLarge) => return Err(self.too_large(0)),
            Err(Measured::Invalid(e)) => return Err(e),
        };
        if self.bytes + bytes > TOTAL_BYTES {
            self.exhausted = true;
            return Err(over_total(self.bytes + bytes));
        }
        let regex = bounded(pattern).build().map_err(|e| not_a_regex(&e))?;
        self.bytes += bytes;
        Ok((regex, bytes))
    }

    /// Whether a regex was refused for the count or the total; a caller
    /// stops there (every later regex would be refused the same way).
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    fn too_large(&mut self, bytes: usize) -> String {
        self.bytes += RULE_BYTES;
        too_large(bytes)
    }

    /// A rule compiled under the budget, or why not (as
    /// [`PatternBudget::compile`]; the caller names the rule and its place).
    pub fn rule(&mut self, name: &str, pattern: &str, at: &str) -> Result<Rule, String> {
        let (regex, bytes) = self.compile(pattern)?;
        Ok(Rule {
            name: name.to_string(),
            regex,
            bytes,
            at: at.to_string(),
        })
    }
}

/// The first of `rules` past the limits on how many there are and on what
/// they compile to together, as its refusal (`at: name: why`). Each source
/// of rules was checked on its own; this checks them together, as one set
/// matches them.
pub fn check_together<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> Result<(), String> {
    let mut total = PatternBudget::default();
    for r in rules {
        if total.count >= MAX_RULES {
            return Err(format!(
                "{}: {}: one rule more than the {MAX_RULES} that may be given together \
                 (counting every source of rules)",
                r.at, r.name
            ));
        }
        if total.bytes + r.bytes > TOTAL_BYTES {
            return Err(format!(
                "{}: {}: with the rules before it (every source) compiles to {}, more than \
                 the {} they may compile to together",
                r.at,
                r.name,
                mib(total.bytes + r.bytes),
                mib(TOTAL_BYTES)
            ));
        }
        total.count += 1;
        total.bytes += r.bytes;
    }
    Ok(())
}

fn too_large(bytes: usize) -> String {
    let size = if bytes > RULE_BYTES {
        format!(" ({})", mib(bytes))
    } else {
        String::new()
    };
    format!(
        "compiles to more than the {} one regex may{size}; write a shorter repetition or a \
         narrower class (`[a-z]` rather than `\\w`)",
        mib(RULE_BYTES),
    )
}

fn over_total(bytes: usize) -> String {
    format!(
        "with the regexes before it compiles to {}, more than the {} they may together",
        mib(bytes),
        mib(TOTAL_BYTES)
    )
}

fn not_a_regex(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(_) => too_large(0),
        other => format!(
            "not a valid regex: {}",
            other.to_string().lines().last().unwrap_or("")
        ),
    }
}

/// Why [`measure`] found no size.
enum Measured {
    TooLarge,
    Invalid(String),
}

/// What `pattern` compiles to, as the engine counts it (its forward and
/// reverse automata and the engines built on them); the build stops at
/// [`RULE_BYTES`].
fn measure(pattern: &str) -> Result<usize, Measured> {
    let config = meta::Config::new()
        .nfa_size_limit(Some(RULE_BYTES))
        .hybrid_cache_capacity(RULE_CACHE);
    match meta::Regex::builder().configure(config).build(pattern) {
        Ok(r) => Ok(r.memory_usage()),
        Err(e) if e.size_limit().is_some() => Err(Measured::TooLarge),
        // The syntax error as the regex crate words it (a parse only: the
        // compiler was never reached).
        Err(_) => Err(Measured::Invalid(match regex_syntax_error(pattern) {
            Some(e) => not_a_regex(&e),
            None => "not a valid regex".into(),
        })),
    }
}

fn regex_syntax_error(pattern: &str) -> Option<regex::Error> {
    bounded(pattern).build().err()
}

/// The builder of one user regex, with the limits applied.
fn bounded(pattern: &str) -> RegexBuilder {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(RULE_BYTES).dfa_size_limit(RULE_CACHE);
    b
}

/// One matcher over every rule: which of them match a string, in one pass
/// over it. The rules were checked under [`TOTAL_BYTES`] together; the set
/// compiles to about their sum, so twice that is its limit.
pub fn set_of<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<RegexSet, String> {
    RegexSetBuilder::new(patterns)
        .size_limit(2 * TOTAL_BYTES)
        .dfa_size_limit(SET_CACHE)
        .build()
        .map_err(|e| not_a_regex(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_that_compiles_large_is_refused_before_the_next_is_compiled() {
        let mut b = PatternBudget::default();
        let e = b.rule("x", r"\w{200}x0", "f.toml:3:1").unwrap_err();
        assert!(e.starts_with("compiles to more than the 1.0 MiB"), "{e}");
        assert!(b.rule("y", "hccl", "f.toml:4:1").is_ok());
        // The refused rule counts, and costs what finding out cost.
        assert_eq!(b.count, 2);
        assert!(b.bytes > RULE_BYTES, "{}", b.bytes);
        assert!(!b.exhausted());
    }

    #[test]
    fn rules_refused_as_too_large_use_up_the_total_so_compiling_stops() {
        let mut b = PatternBudget::default();
        let tries = (0..MAX_RULES)
            .take_while(|i| {
                let _ = b.rule("x", &format!(r"\w{{200}}{i}"), "f");
                !b.exhausted()
            })
            .count();
        // Eight refusals spend the 8 MiB: the ninth is not compiled.
        assert_eq!(tries, TOTAL_BYTES / RULE_BYTES);
    }

    #[test]
    fn the_rule_past_the_count_is_refused_by_name() {
        let mut b = PatternBudget::default();
        for i in 0..MAX_RULES {
            b.rule(&format!("r{i}"), &format!("lit{i}"), "x").unwrap();
        }
        let e = b.rule("last", "lit", "f:9:1").unwrap_err();
        assert!(e.starts_with("one regex more than the 1024"), "{e}");
    }

    #[test]
    fn rules_each_small_enough_are_refused_once_they_pass_the_total() {
        let mut b = PatternBudget::default();
        // About 0.5 MiB each: fine alone, too much by the 17th or so.
        let refused = (0..64)
            .map(|i| b.rule(&format!("r{i}"), &format!(r"\w{{9}}{i}"), "x"))
            .position(|r| r.is_err())
            .expect("the total stops them");
        assert!((4..40).contains(&refused), "{refused}");
        let e = b.rule("again", r"\w{9}", "x").unwrap_err();
        assert!(e.contains("together"), "{e}");
    }

    #[test]
    fn a_long_regex_is_refused_unparsed_and_long_literals_fill_the_total() {
        let mut b = PatternBudget::default();
        let e = b.compile(&"ab".repeat(PATTERN_CHARS)).unwrap_err();
        assert!(e.contains("bytes long, more than the 16384"), "{e}");
        let refused = (0..MAX_RULES)
            .position(|i| b.compile(&format!("{i:05}{}", "ab".repeat(8000))).is_err())
            .expect("the total stops them");
        assert!((1..40).contains(&refused), "{refused}");
        assert!(b.exhausted());
    }

    #[test]
    fn a_syntax_error_reads_as_the_regex_crate_words_it() {
        let e = PatternBudget::default().compile("(").unwrap_err();
        assert!(e.starts_with("not a valid regex: "), "{e}");
    }

    #[test]
    fn rules_from_several_sources_are_checked_together() {
        let mut a = PatternBudget::default();
        let mut b = PatternBudget::default();
        let big = |b: &mut PatternBudget, i| b.rule(&format!("r{i}"), &format!(r"\w{{9}}{i}"), "s");
        // Ten rules of about 0.5 MiB from each: each source within the
        // limits, the two together past them.
        let mut all: Vec<Rule> = (0..10).map(|i| big(&mut a, i).unwrap()).collect();
        all.extend((10..20).map(|i| big(&mut b, i).unwrap()));
        assert!(check_together(&all[..10]).is_ok());
        let e = check_together(&all).unwrap_err();
        assert!(e.starts_with("s: r1") && e.contains("every source"), "{e}");
    }
}
