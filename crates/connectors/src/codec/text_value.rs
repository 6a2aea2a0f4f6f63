//! Text-to-value rules for the non-string column types, shared by the CSV decoder and the
//! JSON decoder's string handling.

/// `Int64`: optional sign then ASCII digits (no spaces, no exponent, no fraction).
#[inline]
pub(crate) fn parse_int(text: &[u8]) -> Option<i64> {
    lexical_core::parse::<i64>(text).ok()
}

/// `Float64`: decimal or exponent notation, plus `NaN` / `inf` / `infinity` in any case;
/// correctly rounded. A number too large for a float (`1e400`) is not one: it would read as
/// infinity, which only the words `inf` and `infinity` mean (as in JSON Lines, which rejects
/// such a number).
#[inline]
pub(crate) fn parse_float(text: &[u8]) -> Option<f64> {
    lexical_core::parse::<f64>(text)
        .ok()
        .filter(|v| v.is_finite() || !float_overflows(text))
}

/// Whether `text` is a number written with digits that is too large for a float.
pub(crate) fn float_overflows(text: &[u8]) -> bool {
    text.iter().any(u8::is_ascii_digit)
        && lexical_core::parse::<f64>(text).is_ok_and(f64::is_infinite)
}

/// `Boolean`: `true` / `false` / `1` / `0`, ASCII case-insensitive.
#[inline]
pub(crate) fn parse_bool(text: &[u8]) -> Option<bool> {
    match text {
        b"1" => Some(true),
        b"0" => Some(false),
        _ if text.eq_ignore_ascii_case(b"true") => Some(true),
        _ if text.eq_ignore_ascii_case(b"false") => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_take_an_optional_sign_and_nothing_else() {
        assert_eq!(parse_int(b"42"), Some(42));
        assert_eq!(parse_int(b"+42"), Some(42));
        assert_eq!(parse_int(b"-42"), Some(-42));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"abc",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_accept_exponents_and_special_values() {
        assert_eq!(parse_float(b"50"), Some(50.0));
        assert_eq!(parse_float(b"1.0e20"), Some(1e20));
        assert_eq!(parse_float(b"-inf"), Some(f64::NEG_INFINITY));
        assert!(parse_float(b"NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_float(b"abc"), None);
        assert_eq!(parse_float(b""), None);
    }

    #[test]
    fn a_number_too_large_for_a_float_is_not_read_as_infinity() {
        for text in [&b"1e400"[..], b"-1e400", b"1e309", b"17976931348623159e292"] {
            assert_eq!(
                parse_float(text),
                None,
                "{:?}",
                String::from_utf8_lossy(text)
            );
            assert!(float_overflows(text));
        }
        assert_eq!(parse_float(b"1.7976931348623157e308"), Some(f64::MAX));
        assert_eq!(
            parse_float(b"1e-400"),
            Some(0.0),
            "underflow rounds to zero"
        );
        assert_eq!(parse_float(b"Infinity"), Some(f64::INFINITY));
        assert!(!float_overflows(b"inf"));
    }

    #[test]
    fn booleans_are_true_false_one_zero_in_any_case() {
        assert_eq!(parse_bool(b"TRUE"), Some(true));
        assert_eq!(parse_bool(b"False"), Some(false));
        assert_eq!(parse_bool(b"1"), Some(true));
        assert_eq!(parse_bool(b"0"), Some(false));
        assert_eq!(parse_bool(b"yes"), None);
        assert_eq!(parse_bool(b"2"), None);
    }
}
