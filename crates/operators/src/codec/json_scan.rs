//! A validating scanner for one JSON Lines record.
//!
//! It reads a line that must hold exactly one JSON object and fills one [`JsonValue`] slot per
//! schema column, leaving values as byte ranges (numbers keep their text so they can be parsed
//! exactly, as the column's type requires). Members that are not schema columns are validated
//! and skipped; nested objects and arrays are validated and reported only by kind. Nothing is
//! allocated except when a string contains escapes, which are decoded into a scratch string.
//!
//! The grammar is RFC 8259's: strings must not contain raw control characters, escapes
//! include `\uXXXX` with surrogate pairs (a lone surrogate is an error), numbers follow the
//! JSON number syntax, and only whitespace may follow the object.

/// Nesting depth beyond which a line is rejected (protects the recursive skipper).
const MAX_DEPTH: usize = 128;

/// The value of one schema column in the scanned object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonValue {
    /// The member is not present.
    Absent,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number; `line[start..end]` is its text.
    Number {
        start: usize,
        end: usize,
        /// No fraction and no exponent.
        integer: bool,
    },
    /// A string; its decoded text is `scratch[start..end]` if `escaped`, else
    /// `line[start..end]`.
    Str {
        start: usize,
        end: usize,
        escaped: bool,
    },
    /// An object or array (`"an object"` / `"an array"`).
    Nested(&'static str),
}

/// Why a line is not a valid JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanError {
    /// Byte offset in the line where the problem was found.
    pub(crate) at: usize,
    /// What was wrong.
    pub(crate) message: &'static str,
}

/// Scans `line` as one JSON object. For each member whose key `lookup` maps to a column
/// index, stores its value in `slots[index]` (the last duplicate wins). Escaped strings are
/// decoded into `scratch`, which the caller clears between lines.
pub(crate) fn scan_object(
    line: &str,
    slots: &mut [JsonValue],
    scratch: &mut String,
    lookup: impl Fn(&str) -> Option<usize>,
) -> Result<(), ScanError> {
    let mut p = Parser {
        text: line,
        bytes: line.as_bytes(),
        pos: 0,
        scratch,
    };
    p.skip_ws();
    p.expect(b'{', "expected `{`")?;
    p.skip_ws();
    if p.peek() == Some(b'}') {
        p.pos += 1;
    } else {
        loop {
            p.skip_ws();
            if p.peek() != Some(b'"') {
                return Err(p.error("expected a string key"));
            }
            let mark = p.scratch.len();
            let key = p.string()?;
            let column = match key {
                JsonValue::Str {
                    start,
                    end,
                    escaped: false,
                } => lookup(&line[start..end]),
                JsonValue::Str { start, end, .. } => lookup(&p.scratch[start..end]),
                _ => None,
            };
            p.scratch.truncate(mark);
            p.skip_ws();
            p.expect(b':', "expected `:`")?;
            p.skip_ws();
            let value = p.value(0)?;
            if let Some(slot) = column.and_then(|c| slots.get_mut(c)) {
                *slot = value;
            }
            p.skip_ws();
            match p.peek() {
                Some(b',') => p.pos += 1,
                Some(b'}') => {
                    p.pos += 1;
                    break;
                }
                _ => return Err(p.error("expected `,` or `}`")),
            }
        }
    }
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.error("unexpected characters after the object"));
    }
    Ok(())
}

struct Parser<'a, 's> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    scratch: &'s mut String,
}

impl Parser<'_, '_> {
    fn error(&self, message: &'static str) -> ScanError {
        let message = if self.pos >= self.bytes.len() {
            "unexpected end of line"
        } else {
            message
        };
        ScanError {
            at: self.pos,
            message,
        }
    }

    /// An error about the byte just consumed.
    fn error_before(&self, message: &'static str) -> ScanError {
        ScanError {
            at: self.pos.saturating_sub(1),
            message,
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, message: &'static str) -> Result<(), ScanError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(message))
        }
    }

