//! A query file's bytes as text: UTF-8, without the byte order mark some editors write first.

use anduin_types::{Diagnostic, Pos};

/// `src` without a leading UTF-8 byte order mark (U+FEFF), which editors such as Windows
/// Notepad write at the start of a file. Positions in what is left are as an editor shows
/// them: the mark takes no column.
///
/// # Examples
/// ```
/// assert_eq!(anduin_spec::without_bom("\u{feff}type"), "type");
/// assert_eq!(anduin_spec::without_bom("type"), "type");
/// ```
pub fn without_bom(src: &str) -> &str {
    src.strip_prefix('\u{feff}').unwrap_or(src)
}

/// The text of a query file: its bytes as UTF-8, without a byte order mark; or an error at
/// the line and column of the first byte that is not UTF-8.
///
/// # Examples
/// ```
/// assert_eq!(anduin_spec::decode(b"\xef\xbb\xbfx = 1").expect("UTF-8"), "x = 1");
/// let e = anduin_spec::decode(b"a\nbc\xff").expect_err("not UTF-8");
/// assert_eq!((e.pos.line, e.pos.col), (2, 3));
/// ```
pub fn decode(bytes: &[u8]) -> Result<&str, Diagnostic> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(without_bom(text)),
        Err(e) => {
            let good = e.valid_up_to();
            let before = std::str::from_utf8(bytes.get(..good).unwrap_or_default())
                .expect("the bytes before the first invalid one are UTF-8");
            let before = without_bom(before);
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let byte = bytes.get(good).copied().unwrap_or_default();
            Err(Diagnostic::error(
                Pos::new(
                    u32::try_from(line).unwrap_or(u32::MAX),
                    u32::try_from(col).unwrap_or(u32::MAX),
                ),
                format!(
                    "the file is not UTF-8 text: byte 0x{byte:02x} (at byte {good} of the file) cannot start or continue a character; save the file as UTF-8"
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_character_at_the_end_is_reported_where_it_starts() {
        let e = decode(
            "é\nabé"
                .as_bytes()
                .split_last()
                .map(|(_, b)| b)
                .expect("bytes"),
        )
        .expect_err("cut in the middle of é");
        assert_eq!((e.pos.line, e.pos.col), (2, 3));
    }

    #[test]
    fn a_bom_takes_no_column_before_an_invalid_byte() {
        let e = decode(b"\xef\xbb\xbfab\xc3(").expect_err("not UTF-8");
        assert_eq!((e.pos.line, e.pos.col), (1, 3));
        assert!(e
            .message
            .starts_with("the file is not UTF-8 text: byte 0xc3"));
    }
}
