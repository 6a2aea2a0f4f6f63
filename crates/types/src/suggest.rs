//! "Did you mean …?" for misspelt names.

/// The candidate closest to `word`, if one is close enough to be a likely typo, formatted as
/// ` (did you mean `x`?)`; otherwise an empty string.
///
/// # Examples
/// ```
/// assert_eq!(anduin_types::did_you_mean("filtr", ["filter", "map"]), " (did you mean `filter`?)");
/// assert_eq!(anduin_types::did_you_mean("zzz", ["filter", "map"]), "");
/// ```
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}
