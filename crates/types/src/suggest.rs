//! "Did you mean …?" for misspelt names.

/// The candidate closest to `word`, if one is close enough to be a likely typo, formatted as
/// ` (did you mean `x`?)`; otherwise an empty string.
///
/// # Examples
/// ```
/// assert_eq!(anduin_types::did_you_mean("filtr", ["filter", "map"]), " (did you mean `filter`?)");
/// assert_eq!(anduin_types::did_you_mean("zzz", ["filter", "map"]), "");
/// assert_eq!(anduin_types::did_you_mean(&"f".repeat(1 << 20), ["filter"]), "");
/// ```
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let close = |c: &str| 2.max(c.len() / 4);
    candidates
        .into_iter()
        // The distance is at least the difference in length: a word far longer than every
        // candidate (a 10 MB name) is not compared, which would take time in its length.
        .filter(|c| word.len().abs_diff(c.len()) <= close(c))
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= close(c) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}
