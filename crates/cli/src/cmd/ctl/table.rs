//! Plain text tables for `anduin ctl`: a header and rows, columns padded to the widest cell.

/// `s` with its control characters (ESC, BEL, CR, LF, NUL, DEL, C1, …) written as Rust
/// escapes (`\u{1b}`), and the backslash as `\\` so that an escape in the text cannot pass
/// for one of ours: what a run or a user put in a value or a name cannot move the cursor,
/// retitle the terminal or forge lines. With `keep_newlines`, LF stays (a message of
/// several lines).
pub fn escape_controls(s: &str, keep_newlines: bool) -> String {
    if !s.chars().any(|c| c.is_control() || c == '\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Writes `header` and `rows` as aligned columns (two spaces apart, the last one unpadded);
/// control characters in cells are escaped ([`escape_controls`]).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape_controls(c, false)).collect())
        .collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if i < last {
                line.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let t = render(
            &["NAME", "STATE"],
            &[
                vec!["sensors".into(), "running".into()],
                vec!["q".into(), "failed".into()],
            ],
        );
        assert_eq!(t, "NAME     STATE\nsensors  running\nq        failed\n");
    }

    #[test]
    fn control_characters_in_cells_are_escaped_never_raw() {
        let evil = "doubled < 7 -- \u{1b}]0;pwned\u{7}";
        let from = "x\u{1b}[31my\r\nfake\0";
        let t = render(&["NEW", "FROM"], &[vec![evil.into(), from.into()]]);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        assert_eq!(t.lines().count(), 2, "{t}");
        assert!(t.contains(r"\u{1b}]0;pwned\u{7}"), "{t}");
        assert!(t.contains(r"x\u{1b}[31my\u{d}\u{a}fake\u{0}"), "{t}");
        assert_eq!(escape_controls(r"a\u{1b}", false), r"a\\u{1b}");
        assert_eq!(
            escape_controls("line 1\nline\u{7} 2", true),
            "line 1\nline\\u{7} 2"
        );
        assert_eq!(escape_controls("value < 30", false), "value < 30");
    }

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(time(1_767_225_600_000), "2026-01-01 00:00:00 UTC");
    }
}
