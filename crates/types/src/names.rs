//! Names of things in file names.

/// `name` with every character other than an ASCII letter, a digit, `-` and `_` replaced by
/// `_`, for use in a file name (an operator's state file, its LSM working directory).
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_letters_digits_dashes_and_underscores_stay() {
        assert_eq!(super::file_safe("a b/é-x_1"), "a_b__-x_1");
    }
}