    /// A value at `depth` levels below the top-level object.
    fn value(&mut self, depth: usize) -> Result<JsonValue, ScanError> {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", JsonValue::Bool(true)),
            Some(b'f') => self.literal("false", JsonValue::Bool(false)),
            Some(b'n') => self.literal("null", JsonValue::Null),
            Some(b'{') => {
                let mark = self.scratch.len();
                self.skip_object(depth + 1)?;
                self.scratch.truncate(mark);
                Ok(JsonValue::Nested("an object"))
            }
            Some(b'[') => {
                let mark = self.scratch.len();
                self.skip_array(depth + 1)?;
                self.scratch.truncate(mark);
                Ok(JsonValue::Nested("an array"))
            }
            Some(_) => Err(self.error("expected a value")),
            None => Err(self.error("unexpected end of line")),
        }
    }

    fn literal(&mut self, word: &str, value: JsonValue) -> Result<JsonValue, ScanError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("invalid literal"))
        }
    }

    fn skip_object(&mut self, depth: usize) -> Result<(), ScanError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            self.string()?;
            self.skip_ws();
            self.expect(b':', "expected `:`")?;
            self.skip_ws();
            self.value(depth)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn skip_array(&mut self, depth: usize) -> Result<(), ScanError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            self.value(depth)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<JsonValue, ScanError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integer = false;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        Ok(JsonValue::Number {
            start,
            end: self.pos,
            integer,
        })
    }

    /// A string starting at the opening quote.
    fn string(&mut self) -> Result<JsonValue, ScanError> {
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(JsonValue::Str {
                        start,
                        end: self.pos - 1,
                        escaped: false,
                    });
                }
                Some(b'\\') => break,
                Some(0..=0x1f) => return Err(self.error("control character in string")),
                Some(_) => self.pos += 1,
                None => return Err(self.error("unexpected end of line")),
            }
        }
        // Slow path: copy into the scratch string, decoding escapes. Every position we slice
        // at is next to an ASCII byte, hence a char boundary.
        let decoded_start = self.scratch.len();
        self.scratch.push_str(&self.text[start..self.pos]);
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(JsonValue::Str {
                        start: decoded_start,
                        end: self.scratch.len(),
                        escaped: true,
                    });
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape()?;
                }
                Some(0..=0x1f) => return Err(self.error("control character in string")),
                Some(_) => {
                    let run = self.pos;
                    while let Some(b) = self.peek() {
                        if b == b'"' || b == b'\\' || b < 0x20 {
                            break;
                        }
                        self.pos += 1;
                    }
                    self.scratch.push_str(&self.text[run..self.pos]);
                }
                None => return Err(self.error("unexpected end of line")),
            }
        }
    }

    /// The escape after a backslash.
    fn escape(&mut self) -> Result<(), ScanError> {
        let Some(kind) = self.peek() else {
            return Err(self.error("unexpected end of line"));
        };
        self.pos += 1;
        let c = match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        if !self.bytes[self.pos..].starts_with(b"\\u") {
                            return Err(self.error("lone leading surrogate in \\u escape"));
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(self.error("invalid trailing surrogate in \\u escape"));
                        }
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.error("lone trailing surrogate in \\u escape"))
                    }
                    _ => unit,
                };
                char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))?
            }
            _ => return Err(self.error_before("invalid escape")),
        };
        self.scratch.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ScanError> {
        let mut value = 0;
        for _ in 0..4 {
            let digit = self
                .peek()
                .and_then(|b| char::from(b).to_digit(16))
                .ok_or_else(|| self.error("invalid \\u escape"))?;
            value = value * 16 + digit;
            self.pos += 1;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS: [&str; 3] = ["a", "b", "c\"q"];

    fn scan(line: &str) -> Result<(Vec<JsonValue>, String), ScanError> {
        let mut slots = vec![JsonValue::Absent; KEYS.len()];
        let mut scratch = String::new();
        scan_object(line, &mut slots, &mut scratch, |k| {
            KEYS.iter().position(|n| *n == k)
        })?;
        Ok((slots, scratch))
    }

    fn text(line: &str, scratch: &str, value: JsonValue) -> String {
        match value {
            JsonValue::Str {
                start,
                end,
                escaped: true,
            } => scratch[start..end].to_owned(),
            JsonValue::Str { start, end, .. } | JsonValue::Number { start, end, .. } => {
                line[start..end].to_owned()
            }
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn members_land_in_their_columns_and_others_are_skipped() {
        let line = r#" { "x": {"deep": [1, {"k": "v\n"}]}, "b": -1.5e3, "a": "h\u00e9\"llo", "c\"q": null } "#;
        let (slots, scratch) = scan(line).expect("valid");
        assert_eq!(text(line, &scratch, slots[0]), "hé\"llo");
        assert_eq!(text(line, &scratch, slots[1]), "-1.5e3");
        assert!(matches!(slots[1], JsonValue::Number { integer: false, .. }));
        assert_eq!(slots[2], JsonValue::Null);
    }

    #[test]
    fn missing_members_stay_absent_and_duplicates_keep_the_last() {
        let (slots, _) = scan(r#"{"a": true, "a": [1]}"#).expect("valid");
        assert_eq!(slots[0], JsonValue::Nested("an array"));
        assert_eq!(slots[1], JsonValue::Absent);
        assert_eq!(scan("{}").expect("valid").0[0], JsonValue::Absent);
    }

    #[test]
    fn surrogate_pairs_decode_and_lone_surrogates_are_errors() {
        let line = r#"{"a": "\ud83d\ude00"}"#;
        let (slots, scratch) = scan(line).expect("valid");
        assert_eq!(text(line, &scratch, slots[0]), "😀");
        assert!(scan(r#"{"a": "\ud83d"}"#).is_err());
        assert!(scan(r#"{"a": "\ude00"}"#).is_err());
    }

    #[test]
    fn malformed_lines_report_where_they_break() {
        let cases = [
            (r#"{"a" 1}"#, 5, "expected `:`"),
            (r#"{"a": 1"#, 7, "unexpected end of line"),
            (r#"{"a": 1,"#, 8, "unexpected end of line"),
            (r#"{"a": 01}"#, 7, "expected `,` or `}`"),
            (r#"{"a": 1.}"#, 8, "invalid number"),
            (r#"{"a": tru}"#, 6, "invalid literal"),
            (r#"{"a": 1} x"#, 9, "unexpected characters after the object"),
            (r#"{a: 1}"#, 1, "expected a string key"),
            ("{\"a\": \"x\ty\"}", 8, "control character in string"),
            (r#"{"a": "\x"}"#, 8, "invalid escape"),
            (r#"[1]"#, 0, "expected `{`"),
            (r#"{"a": }"#, 6, "expected a value"),
            (r#"{"a": "open"#, 11, "unexpected end of line"),
            (r#"{"a": [1 2]}"#, 9, "expected `,` or `]`"),
        ];
        for (line, at, message) in cases {
            assert_eq!(
                scan(line).map(|_| ()),
                Err(ScanError { at, message }),
                "{line}"
            );
        }
    }

    proptest! {
        #[test]
        fn the_scanner_accepts_exactly_what_serde_json_accepts_as_an_object(
            line in r#"[ {}\[\]:,"a-c0-9.eE+\-\\u/ntrfl]{0,24}"#
        ) {
            let ours = scan(&line).is_ok();
            let theirs = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&line).is_ok();
            prop_assert_eq!(ours, theirs, "{}", line);
        }

        #[test]
        fn strings_decode_like_serde_json(s in "\\PC{0,12}") {
            let line = serde_json::json!({ "a": s }).to_string();
            let (slots, scratch) = scan(&line).expect("serde_json writes valid JSON");
            prop_assert_eq!(text(&line, &scratch, slots[0]), s);
        }
    }
}
