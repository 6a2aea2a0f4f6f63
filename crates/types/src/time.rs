//! Event time: watermarks and durations.

use serde::{Deserialize, Serialize};

/// A watermark: no row with an event time (epoch milliseconds) below it will arrive anymore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Watermark(pub i64);

impl Watermark {
    /// The watermark of an exhausted input: every window may fire.
    pub const MAX: Watermark = Watermark(i64::MAX);
    /// The watermark before anything is known.
    pub const MIN: Watermark = Watermark(i64::MIN);
}

/// Parses a duration such as `250ms`, `2s`, `1.5s`, `10m`, `1h` or `3d` into milliseconds.
///
/// A bare number is milliseconds.
///
/// # Examples
/// ```
/// assert_eq!(anduin_types::parse_duration_ms("2s"), Some(2000));
/// assert_eq!(anduin_types::parse_duration_ms("1.5s"), Some(1500));
/// assert_eq!(anduin_types::parse_duration_ms("100"), Some(100));
/// assert_eq!(anduin_types::parse_duration_ms("2 parsecs"), None);
/// ```
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" => 1.0,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
        "h" | "hour" | "hours" => 3_600_000.0,
        "d" | "day" | "days" => 86_400_000.0,
        _ => return None,
    };
    let ms = value * factor;
    (ms.is_finite() && ms >= 0.0 && ms < u64::MAX as f64).then_some(ms.round() as u64)
}
