//! Plain text tables for `anduin ctl`: a header and rows, columns padded to the widest cell.

/// Writes `header` and `rows` as aligned columns (two spaces apart, the last one unpadded).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
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
    fn times_are_shown_in_utc() {
        assert_eq!(time(1_767_225_600_000), "2026-01-01 00:00:00 UTC");
    }
}
