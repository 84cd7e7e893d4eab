//! A budget-file error as rustc shows one, for a terminal: the message, the
//! file and position, the line with a caret under the token at the column
//! (annotate-snippets). Only on a terminal: CI logs and annotations keep
//! the one-line `file:line:col: message`, which tools parse.
//!
//! The line comes from a hostile file: it is escaped as on the terminal
//! (a hidden character shows as its escape), and the caret's span is
//! measured on the escaped text, so it still sits under the token.

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};

use super::escape::terminal;

/// Lines longer than this are not shown (the one-line form is used).
const MAX_LINE: usize = 1000;

/// Characters that end the token the caret marks.
fn ends_token(c: char) -> bool {
    c.is_whitespace() || matches!(c, '=' | ',' | ']' | '}' | '[' | '{')
}

/// The snippet, or `None` when the position is not on a line of `source`.
pub fn render(
    file: &str,
    line: usize,
    col: usize,
    message: &str,
    source: &str,
    color: bool,
) -> Option<String> {
    let text = source.lines().nth(line.checked_sub(1)?)?;
    if text.len() > MAX_LINE {
        return None;
    }
    let start = text
        .char_indices()
        .nth(col.checked_sub(1)?)
        .map(|(i, _)| i)?;
    let token_len = text[start..]
        .char_indices()
        .find(|&(i, c)| i > 0 && ends_token(c))
        .map_or(text.len() - start, |(i, _)| i);
    let before = terminal(&text[..start]);
    let token = terminal(&text[start..start + token_len]);
    let shown = format!("{before}{token}{}", terminal(&text[start + token_len..]));
    let span = before.len()..before.len() + token.len().max(1);
    let title = terminal(message);
    let path = terminal(file);
    let report = &[Level::ERROR.primary_title(title.as_ref()).element(
        Snippet::source(shown.as_str())
            .line_start(line)
            .path(path.as_ref())
            .annotation(AnnotationKind::Primary.span(span)),
    )];
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    Some(format!("{}\n", renderer.render(report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caret_sits_under_the_key_at_the_column() {
        let src = "[target.budget]\noveral-peak = \"1 GiB\"\n";
        let msg = "unknown key `overal-peak` in [target.budget]; did you mean `overall-peak`?";
        let out = render("m.toml", 2, 1, msg, src, false).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], format!("error: {msg}"));
        assert!(lines[1].ends_with("--> m.toml:2:1"), "{out}");
        let code = lines
            .iter()
            .position(|l| l.contains("overal-peak = "))
            .unwrap();
        let caret = lines[code + 1];
        let bar = lines[code].find("overal-peak").unwrap();
        assert_eq!(caret.find('^'), Some(bar), "{out}");
        assert_eq!(caret.matches('^').count(), "overal-peak".len(), "{out}");
    }

    #[test]
    fn a_hidden_character_is_escaped_and_the_caret_still_fits() {
        let src = "a = 1\n\u{202e}x = \"y\"\n";
        let out = render("m.toml", 2, 2, "bad", src, false).unwrap();
        assert!(!out.contains('\u{202e}'), "{out}");
        assert!(out.contains("\\u{202e}x = "), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let code = lines.iter().position(|l| l.contains("x = ")).unwrap();
        let col = lines[code].find("x = ").unwrap();
        assert_eq!(lines[code + 1].find('^'), Some(col), "{out}");
    }

    #[test]
    fn a_position_off_the_file_gives_no_snippet() {
        assert_eq!(render("m.toml", 5, 1, "bad", "a = 1\n", false), None);
        assert_eq!(render("m.toml", 1, 9, "bad", "a = 1\n", false), None);
        assert_eq!(render("m.toml", 0, 1, "bad", "a = 1\n", false), None);
    }
}
