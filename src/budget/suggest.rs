//! "Did you mean …?" for a near-miss key or figure id in a budget file: the
//! closest known word by edit distance (a swap of two letters counts one),
//! when it is close enough to be the word meant.

/// Keys longer than this get no suggestion (an edit distance is quadratic
/// in the lengths, and a budget file is hostile input).
const MAX_LEN: usize = 64;

/// The known word `word` most likely misspells: at most one edit per three
/// characters of it (and at least one), the first of equally close ones.
pub(crate) fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let len = word.chars().count();
    if len == 0 || len > MAX_LEN {
        return None;
    }
    let allowed = (len / 3).max(1);
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), *k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// What to say after "unknown key `word`": the suggestion, or every known
/// word when none is close.
pub(crate) fn hint(word: &str, known: &[&str]) -> String {
    match closest(word, known) {
        Some(k) => format!("did you mean `{k}`?"),
        None => format!("expected one of: {}", known.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURES: [&str; 4] = [
        "dynamic-peak",
        "overall-peak",
        "allocated-peak",
        "oom-events",
    ];

    #[test]
    fn a_near_miss_gets_the_word_meant() {
        assert_eq!(closest("overal-peak", &FIGURES), Some("overall-peak"));
        assert_eq!(closest("overall-peek", &FIGURES), Some("overall-peak"));
        assert_eq!(closest("alocated-paek", &FIGURES), Some("allocated-peak"));
        assert_eq!(closest("oom-event", &FIGURES), Some("oom-events"));
    }

    #[test]
    fn a_different_word_gets_the_list() {
        assert_eq!(closest("colour", &FIGURES), None);
        assert_eq!(closest("", &FIGURES), None);
        assert_eq!(closest(&"overall-peak".repeat(10), &FIGURES), None);
        assert_eq!(
            hint("rules", &FIGURES),
            "expected one of: dynamic-peak, overall-peak, allocated-peak, oom-events"
        );
        assert_eq!(
            hint("overal-peak", &FIGURES),
            "did you mean `overall-peak`?"
        );
    }
}
