//! Where records start: the first record boundary at or after an offset of a file, and the
//! line it is on. A pure scanner ([`Scanner`]) is fed the file from its start; a thin shell
//! ([`find`]) reads the file for it.
//!
//! CSV follows the decoder's (csv-core's) rules: `\n`, `\r` and `\r\n` end a record outside
//! quotes; a `"` at the start of a field opens quotes (elsewhere it is a plain byte); `""`
//! inside quotes is a quote. A record not ended within `max_record + 1` bytes when a byte
//! follows them (whether its quotes are still open or closed already, lines after they
//! opened), or that the end of the file leaves inside quotes, is cut by the decoder from its
//! first line on, and decoding resumes on the next line: the scanner does the same, so that
//! a stray quote moves no boundary of the sequential read. JSON Lines: a boundary follows
//! each `\n`.

use std::io::{Read, Seek, SeekFrom};

/// How records end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Dialect {
    /// CSV with this delimiter; a record longer than `max_record` bytes is cut.
    Csv {
        /// The field delimiter.
        delimiter: u8,
        /// The decoder's bound on a record.
        max_record: u64,
    },
    /// One record per `\n`-terminated line.
    Lines,
}

/// A record boundary: its offset, and its 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Boundary {
    /// The offset of the first byte after the boundary.
    pub offset: u64,
    /// The line that byte is on (1 + the `\n` bytes before it).
    pub line: u64,
}

/// What the scanner needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The next bytes of the file, from where the last ones ended.
    More,
    /// The boundary was found.
    Found(Boundary),
    /// The file again from `offset` (a record cut as too long: the decoder resumes on the
    /// line after its start), which is on line `line`.
    Restart {
        /// Where to read from.
        offset: u64,
        /// Its line.
        line: u64,
    },
}

/// Where the scanner stands in the CSV grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between records (after a terminator, or at the start): a boundary.
    StartRecord,
    /// After a delimiter.
    StartField,
    /// In an unquoted field.
    InField,
    /// Inside quotes.
    Quoted,
    /// After a `"` inside quotes: a second `"` is a quote, anything else ends the quotes.
    QuoteInQuoted,
}

/// The record being scanned: where it starts, and where its first line ends (the offset
/// after that terminator, and the line there).
#[derive(Debug, Clone, Copy)]
struct Record {
    start: u64,
    first_line_end: Option<(u64, u64)>,
}

/// Finds the first record boundary at or after `target`, fed a file from its start (or from
/// where a [`Step::Restart`] said).
#[derive(Debug)]
pub(crate) struct Scanner {
    dialect: Dialect,
    target: u64,
    /// The offset of the next byte.
    pos: u64,
    /// `\n` bytes before `pos`.
    newlines: u64,
    state: State,
    record: Option<Record>,
    /// A first line too long to keep, dropped by the decoder up to its terminator.
    skipping_line: bool,
}

impl Scanner {
    /// A scanner for the first boundary at or after `target`, to be fed from offset
    /// `start` (after a BOM, or 0), a record boundary on line 1.
    pub(crate) fn new(dialect: Dialect, target: u64, start: u64) -> Self {
        Self {
            dialect,
            target,
            pos: start,
            newlines: 0,
            state: State::StartRecord,
            record: None,
            skipping_line: false,
        }
    }

    /// Starts again at `offset` on line `line`, a record boundary (after [`Step::Restart`]).
    pub(crate) fn restart(&mut self, offset: u64, line: u64) {
        self.pos = offset;
        self.newlines = line.saturating_sub(1);
        self.state = State::StartRecord;
        self.record = None;
        self.skipping_line = false;
    }

    fn here(&self) -> Boundary {
        Boundary {
            offset: self.pos,
            line: self.newlines + 1,
        }
    }

    /// The boundary, if the scanner stands on one at or after the target.
    fn at_boundary(&self) -> Option<Boundary> {
        (self.pos >= self.target && self.state == State::StartRecord && !self.skipping_line)
            .then(|| self.here())
    }

