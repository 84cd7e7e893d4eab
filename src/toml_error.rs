//! The one-line message of a TOML parse error (the budget file, a rules
//! file, inline categories): the parser's first line, and the key when
//! the parser's message leaves it out (toml_edit 0.25 says only
//! "duplicate key", with the key's span).

pub(crate) fn message(e: &toml_edit::TomlError, text: &str) -> String {
    let first = e.message().lines().next().unwrap_or("invalid TOML");
    if first == "duplicate key" {
        if let Some(key) = e.span().and_then(|s| text.get(s)) {
            return format!("duplicate key `{}`", key.trim());
        }
    }
    first.to_string()
}
