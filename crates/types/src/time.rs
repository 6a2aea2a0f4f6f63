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

/// Parses a duration such as `250ms`, `2s`, `1.5s`, `10m`, `1h` or `3d` into milliseconds; see
/// [`duration_ms`] for why one does not parse.
///
/// # Examples
/// ```
/// assert_eq!(anduin_types::parse_duration_ms("2s"), Some(2000));
/// assert_eq!(anduin_types::parse_duration_ms("1.5s"), Some(1500));
/// assert_eq!(anduin_types::parse_duration_ms("100"), None);
/// assert_eq!(anduin_types::parse_duration_ms("2 parsecs"), None);
/// ```
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    duration_ms(text).ok()
}

/// A duration in milliseconds: a number and a unit (`ms`, `s`, `m`, `h`, `d`, or their words
/// `seconds`, `minutes` …). A fraction is taken exactly (`1.5s` is 1500 ms) and must come to
/// whole milliseconds; a number without a unit is refused, as it could mean any. The error
/// says what is wrong and what to write.
///
/// # Examples
/// ```
/// use anduin_types::duration_ms;
/// assert_eq!(duration_ms("2 seconds"), Ok(2000));
/// assert_eq!(duration_ms("0.25s"), Ok(250));
/// assert!(duration_ms("12.5").unwrap_err().contains("has no unit"));
/// assert!(duration_ms("1.5ms").unwrap_err().contains("whole number of milliseconds"));
/// ```
pub fn duration_ms(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let (whole, fraction) = num.split_once('.').unwrap_or((num, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if num.is_empty() || (whole.is_empty() && fraction.is_empty()) || !digits(fraction) {
        return Err(format!(
            "expected a number and a unit such as \"2s\" or \"250ms\", found `{t}`"
        ));
    }
    let factor: u64 = match unit.trim() {
        "ms" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        "" => {
            return Err(format!(
                "`{t}` has no unit: add one, e.g. \"{t}s\" (ms, s, m, h or d)"
            ))
        }
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{t}`: use ms, s, m, h or d"
            ))
        }
    };
    let too_long = || format!("`{t}` is too long a duration");
    let parse = |s: &str| -> Result<u64, String> {
        if s.is_empty() {
            Ok(0)
        } else {
            s.parse::<u64>().map_err(|_| too_long())
        }
    };
    let whole_ms = parse(whole)?.checked_mul(factor).ok_or_else(too_long)?;
    // The fraction's digits, exactly: 0.125s is 125/1000 of 1000 ms.
    let fraction = fraction.trim_end_matches('0');
    let scale = u32::try_from(fraction.len())
        .ok()
        .and_then(|n| 10u64.checked_pow(n))
        .ok_or_else(too_long)?;
    let part = u128::from(parse(fraction)?) * u128::from(factor);
    if part % u128::from(scale) != 0 {
        return Err(format!(
            "`{t}` is not a whole number of milliseconds: anduin counts time in milliseconds"
        ));
    }
    let part = u64::try_from(part / u128::from(scale)).map_err(|_| too_long())?;
    whole_ms.checked_add(part).ok_or_else(too_long)
}

/// Milliseconds in a day.
pub const MS_PER_DAY: i64 = 86_400_000;

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`). Exact for every `i64` millisecond timestamp's day count.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ` for any `i64`, with as many year digits (and a minus
/// sign) as the year needs: `292278994-08-17T07:12:55.807Z` for `i64::MAX`. For messages;
/// the decoders do not read years beyond four digits back.
pub fn instant_text(ms: i64) -> String {
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let ms_of_day = ms.rem_euclid(MS_PER_DAY);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_are_exact_or_refused() {
        assert_eq!(duration_ms("1.5s"), Ok(1500));
        assert_eq!(duration_ms("1.500s"), Ok(1500));
        assert_eq!(duration_ms(".5m"), Ok(30_000));
        assert_eq!(duration_ms("0.001s"), Ok(1));
        assert!(duration_ms("0.0001s").is_err());
        assert!(duration_ms("12.5ms").is_err());
    }

    #[test]
    fn a_unit_is_required_and_known() {
        assert!(duration_ms("1").expect_err("bare").contains("has no unit"));
        assert!(duration_ms("12.5")
            .expect_err("bare")
            .contains("has no unit"));
        assert!(duration_ms("2 parsecs")
            .expect_err("unit")
            .contains("unknown unit `parsecs`"));
        assert!(duration_ms("s").is_err());
        assert!(duration_ms(".s").is_err());
        assert!(duration_ms("1.2.3s").is_err());
        assert!(duration_ms("99999999999999999999d")
            .expect_err("long")
            .contains("too long"));
        assert_eq!(duration_ms(" 10 minutes "), Ok(600_000));
    }
}