    /// Feeds the next bytes of the file.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Step {
        let mut rest = bytes;
        while let Some((&byte, after)) = rest.split_first() {
            if let Some(b) = self.at_boundary() {
                return Step::Found(b);
            }
            // Bytes well before the target, without a quote, outside quotes: the state at
            // their end follows from their last terminator, and only their lines count.
            let before =
                usize::try_from(self.target.saturating_sub(self.pos)).unwrap_or(usize::MAX);
            let outside = !matches!(self.state, State::Quoted | State::QuoteInQuoted);
            if before > 1 && outside {
                let n = (before - 1).min(rest.len());
                let (run, tail) = rest.split_at(n);
                if self.quote_free(run) {
                    if let Some(step) = self.skip_run(run) {
                        return step;
                    }
                    rest = tail;
                    continue;
                }
            }
            if let Some(step) = self.byte(byte) {
                return step;
            }
            rest = after;
        }
        match self.at_boundary() {
            Some(b) => Step::Found(b),
            None => Step::More,
        }
    }

    fn quote_free(&self, run: &[u8]) -> bool {
        match self.dialect {
            Dialect::Csv { .. } => memchr::memchr(b'"', run).is_none(),
            Dialect::Lines => true,
        }
    }

    /// Passes over `run` (not empty), which holds no quote, outside quotes; `Some` when the
    /// scan stops (as [`Scanner::byte`] would have stopped on one of its bytes).
    fn skip_run(&mut self, run: &[u8]) -> Option<Step> {
        let base = self.pos;
        let (first_terminator, last_terminator, delimiter) = match self.dialect {
            Dialect::Csv { delimiter, .. } => (
                memchr::memchr2(b'\n', b'\r', run),
                memchr::memrchr2(b'\n', b'\r', run),
                Some(delimiter),
            ),
            Dialect::Lines => (None, memchr::memrchr(b'\n', run), None),
        };
        // The record in progress (or one the run starts) sees the run's bytes up to its
        // first terminator, that one too, and may be too long by then: one whose quotes,
        // spanning lines, closed before the run is cut from its first line on, as byte by
        // byte (issue 19).
        if first_terminator != Some(0) && self.state == State::StartRecord {
            self.record = Some(Record {
                start: base,
                first_line_end: None,
            });
        }
        let seen = first_terminator.unwrap_or(run.len() - 1);
        if let Some(step) = self.cut_if_too_long(base + seen as u64) {
            return Some(step);
        }
        self.newlines += memchr::memchr_iter(b'\n', run).count() as u64;
        self.pos = base + run.len() as u64;
        let last = run.last().copied();
        let tail = if last == delimiter {
            State::StartField
        } else {
            State::InField
        };
        match last_terminator {
            Some(i) if i + 1 == run.len() => {
                self.state = State::StartRecord;
                self.record = None;
                self.skipping_line = false;
                None
            }
            Some(i) => {
                // A record starts after the last terminator, its first line not over.
                self.state = tail;
                self.skipping_line = false;
                self.record = Some(Record {
                    start: base + i as u64 + 1,
                    first_line_end: None,
                });
                self.cut_if_too_long(base + run.len() as u64 - 1)
            }
            None => {
                self.state = tail;
                None
            }
        }
    }

    /// One byte; `Some` when the scan stops.
    fn byte(&mut self, b: u8) -> Option<Step> {
        let at = self.pos;
        if let Some(step) = self.cut_if_too_long(at) {
            return Some(step);
        }
        self.pos += 1;
        if b == b'\n' {
            self.newlines += 1;
        }
        let Dialect::Csv { delimiter, .. } = self.dialect else {
            self.state = if b == b'\n' {
                State::StartRecord
            } else {
                State::InField
            };
            return None;
        };
        let terminator = b == b'\n' || b == b'\r';
        if self.skipping_line {
            if terminator {
                self.skipping_line = false;
                self.state = State::StartRecord;
                self.record = None;
            }
            return None;
        }
        if self.state == State::StartRecord && !terminator {
            self.record = Some(Record {
                start: at,
                first_line_end: None,
            });
        }
        self.state = match (self.state, b) {
            (State::Quoted, b'"') => State::QuoteInQuoted,
            (State::Quoted, _) => State::Quoted,
            (State::QuoteInQuoted, b'"') => State::Quoted,
            (State::StartRecord | State::StartField, b'"') => State::Quoted,
            (_, b'\n' | b'\r') => State::StartRecord,
            (_, x) if x == delimiter => State::StartField,
            _ => State::InField,
        };
        if self.state == State::StartRecord {
            self.record = None;
        } else if terminator {
            let line = self.newlines + 1;
            let pos = self.pos;
            if let Some(r) = self.record.as_mut() {
                r.first_line_end.get_or_insert((pos, line));
            }
        }
        None
    }

    /// The byte at `at` comes while a record is in progress: past `max_record + 1` bytes of
    /// it, the record is longer than the decoder keeps (the decoder holds that many, and
    /// cuts the record when a byte follows them; at the end of the file it is whole). It
    /// goes on with the line after the record's start (back there when that line is over),
    /// or drops the first line to its end.
    fn cut_if_too_long(&mut self, at: u64) -> Option<Step> {
        let Dialect::Csv { max_record, .. } = self.dialect else {
            return None;
        };
        let r = self.record?;
        if at - r.start <= max_record {
            return None;
        }
        match r.first_line_end {
            Some((offset, line)) => Some(Step::Restart { offset, line }),
            None => {
                self.skipping_line = true;
                self.record = None;
                None
            }
        }
    }

    /// The end of the file: the last record ends with it, unless it is left in quotes with
    /// lines after its first (the decoder goes on with the line after its start). A `"` last
    /// in the file closes its quotes: nothing follows to make it a doubled quote.
    pub(crate) fn finish(&mut self) -> Step {
        let in_quotes = self.state == State::Quoted;
        match self.record {
            Some(Record {
                first_line_end: Some((offset, line)),
                ..
            }) if in_quotes && !self.skipping_line => Step::Restart { offset, line },
            _ => {
                self.state = State::StartRecord;
                self.skipping_line = false;
                Step::Found(self.here())
            }
        }
    }
}

