//! Reading the CSV files anduin writes: records, integers, doubles and timestamps.

use std::path::Path;

/// A CSV file: its header and its rows of fields.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The file at `path`, which must have a header.
    pub fn read(path: &Path) -> Table {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{} is readable: {e}", path.display()));
        let mut records = records(&text).into_iter();
        let header = records
            .next()
            .unwrap_or_else(|| panic!("{} has a header", path.display()));
        Table {
            header,
            rows: records.collect(),
        }
    }

    /// The position of column `name`.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("a column {name} in {:?}", self.header))
    }
}

/// The records of CSV `text`: fields split at commas; a `"`-quoted field may hold commas,
/// newlines and `""` for a quote; empty lines are skipped.
fn records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let (mut record, mut field) = (Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                if record.len() > 1 || !record[0].is_empty() {
                    records.push(std::mem::take(&mut record));
                }
                record.clear();
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

/// An integer field.
pub fn int(text: &str) -> i64 {
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("an integer, not {text:?}: {e}"))
}

/// A double field.
pub fn double(text: &str) -> f64 {
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("a number, not {text:?}: {e}"))
}

/// Epoch milliseconds from a timestamp field: `1704067200004`, or RFC 3339 / SQL text in UTC
/// (`2024-01-01T00:00:00.004Z`, `2024-01-01 00:00:00.004`).
pub fn timestamp(text: &str) -> i64 {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return ms;
    }
    let bad = || panic!("a timestamp, not {text:?}");
    let (date, time) = text
        .trim_end_matches('Z')
        .split_once(['T', ' '])
        .unwrap_or_else(bad);
    let d: Vec<i64> = date.split('-').map(int).collect();
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(int).collect();
    if d.len() != 3 || t.len() != 3 {
        bad();
    }
    let millis = int(&format!("{fraction:0<3}")[..3]);
    let days = days_from_civil(d[0], d[1], d[2]);
    ((days * 24 + t[0]) * 60 + t[1]) * 60_000 + t[2] * 1000 + millis
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[test]
fn timestamps_in_rfc_3339_are_epoch_milliseconds() {
    assert_eq!(timestamp("1704067200004"), 1_704_067_200_004);
    assert_eq!(timestamp("2024-01-01T00:00:00.004Z"), 1_704_067_200_004);
    assert_eq!(timestamp("2024-03-01 12:30:05.5"), 1_709_296_205_500);
    assert_eq!(timestamp("1970-01-01T00:00:00Z"), 0);
}

#[test]
fn quoted_fields_keep_their_commas_and_quotes() {
    assert_eq!(
        records("a,b\n\"x, \"\"y\"\"\",2\n\n3,\n"),
        [vec!["a", "b"], vec!["x, \"y\"", "2"], vec!["3", ""]]
    );
}
