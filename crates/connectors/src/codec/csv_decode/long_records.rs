//! The CSV decoder's handling of records longer than its bound and of a quote that the end of
//! the file leaves open: the record's first line is rejected and decoding starts again on the
//! line after it, from bytes the decoder still holds (at most the bound and a chunk); a first
//! line that is itself too long is dropped as it arrives ([`Skipping`]).

use std::borrow::Cow;

use super::super::long_record::{csv_too_long, csv_unclosed_quote, cut_text, Skipping, TEXT_MAX};
use super::super::window::Window;
use super::super::{CodecError, Rejected};
use super::CsvDecoder;

impl CsvDecoder {
    /// After the bytes of the current file before `offset` were fed again (a restore from a
    /// checkpoint whose position is `offset`), stands at `offset`. The decoder may have a
    /// record in progress there that the earlier run rejected as too long from its first line
    /// on (it had seen the bytes after `offset`, up to the bound, which decided it): a quoted
    /// field spanning lines, `offset` at the start of one of them. Everything before `offset`
    /// was decided then, so that record is forgotten. Returns whether the decoder stands at
    /// `offset`: not when it is past it, holds less than the bytes up to it, or `offset` is
    /// not at the start of a line.
    pub fn resume_at(&mut self, offset: u64) -> bool {
        if self.file.consumed == offset || self.file.skipping.is_some() {
            return self.file.consumed == offset && self.file.skipping.is_none();
        }
        let carry = std::mem::take(&mut self.file.carry);
        let window = Window {
            carry: &carry,
            start: self.file.consumed,
            chunk: &[],
        };
        let line_start = offset > window.start
            && offset <= window.end()
            && matches!(&*window.bytes(offset - 1, offset), b"\n" | b"\r");
        if !line_start {
            self.file.carry = carry;
            return false;
        }
        self.file.lines.advance(&window, offset);
        self.file.consumed = offset;
        self.splitter.reset(offset);
        true
    }

    /// Feeds file bytes that follow the BOM: drops the rest of a line too long to keep,
    /// splits and decodes, and starts again after a record that grew too long.
    pub(super) fn feed_text(
        &mut self,
        chunk: Cow<'_, [u8]>,
        rejected: &mut Vec<Rejected>,
    ) -> Result<(), CodecError> {
        let mut input = chunk;
        let mut from = 0;
        loop {
            if let Some(skip) = self.file.skipping.as_mut() {
                let Some(i) = skip.scan(&input[from..], true) else {
                    return Ok(());
                };
                let newline = input[from + i] == b'\n';
                from += i + 1;
                self.end_skip(newline, rejected);
            }
            match self.split_and_decode(&input[from..], rejected)? {
                None => return Ok(()),
                Some(again) => {
                    input = Cow::Owned(again);
                    from = 0;
                }
            }
        }
    }

    /// The line too long to keep has ended (with `\n` if `newline`): rejects it and stands
    /// after its terminator.
    fn end_skip(&mut self, newline: bool, rejected: &mut Vec<Rejected>) {
        let Some(skip) = self.file.skipping.take() else {
            return;
        };
        rejected.push(skip.reject(&self.source, self.max_record));
        let after = skip.pos + 1;
        self.file.consumed = after;
        self.file.lines.jump(after, skip.line + u64::from(newline));
        self.splitter.reset(after);
    }

    /// The record in progress grew past the bound when the splitter had scanned up to file
    /// offset `scanned`: rejects its first line, or starts dropping that line if it is
    /// itself too long. Returns the bytes to decode next (from the line after, or from where
    /// the scan stopped while dropping).
    pub(super) fn cut_long_record(
        &mut self,
        window: &Window<'_>,
        scanned: u64,
        rejected: &mut Vec<Rejected>,
    ) -> Vec<u8> {
        let max = self.max_record as u64;
        let start = window.skip_terminators(self.file.consumed, scanned);
        if scanned - start <= max {
            // Only the blank lines before it made the record look long.
            return self.restart_at(window, start);
        }
        let line = self.file.lines.advance(window, start);
        let text_end = scanned.min(start + TEXT_MAX as u64);
        match window.find_terminator(start, scanned) {
            Some(end) => {
                rejected.push(Rejected {
                    source: self.source.clone(),
                    line,
                    reason: csv_too_long(self.max_record),
                    record: cut_text(&window.bytes(start, end.min(text_end))),
                });
                self.restart_at(window, end + 1)
            }
            None => {
                let prefix = window.bytes(start, text_end);
                self.file.skipping = Some(Skipping::new(line, start, &prefix, scanned));
                self.file.consumed = start;
                self.splitter.reset(start);
                window.bytes(scanned, window.end()).into_owned()
            }
        }
    }

    /// The file ends inside a quoted field: rejects the record's first line and returns the
    /// lines after it, to decode again.
    pub(super) fn cut_unclosed_quote(
        &mut self,
        window: &Window<'_>,
        rejected: &mut Vec<Rejected>,
    ) -> Vec<u8> {
        let start = window.skip_terminators(self.file.consumed, window.end());
        let line = self.file.lines.advance(window, start);
        let end = window.find_terminator(start, window.end());
        let text_end = end.unwrap_or(window.end()).min(start + TEXT_MAX as u64);
        rejected.push(Rejected {
            source: self.source.clone(),
            line,
            reason: csv_unclosed_quote(),
            record: cut_text(&window.bytes(start, text_end)),
        });
        self.restart_at(window, end.map_or(window.end(), |e| e + 1))
    }

    /// Forgets the record in progress and stands at file offset `at`; returns the bytes of
    /// `window` from there, to decode again.
    fn restart_at(&mut self, window: &Window<'_>, at: u64) -> Vec<u8> {
        self.file.lines.advance(window, at);
        self.file.consumed = at;
        self.splitter.reset(at);
        window.bytes(at, window.end()).into_owned()
    }
}
