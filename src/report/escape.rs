//! Escaping at the sink: one policy per kind of output. Documents and
//! summaries keep names exactly as the snapshot has them (serde_json escapes
//! what JSON needs); a renderer escapes a name when it writes it, by the rule
//! of where the text goes.
//!
//! Every sink writes the characters a reader would not see for what they
//! are ([`is_hidden`]: control characters, the bidirectional controls that
//! reorder the text around them, the line and paragraph separators) as Rust
//! escapes (`\n`, `\u{1b}`, `\u{202e}`).
//!
//! * terminal / CI log: those escapes alone, so a name cannot start a log
//!   line (`::error::…`), send terminal escapes or turn text around, and
//!   the reader still sees what was there.
//! * Markdown (inline text, table cells): as the terminal, plus the
//!   characters Markdown or HTML would read as markup written literally,
//!   and a zero-width joiner (U+200D) after each `@` (no `@mention`
//!   notifies anyone), after the `:` of `://` and the `www` of `www.` (no
//!   bare URL or e-mail address becomes a link). A name in a code span
//!   ([`markdown_code`]) stays a code span only when nothing in it can end
//!   the span or a table cell (a backtick, a `|`, which no escape hides
//!   inside a code span outside GitHub's tables); otherwise it is inline
//!   text. Fenced blocks take [`terminal`]: nothing is markup there.
//! * XML: as the terminal for the characters XML 1.0 cannot carry at all;
//!   markup (`<`, `&`, …) is left to the XML writer, which always escapes it.
//! * HTML: as the terminal, plus the five characters HTML reads as markup as
//!   character references.
//! * OpenMetrics label value (GitLab's metrics report): the spec's three
//!   escapes (`\\`, `\"`, `\n`); other control characters as on the
//!   terminal, and `#` as `\u{23}`, because GitLab's parser cuts every line
//!   at its first `#` (one in a label would lose the line, or in older
//!   GitLab fail the whole report).
//! * JSON inside an HTML `<script>` element: the JSON text as serde_json
//!   writes it, with `<`, `>` and `&` written as `\u003c`, `\u003e`,
//!   `\u0026` (so no `</script>` or `<!--` can end or bend the element) and
//!   U+2028 / U+2029 as `\u2028` / `\u2029` (line terminators to older
//!   JavaScript parsers), the bidi controls as their `\u` escapes too (so
//!   the page's source shows none raw; its script shows each as on the
//!   terminal). These characters occur in JSON text only inside
//!   strings, where the escapes mean the same characters, so `JSON.parse`
//!   reads back exactly the names the snapshot has.

use std::borrow::Cow;
use std::fmt::Write as _;

/// What no sink writes as it is: control characters (C0, DEL, C1), the
/// bidirectional embeddings, overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069) and marks (U+200E, U+200F, U+061C), and the line and
/// paragraph separators (U+2028, U+2029).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Text for a terminal or a CI log: one line, no escape sequences, no
/// reordering.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_where(s, is_hidden, |c, out| out.extend(c.escape_default()))
}

/// Breaks a mention, a URL scheme or a `www.` without a visible trace.
const JOINER: char = '\u{200d}';

/// Text for Markdown prose or a table cell.
pub(crate) fn markdown(s: &str) -> Cow<'_, str> {
    let linkish = |s: &str| {
        s.contains("://")
            || s.as_bytes()
                .windows(4)
                .any(|w| w.eq_ignore_ascii_case(b"www."))
    };
    if !s.contains(|c: char| is_hidden(c) || is_markdown_markup(c) || c == '@') && !linkish(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => {
                out.push('@');
                out.push(JOINER);
            }
            ':' if s[i + 1..].starts_with("//") => {
                out.push(':');
                out.push(JOINER);
            }
            c if is_hidden(c) => out.extend(c.escape_default()),
            c if is_markdown_markup(c) => {
                out.push('\\');
                out.push(c);
            }
            c => {
                out.push(c);
                // The third `w` of a `www.`.
                let www = matches!(c, 'w' | 'W')
                    && i >= 2
                    && s.is_char_boundary(i - 2)
                    && s[i - 2..=i].eq_ignore_ascii_case("www")
                    && s[i + 1..].starts_with('.');
                if www {
                    out.push(JOINER);
                }
            }
        }
    }
    Cow::Owned(out)
}

