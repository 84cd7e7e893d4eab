//! A path pattern of CODEOWNERS (gitignore's syntax as GitHub and GitLab
//! read it), matched against a site's file (docs/figures.md#owners).
//!
//! `*` and `?` stay within one folder, `**` as a whole segment spans any
//! number of folders, `\` makes the next character literal. A pattern with
//! a `/` before its end is anchored at the root; one without matches at
//! any depth. A pattern names a file or a folder: a file below a matching
//! folder matches too, and a trailing `/` matches folders only. Negation
//! (`!`) and character ranges (`[…]`) are refused, as GitHub refuses them.
//!
//! Matching is greedy with one back-up point per level, so each match
//! costs at most pattern length × path length steps; every step is taken
//! from a [`Steps`] budget, so a hostile pattern list ends in time.

/// Matching steps left to a whole run.
#[derive(Debug)]
pub(crate) struct Steps(u64);

impl Steps {
    pub(crate) fn new(steps: u64) -> Steps {
        Steps(steps)
    }

    /// One step; `None` when the budget is spent.
    fn take(&mut self) -> Option<()> {
        self.0 = self.0.checked_sub(1)?;
        Some(())
    }
}

/// One character of a segment's glob.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `*`: any run of characters within a folder name.
    Star,
    /// `?`: one character.
    One,
    Lit(char),
}

/// One `/`-separated segment of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    /// `**`: any number of folders, none included.
    AnyDepth,
    Glob(Vec<Tok>),
}

/// A compiled pattern: its segments, with the folders below it already
/// appended (`/**`, or `/*/**` for a folder-only pattern).
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    segs: Vec<Seg>,
}

impl Pattern {
    /// The pattern as written (without the line's whitespace), or why it
    /// cannot be one.
    pub(crate) fn parse(text: &str) -> Result<Pattern, String> {
        if text.starts_with('!') {
            return Err(format!(
                "{text:?}: negation (`!`) is not supported in CODEOWNERS"
            ));
        }
        let toks = tokens(text)?;
        let dir_only = toks.last() == Some(&Some('/'));
        let anchored = toks.first() == Some(&Some('/'))
            || toks
                .iter()
                .rev()
                .skip_while(|t| **t == Some('/'))
                .any(|t| *t == Some('/'));
        let mut segs: Vec<Seg> = Vec::new();
        for seg in toks.split(|t| *t == Some('/')).filter(|s| !s.is_empty()) {
            segs.push(segment(seg));
        }
        if segs.is_empty() {
            return Err(format!("{text:?} names no file or folder"));
        }
        if !anchored {
            segs.insert(0, Seg::AnyDepth);
        }
        if dir_only {
            segs.push(Seg::Glob(vec![Tok::Star]));
        }
        segs.push(Seg::AnyDepth);
        Ok(Pattern { segs })
    }

    /// Whether `file` (`/`-separated, as sites name files) matches;
    /// `None` when the step budget ran out first.
    pub(crate) fn matches(&self, file: &str, steps: &mut Steps) -> Option<bool> {
        let parts: Vec<&str> = file.split('/').collect();
        greedy(&self.segs, &parts, steps, |s, p, steps| match s {
            Seg::AnyDepth => Some(true),
            Seg::Glob(g) => glob(g, p, steps),
        })
    }
}

/// The pattern's characters, `None` for `*` and `?`'s special meaning
/// kept apart from their escaped, literal selves: `Some(c)` is literal
/// (or `/`), wildcards are written as `None` placeholders by [`segment`].
fn tokens(text: &str) -> Result<Vec<Option<char>>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                // An escaped character is literal: kept as a marker pair.
                Some(e) => {
                    out.push(None);
                    out.push(Some(e));
                }
                None => return Err(format!("{text:?} ends in a lone `\\`")),
            },
            '[' | ']' => {
                return Err(format!(
                    "{text:?}: character ranges (`[…]`) are not supported in CODEOWNERS"
                ))
            }
            c => out.push(Some(c)),
        }
    }
    Ok(out)
}

/// One segment's tokens: `None` marks the next character as escaped.
fn segment(seg: &[Option<char>]) -> Seg {
    if seg == [Some('*'), Some('*')] {
        return Seg::AnyDepth;
    }
    let mut toks = Vec::new();
    let mut escaped = false;
    for t in seg {
        match (t, escaped) {
            (None, _) => escaped = true,
            (Some(c), true) => {
                toks.push(Tok::Lit(*c));
                escaped = false;
            }
            // `**` inside a name is one `*`.
            (Some('*'), false) if toks.last() == Some(&Tok::Star) => {}
            (Some('*'), false) => toks.push(Tok::Star),
            (Some('?'), false) => toks.push(Tok::One),
            (Some(c), false) => toks.push(Tok::Lit(*c)),
        }
    }
    Seg::Glob(toks)
}

/// A folder name against a segment's glob.
fn glob(g: &[Tok], name: &str, steps: &mut Steps) -> Option<bool> {
    let chars: Vec<char> = name.chars().collect();
    greedy(g, &chars, steps, |t, c, _| {
        Some(match t {
            Tok::Star => true,
            Tok::One => true,
            Tok::Lit(l) => l == c,
        })
    })
}

/// Something a pattern element is: a wildcard over any run of items
/// (`*`, `**`), or one that takes exactly one item.
trait Wild {
    fn is_run(&self) -> bool;
}

impl Wild for Tok {
    fn is_run(&self) -> bool {
        *self == Tok::Star
    }
}

impl Wild for Seg {
    fn is_run(&self) -> bool {
        *self == Seg::AnyDepth
    }
}

/// Wildcard matching with one back-up point: a run wildcard takes as few
/// items as it can and one more each time what follows fails. `one`
/// matches a single element against a single item.
fn greedy<P: Wild, T>(
    pat: &[P],
    items: &[T],
    steps: &mut Steps,
    one: impl Fn(&P, &T, &mut Steps) -> Option<bool>,
) -> Option<bool> {
    let (mut pi, mut ti) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while ti < items.len() {
        steps.take()?;
        if let Some(p) = pat.get(pi) {
            if p.is_run() {
                back = Some((pi, ti));
                pi += 1;
                continue;
            }
            if one(p, &items[ti], steps)? {
                pi += 1;
                ti += 1;
                continue;
            }
        }
        let Some((bp, bt)) = back else {
            return Some(false);
        };
        back = Some((bp, bt + 1));
        pi = bp + 1;
        ti = bt + 1;
    }
    while pat.get(pi).is_some_and(Wild::is_run) {
        pi += 1;
    }
    Some(pi == pat.len())
}