/// The first record boundary at or after `target` in `file`, scanning from `from`, a record
/// boundary (the file's start, 3 after a byte-order mark, or a boundary found before).
pub(crate) fn find<F: Read + Seek>(
    file: &mut F,
    dialect: Dialect,
    target: u64,
    from: Boundary,
) -> std::io::Result<Boundary> {
    let mut scanner = Scanner::new(dialect, target, from.offset);
    scanner.restart(from.offset, from.line);
    scan_on(file, scanner)
}

/// The boundary `scanner` looks for, reading `file` from where the scanner stands (it was
/// fed the bytes before).
pub(crate) fn scan_on<F: Read + Seek>(
    file: &mut F,
    mut scanner: Scanner,
) -> std::io::Result<Boundary> {
    let mut buf = vec![0u8; 1 << 16];
    file.seek(SeekFrom::Start(scanner.pos))?;
    loop {
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let step = match n {
            0 => scanner.finish(),
            n => scanner.feed(buf.get(..n).unwrap_or_default()),
        };
        match step {
            Step::More => {}
            Step::Found(b) => return Ok(b),
            Step::Restart { offset, line } => {
                scanner.restart(offset, line);
                file.seek(SeekFrom::Start(offset))?;
            }
        }
    }
}

/// Reads `file` from where it stands up to `count` bytes further, and returns the `\n`
/// bytes among them (fewer bytes when the file ends first).
pub(crate) fn count_lines<F: Read>(file: &mut F, count: u64) -> std::io::Result<u64> {
    let mut left = count;
    let mut newlines = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = match file.read(buf.get_mut(..want).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        newlines += memchr::memchr_iter(b'\n', buf.get(..n).unwrap_or_default()).count() as u64;
        left -= n as u64;
    }
    Ok(newlines)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Dialect = Dialect::Csv {
        delimiter: b',',
        max_record: 1 << 20,
    };

    fn at(text: &str, dialect: Dialect, target: u64) -> (u64, u64) {
        let mut file = std::io::Cursor::new(text.as_bytes().to_vec());
        let b = find(&mut file, dialect, target, Boundary { offset: 0, line: 1 }).expect("reads");
        (b.offset, b.line)
    }

    /// The boundary found by feeding `text` one byte at a time (no fast path, every cut).
    fn bytewise(text: &str, dialect: Dialect, target: u64) -> (u64, u64) {
        let mut s = Scanner::new(dialect, target, 0);
        let bytes = text.as_bytes();
        let mut i = 0;
        loop {
            let step = match bytes.get(i..i + 1) {
                Some(b) => s.feed(b),
                None => s.finish(),
            };
            i += 1;
            match step {
                Step::More => {}
                Step::Found(b) => return (b.offset, b.line),
                Step::Restart { offset, line } => {
                    s.restart(offset, line);
                    i = usize::try_from(offset).expect("small");
                }
            }
        }
    }

    #[test]
    fn a_line_boundary_follows_the_first_newline_at_or_after_the_target() {
        let text = "ab\ncd\nef";
        assert_eq!(at(text, Dialect::Lines, 0), (0, 1));
        assert_eq!(at(text, Dialect::Lines, 1), (3, 2));
        assert_eq!(
            at(text, Dialect::Lines, 3),
            (3, 2),
            "already at a line start"
        );
        assert_eq!(at(text, Dialect::Lines, 4), (6, 3));
        assert_eq!(at(text, Dialect::Lines, 7), (8, 3), "the end of the file");
    }

    #[test]
    fn a_line_break_inside_quotes_is_no_boundary() {
        let text = "1,\"x\ny\"\n2,z\n";
        assert_eq!(at(text, CSV, 4), (8, 3));
        assert_eq!(
            at(text, CSV, 5),
            (8, 3),
            "right after the quoted line break"
        );
        // A doubled quote stays inside the quotes.
        let text = "1,\"a\"\"\nb\"\n2\n";
        assert_eq!(at(text, CSV, 7), (10, 3));
    }

    #[test]
    fn a_quote_inside_an_unquoted_field_is_a_plain_byte() {
        let text = "1,b\"c\n2,d\n";
        assert_eq!(at(text, CSV, 2), (6, 2));
    }

    #[test]
    fn cr_lf_and_lone_cr_end_records() {
        let text = "1,a\r\n2,b\r3,c\n";
        assert_eq!(
            at(text, CSV, 1),
            (4, 1),
            "between \\r and \\n: a blank line follows"
        );
        assert_eq!(at(text, CSV, 5), (5, 2), "after \\r\\n");
        assert_eq!(at(text, CSV, 6), (9, 2), "after a lone \\r");
    }

    #[test]
    fn a_quote_left_open_is_cut_as_the_decoder_cuts_it() {
        let long = Dialect::Csv {
            delimiter: b',',
            max_record: 12,
        };
        // Too long: the decoder goes on with the line after the record's start.
        let text = "1,\"open\n2,x\n3,y\n4,z\n";
        assert_eq!(at(text, long, 3), (8, 2));
        assert_eq!(at(text, long, 9), (12, 3));
        // Open at the end of the file: the same.
        let text = "1,\"open\n2,x\n";
        assert_eq!(at(text, CSV, 3), (8, 2));
    }

    #[test]
    fn a_record_whose_quotes_closed_lines_ago_is_cut_when_too_long() {
        // Issue 19: the quote opened on line 1 closes on line 2 (`2,"`), and `bcccc` after
        // it makes the record too long: the decoder reads on from line 2, where that quote
        // opens a field that holds the next line break. The scanner passed over `cccc`
        // outside quotes at once, and found a boundary after it.
        let max = |max_record| Dialect::Csv {
            delimiter: b',',
            max_record,
        };
        let text = "1,\"aaaaa\n2,\"bcccc\n3,d\"\n4,e\n";
        assert_eq!(at(text, max(13), 1), (9, 2), "back to line 2");
        for target in 10..=23 {
            assert_eq!(at(text, max(13), target), (23, 4), "target {target}");
            assert_eq!(bytewise(text, max(13), target), (23, 4), "target {target}");
        }
        let text = "1,\"aaaaa\r2,\"bcccc\r3,d\"\r4,e\r";
        for target in 10..=23 {
            assert_eq!(at(text, max(13), target), (23, 1), "target {target}");
        }
        // Long enough to keep, the record ends after `cccc`.
        assert_eq!(at(text, max(20), 1), (18, 1));
    }

    #[test]
    fn a_record_is_too_long_only_when_a_byte_follows_its_first_max_record_plus_one() {
        let max7 = Dialect::Csv {
            delimiter: b',',
            max_record: 7,
        };
        // Eight bytes (the bound and one) that the file's end completes: one record, whole
        // (the decoder rejects it as too long, but reads on after it, at the end).
        assert_eq!(at("1,\"a\nb\"c", max7, 4), (8, 2));
        // A byte after them: cut, from line 2 on.
        assert_eq!(at("1,\"a\nb\"c\n2,x\n", max7, 4), (5, 2));
        assert_eq!(at("1,\"a\nb\"c\n2,x\n", max7, 6), (9, 3));
    }

    #[test]
    fn a_quote_last_in_the_file_closes_its_field() {
        // Nothing follows the `"` to double it: the quoted field, two lines, ends the file.
        assert_eq!(at("1,\"a\nb\"", CSV, 4), (7, 2));
        assert_eq!(
            at("1,\"a\nb\"\"", CSV, 4),
            (5, 2),
            "a doubled quote: still open"
        );
    }

    #[test]
    fn the_boundary_does_not_depend_on_how_the_file_is_read() {
        let mut text = String::new();
        for i in 0..3000 {
            match i % 7 {
                0 => text.push_str(&format!("{i},\"q\n{i}\"\r\n")),
                1 => text.push_str(&format!("{i},\"\"\"x\",y\n\n")),
                2 => text.push_str(&format!("{i},a\"b\r")),
                _ => text.push_str(&format!("{i},plain,text\n")),
            }
        }
        let len = text.len() as u64;
        for target in (0..len).step_by(997).chain([len - 1, len]) {
            assert_eq!(
                at(&text, CSV, target),
                bytewise(&text, CSV, target),
                "target {target}"
            );
            assert_eq!(
                at(&text, Dialect::Lines, target),
                bytewise(&text, Dialect::Lines, target),
                "target {target}"
            );
        }
    }
}