/// A name for Markdown in a code span where one is safe (a figure id, a
/// plain category name): none can hold a backtick or a `|`, which would
/// end the span or the table cell around it; such a name is written as
/// [`markdown`] inline text instead.
pub(crate) fn markdown_code(s: &str) -> String {
    if s.is_empty() || s.contains(|c: char| is_hidden(c) || matches!(c, '`' | '|')) {
        return markdown(s).into_owned();
    }
    format!("`{s}`")
}

/// Text for an XML writer: what XML 1.0 cannot hold (control characters
/// other than tab, newline and carriage return; U+FFFE, U+FFFF) escaped as
/// on the terminal, so a JUnit file stays well-formed and still names it.
pub(crate) fn xml(s: &str) -> Cow<'_, str> {
    escape_where(
        s,
        |c| {
            matches!(c, '\u{fffe}' | '\u{ffff}')
                || (is_hidden(c) && !matches!(c, '\t' | '\n' | '\r'))
        },
        |c, out| out.extend(c.escape_default()),
    )
}

/// Text for an HTML page (element content or a quoted attribute).
pub(crate) fn html(s: &str) -> Cow<'_, str> {
    escape_where(
        s,
        |c| is_hidden(c) || matches!(c, '&' | '<' | '>' | '"' | '\''),
        |c, out| match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.extend(c.escape_default()),
        },
    )
}

/// Text for an OpenMetrics label value, between its double quotes. What
/// the terminal would write as an escape (`\u{1b}`) and `#` (as `\u{23}`)
/// reach the parsed value as that escape's text, so a reader sees it and
/// GitLab, which drops what follows a `#`, keeps the line whole.
pub(crate) fn openmetrics_label(s: &str) -> Cow<'_, str> {
    escape_where(
        s,
        |c| is_hidden(c) || matches!(c, '\\' | '"' | '#'),
        |c, out| match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '#' => out.push_str("\\\\u{23}"),
            c => {
                for e in c.escape_default() {
                    if e == '\\' {
                        out.push('\\');
                    }
                    out.push(e);
                }
            }
        },
    )
}

/// JSON text for the content of an HTML `<script type="application/json">`
/// element.
pub(crate) fn json_in_script(json: &str) -> Cow<'_, str> {
    escape_where(
        json,
        |c| matches!(c, '<' | '>' | '&') || (is_hidden(c) && !c.is_ascii_control()),
        |c, out| {
            let _ = write!(out, "\\u{:04x}", c as u32);
        },
    )
}

/// Characters GitHub-flavoured Markdown can read as markup in running text.
fn is_markdown_markup(c: char) -> bool {
    matches!(
        c,
        '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '#' | '!' | '~'
    )
}

