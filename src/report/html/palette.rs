//! The page's category colours: the built-in categories (the `default`
//! rules' and Mosaic's) keep one fixed colour each on every page, and every
//! other category takes the next colour no category of the chart has yet,
//! so no colour repeats within a chart however many categories the rules
//! name.

/// Fixed colours of the built-in categories (Tableau 10). The two built-in
/// rule sets never share a chart, so a colour serves one name of each.
const FIXED: [(&str, &str); 16] = [
    ("parameter", "#4e79a7"),
    ("optimizer-state", "#f28e2b"),
    ("gradient", "#59a14f"),
    ("activation", "#e15759"),
    ("communication", "#76b7b2"),
    ("other", "#b07aa1"),
    ("frameless", "#bab0ac"),
    ("PARAMETER", "#4e79a7"),
    ("OPTIMIZER", "#f28e2b"),
    ("BACKWARD", "#59a14f"),
    ("ACTIVATION", "#e15759"),
    ("FSDP", "#76b7b2"),
    ("NET", "#edc948"),
    ("NET_SETUP", "#9c755f"),
    ("STATS", "#ff9da7"),
    ("UNKNOWN", "#bab0ac"),
];

/// Colours for other categories, in order (Tableau 10, then Tableau 20's
/// light tones), before generated ones.
const SPARE: [&str; 22] = [
    "#edc948", "#ff9da7", "#9c755f", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#b07aa1", "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#f1ce63", "#86bcb6",
    "#ff9d9a", "#79706e", "#d37295", "#fabfd2", "#d4a6c8", "#d7b5a6",
];

/// The `k`-th generated colour: hue steps of 47° (coprime with 360, so 360
/// steps visit every whole degree once), then another lightness; distinct
/// for every `k` below 1,440.
fn generated(k: usize) -> String {
    let hue = k * 47 % 360;
    let light = [45, 62, 32, 75][k / 360 % 4];
    format!("hsl({hue},60%,{light}%)")
}

/// One colour per category of a chart, in `names` order: a built-in
/// category's fixed colour, else the first spare or generated colour not
/// yet used in the chart.
pub(super) fn colours<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    let fixed = |n: &str| FIXED.iter().find(|(f, _)| *f == n).map(|(_, c)| *c);
    let mut used: std::collections::HashSet<String> = names
        .iter()
        .filter_map(|n| fixed(n.as_ref()))
        .map(str::to_string)
        .collect();
    let mut spare = SPARE
        .iter()
        .map(|c| (*c).to_string())
        .chain((0..).map(generated));
    names
        .iter()
        .map(|n| match fixed(n.as_ref()) {
            Some(c) if !used.contains(&format!("dup:{c}")) => {
                // A second built-in name of the same colour (both rule sets
                // in one chart) takes a spare one instead.
                used.insert(format!("dup:{c}"));
                c.to_string()
            }
            _ => {
                let c = spare
                    .by_ref()
                    .find(|c| !used.contains(c))
                    .expect("colours never run out");
                used.insert(c.clone());
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_categories_keep_their_colour_whatever_comes_before() {
        let plain = colours(&["parameter", "activation", "frameless"]);
        let custom = colours(&[
            "hccl",
            "expert",
            "parameter",
            "x",
            "activation",
            "frameless",
        ]);
        assert_eq!(plain, ["#4e79a7", "#e15759", "#bab0ac"]);
        assert_eq!(
            [&custom[2], &custom[4], &custom[5]],
            [&plain[0], &plain[1], &plain[2]]
        );
    }

    #[test]
    fn no_colour_repeats_within_a_chart_of_hundreds_of_categories() {
        let mut names: Vec<String> = crate::analysis::RuleSet::builtin_default()
            .categories()
            .to_vec();
        names.extend((0..700).map(|k| format!("custom-{k}")));
        names.extend(FIXED.iter().map(|(n, _)| (*n).to_string()));
        let got = colours(&names);
        let distinct: std::collections::HashSet<&String> = got.iter().collect();
        assert_eq!(distinct.len(), names.len(), "a colour repeats");
        // The Mosaic names coming last (sharing colours with the default
        // ones already in the chart) were given spare colours.
        assert_eq!(got[0], "#4e79a7");
    }

    #[test]
    fn generated_colours_are_distinct_over_their_range() {
        let all: std::collections::HashSet<String> = (0..1440).map(generated).collect();
        assert_eq!(all.len(), 1440);
    }
}
