//! Timestamp text rules shared by the codecs: what the decoders accept and what the encoders
//! write.
//!
//! Decoding accepts an integer (epoch milliseconds) or RFC 3339 / ISO 8601 text as parsed by
//! Arrow's `string_to_datetime` (`2023-11-14T22:13:20.123Z`, `2023-11-14 22:13:20`, offsets
//! such as `+01:00`; no zone means UTC), truncated to milliseconds.
//!
//! Encoding with [`TimestampFormat::Rfc3339`] writes `YYYY-MM-DDTHH:MM:SS.mmmZ` (always three
//! fractional digits). Instants whose year falls outside `0000..=9999` cannot be written that
//! way and are written as epoch milliseconds instead, which the decoders read back exactly.

use arrow::compute::kernels::cast_utils::string_to_datetime;
use chrono::Utc;

/// How encoders write `Timestamp(Millisecond)` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TimestampFormat {
    /// Milliseconds since the Unix epoch, as an integer: `1700000000123`.
    #[default]
    EpochMillis,
    /// RFC 3339 in UTC with millisecond precision: `2023-11-14T22:13:20.123Z`.
    Rfc3339,
}

/// Length of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) const RFC3339_LEN: usize = 24;

use anduin_types::{civil_from_days, MS_PER_DAY};

/// Parses timestamp text (see the module docs) into epoch milliseconds.
pub(crate) fn parse_timestamp_ms(text: &[u8]) -> Option<i64> {
    if let Ok(ms) = lexical_core::parse::<i64>(text) {
        return Some(ms);
    }
    parse_datetime_ms(std::str::from_utf8(text).ok()?)
}

/// Parses RFC 3339 / ISO 8601 text (not a bare integer) into epoch milliseconds.
pub(crate) fn parse_datetime_ms(text: &str) -> Option<i64> {
    string_to_datetime(&Utc, text)
        .ok()
        .map(|dt| dt.timestamp_millis())
}

/// Formats timestamps for an encoder as RFC 3339, caching the date of the last day seen:
/// stream timestamps are mostly ordered, so consecutive values usually share it.
#[derive(Debug, Clone)]
pub(crate) struct Rfc3339Writer {
    /// Day number (since 1970-01-01) of `date`.
    day: i64,
    /// `YYYY-MM-DD` of `day`, or `None` if its year is outside `0..=9999`.
    date: Option<[u8; 10]>,
}

impl Default for Rfc3339Writer {
    fn default() -> Self {
        Rfc3339Writer {
            day: 0,
            date: Some(*b"1970-01-01"),
        }
    }
}

impl Rfc3339Writer {
    /// `ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`, or `None` if its year is outside `0..=9999`.
    #[inline]
    pub(crate) fn format(&mut self, ms: i64) -> Option<[u8; RFC3339_LEN]> {
        let day = ms.div_euclid(MS_PER_DAY);
        if day != self.day {
            self.day = day;
            self.date = date_text(day);
        }
        let date = self.date?;
        // In 0..86_400_000, so the casts below are lossless.
        let ms_of_day = ms.rem_euclid(MS_PER_DAY) as usize;
        let secs = ms_of_day / 1000;
        let millis = ms_of_day % 1000;
        let mut out = *b"0000-00-00T00:00:00.000Z";
        out[..10].copy_from_slice(&date);
        put2(&mut out[11..13], secs / 3600);
        put2(&mut out[14..16], secs / 60 % 60);
        put2(&mut out[17..19], secs % 60);
        out[20] = b'0' + (millis / 100) as u8;
        put2(&mut out[21..23], millis % 100);
        Some(out)
    }
}

/// `YYYY-MM-DD` of a day number, or `None` if the year is outside `0..=9999`.
fn date_text(day: i64) -> Option<[u8; 10]> {
    let (year, month, day) = civil_from_days(day);
    let year = usize::try_from(year).ok().filter(|y| *y <= 9999)?;
    // Month and day are in 1..=12 and 1..=31.
    let (month, day) = (month as usize, day as usize);
    let mut out = *b"0000-00-00";
    put2(&mut out[0..2], year / 100);
    put2(&mut out[2..4], year % 100);
    put2(&mut out[5..7], month);
    put2(&mut out[8..10], day);
    Some(out)
}