/// `s` with every character `needs` picks written by `write`; borrowed when
/// nothing needs escaping (the common case: names are plain text).
fn escape_where(
    s: &str,
    needs: impl Fn(char) -> bool,
    write: impl Fn(char, &mut String),
) -> Cow<'_, str> {
    let Some(first) = s.find(|c: char| needs(c)) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if needs(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "f\n::error::forged\u{1b}[31m <b>&'\"|*_`\u{7}\t\r\u{fffe}";

    #[test]
    fn plain_names_are_borrowed_unchanged_by_every_sink() {
        let name = "forward (/src/model.py)";
        for f in [terminal, markdown, xml, html, openmetrics_label] {
            assert!(matches!(f(name), Cow::Borrowed(n) if n == name));
        }
    }

    #[test]
    fn the_terminal_sees_every_control_character_as_an_escape_on_one_line() {
        assert_eq!(
            terminal(HOSTILE),
            "f\\n::error::forged\\u{1b}[31m <b>&'\"|*_`\\u{7}\\t\\r\u{fffe}"
        );
    }

    #[test]
    fn markdown_writes_markup_characters_literally() {
        assert_eq!(
            markdown(HOSTILE),
            "f\\n::error::forged\\u{1b}\\[31m &lt;b&gt;&amp;'\"\\|\\*\\_\\`\\u{7}\\t\\r\u{fffe}"
        );
        assert_eq!(markdown(r"a\b"), r"a\\b");
    }

    #[test]
    fn xml_escapes_only_what_xml_cannot_hold() {
        assert_eq!(
            xml(HOSTILE),
            "f\n::error::forged\\u{1b}[31m <b>&'\"|*_`\\u{7}\t\r\\u{fffe}"
        );
    }

    #[test]
    fn json_in_a_script_element_cannot_close_it_and_parses_back_to_the_same_name() {
        let name = "</script><!--x-->&\u{2028}\u{2029}\"";
        let json = serde_json::to_string(name).unwrap();
        let out = json_in_script(&json);
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!out.contains(bad), "{out}");
        }
        assert!(out.contains("\\u003c/script\\u003e"), "{out}");
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, name);
    }

    #[test]
    fn html_writes_markup_as_references_and_controls_as_escapes() {
        assert_eq!(
            html(HOSTILE),
            "f\\n::error::forged\\u{1b}[31m &lt;b&gt;&amp;&#39;&quot;|*_`\\u{7}\\t\\r\u{fffe}"
        );
    }

    /// The characters that reorder or split text without showing.
    const UNSEEN: &str = "a\u{202e}b\u{2066}c\u{2069}d\u{200f}e\u{2028}f\u{2029}g\u{85}h";

    #[test]
    fn every_sink_shows_bidi_controls_separators_and_c1_controls_as_escapes() {
        let seen = r"a\u{202e}b\u{2066}c\u{2069}d\u{200f}e\u{2028}f\u{2029}g\u{85}h";
        for f in [terminal, markdown, xml, html] {
            assert_eq!(f(UNSEEN), seen);
        }
        assert_eq!(openmetrics_label(UNSEEN), seen.replace('\\', r"\\"));
        let json = serde_json::to_string(UNSEEN).unwrap();
        let script = json_in_script(&json);
        assert!(!script.contains(|c: char| is_hidden(c)), "{script}");
        assert_eq!(serde_json::from_str::<String>(&script).unwrap(), UNSEEN);
    }

    #[test]
    fn markdown_breaks_mentions_urls_and_addresses_with_an_invisible_joiner() {
        assert_eq!(markdown("@octocat"), "@\u{200d}octocat");
        assert_eq!(
            markdown("see https://evil.example/x"),
            "see https:\u{200d}//evil.example/x"
        );
        assert_eq!(markdown("WWW.evil.example"), "WWW\u{200d}.evil.example");
        assert_eq!(markdown("a@b.example"), "a@\u{200d}b.example");
        // Nothing else changes: a plain dotted file name stays borrowed.
        assert!(matches!(markdown("model.py:3"), Cow::Borrowed(_)));
        assert_eq!(markdown("éww.x"), "éww.x");
    }

    #[test]
    fn a_code_span_holds_only_names_that_cannot_end_it_or_their_table_cell() {
        assert_eq!(
            markdown_code("category.activation"),
            "`category.activation`"
        );
        assert_eq!(
            markdown_code("category.o`| **FAKE pass** |"),
            r"category.o\`\| \*\*FAKE pass\*\* \|"
        );
        assert_eq!(markdown_code("x\ny"), r"x\ny");
        assert_eq!(markdown_code("r\u{202e}l"), r"r\u{202e}l");
        assert_eq!(markdown_code("@team"), "`@team`");
    }

    #[test]
    fn an_openmetrics_label_escapes_quotes_backslashes_newlines_and_gitlabs_comment_sign() {
        assert_eq!(
            openmetrics_label(HOSTILE),
            "f\\n::error::forged\\\\u{1b}[31m <b>&'\\\"|*_`\\\\u{7}\\\\t\\\\r\u{fffe}"
        );
        assert_eq!(
            openmetrics_label(r#"a\b"c"#),
            r#"a\\b\"c"#,
            "the spec's escapes"
        );
        assert_eq!(
            openmetrics_label("phase.## forward ##"),
            r"phase.\\u{23}\\u{23} forward \\u{23}\\u{23}"
        );
    }
}
