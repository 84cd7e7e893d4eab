//! A verdict as the pages show it: a coloured badge with an icon and a
//! word (the check page's sections and summary, its rank sections).

use crate::compare::Status;

/// A verdict as a coloured badge with an icon (the colour is not the only
/// sign: the icon and the word say it too).
pub(super) fn badge(st: Status) -> String {
    let (icon, words) = match st {
        Status::Pass => ("✔", "pass"),
        Status::Reported => ("·", "reported"),
        Status::Skipped => ("–", "skipped"),
        Status::Warn => ("▲", "warn"),
        Status::Waived => ("◇", "waived"),
        Status::Fail => ("✖", "fail"),
        Status::Error => ("?", "could not judge"),
    };
    format!(
        "<span class=\"badge {}\" data-status=\"{}\"><span aria-hidden=\"true\">{icon}</span> \
         {words}</span>",
        st.id(),
        st.id()
    )
}