/// `"00" "01" .. "99"`.
static DIGIT_PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        table[2 * i] = b'0' + (i / 10) as u8;
        table[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    table
};

/// Writes `value` (below 100) as two digits into `slot`.
#[inline]
fn put2(slot: &mut [u8], value: usize) {
    slot.copy_from_slice(&DIGIT_PAIRS[2 * value..2 * value + 2]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::instant_text;
    use chrono::DateTime;
    use proptest::prelude::*;

    fn fmt(ms: i64) -> Option<String> {
        Rfc3339Writer::default()
            .format(ms)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    #[test]
    fn rfc3339_output_has_millisecond_precision_and_a_z() {
        assert_eq!(
            fmt(1_700_000_000_123).as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(fmt(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(fmt(-1).as_deref(), Some("1969-12-31T23:59:59.999Z"));
        assert_eq!(
            fmt(253_402_300_799_999).as_deref(),
            Some("9999-12-31T23:59:59.999Z")
        );
        assert_eq!(fmt(253_402_300_800_000), None);
        assert_eq!(
            fmt(-62_167_219_200_000).as_deref(),
            Some("0000-01-01T00:00:00.000Z")
        );
        assert_eq!(fmt(-62_167_219_200_001), None);
        assert_eq!(fmt(i64::MIN), None);
        assert_eq!(fmt(i64::MAX), None);
    }

    #[test]
    fn instants_of_every_year_have_a_text_for_messages() {
        assert_eq!(instant_text(i64::MAX), "292278994-08-17T07:12:55.807Z");
        assert_eq!(instant_text(i64::MIN), "-292275055-05-16T16:47:04.192Z");
        for ms in [
            0,
            -1,
            1_700_000_000_123,
            253_402_300_799_999,
            -62_167_219_200_000,
        ] {
            assert_eq!(Some(instant_text(ms)), fmt(ms));
        }
    }

    #[test]
    fn integers_and_iso_text_parse_to_epoch_millis() {
        assert_eq!(
            parse_timestamp_ms(b"1700000000000"),
            Some(1_700_000_000_000)
        );
        assert_eq!(parse_timestamp_ms(b"-5"), Some(-5));
        assert_eq!(
            parse_timestamp_ms(b"2023-11-14T22:13:20.123Z"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_timestamp_ms(b"2023-11-14 22:13:20"),
            Some(1_700_000_000_000)
        );
        assert_eq!(
            parse_timestamp_ms(b"2023-11-14T23:13:20+01:00"),
            Some(1_700_000_000_000)
        );
        assert_eq!(parse_timestamp_ms(b"yesterday"), None);
        assert_eq!(parse_timestamp_ms(b"12:00"), None);
        assert_eq!(parse_timestamp_ms(b"\xff\xfe"), None);
    }

    proptest! {
        #[test]
        fn rfc3339_formatting_agrees_with_chrono_and_parses_back(ms in any::<i64>()) {
            let expected = DateTime::from_timestamp_millis(ms)
                .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .filter(|s| s.len() == RFC3339_LEN);
            let got = fmt(ms);
            prop_assert_eq!(&got, &expected);
            if let Some(text) = got {
                prop_assert_eq!(parse_timestamp_ms(text.as_bytes()), Some(ms));
            }
        }

        #[test]
        fn the_date_cache_never_changes_the_output(
            base in any::<i64>(),
            steps in proptest::collection::vec(-200_000_000i64..200_000_000, 1..20),
        ) {
            let mut writer = Rfc3339Writer::default();
            let mut ms = base;
            for step in steps {
                ms = ms.saturating_add(step);
                let cached = writer.format(ms).map(|b| String::from_utf8_lossy(&b).into_owned());
                prop_assert_eq!(cached, fmt(ms));
            }
        }

        #[test]
        fn rfc3339_formatting_round_trips_within_year_9999(
            ms in -62_167_219_200_000i64..=253_402_300_799_999
        ) {
            let text = fmt(ms).expect("year is within 0..=9999");
            prop_assert_eq!(parse_timestamp_ms(text.as_bytes()), Some(ms));
        }
    }
}
