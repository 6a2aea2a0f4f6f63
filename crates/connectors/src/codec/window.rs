//! A view of the not-yet-consumed bytes of a file, spread over the carried tail of earlier
//! chunks and the current chunk, addressed by absolute file offset; and a cursor that turns
//! file offsets into line numbers by counting `\n` bytes.

use std::borrow::Cow;

/// `carry` (file bytes from offset `start`) followed directly by `chunk`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window<'a> {
    /// Bytes carried over from earlier chunks.
    pub(crate) carry: &'a [u8],
    /// File offset of `carry[0]`.
    pub(crate) start: u64,
    /// The current chunk.
    pub(crate) chunk: &'a [u8],
}

impl<'a> Window<'a> {
    /// File offset of `chunk[0]`.
    pub(crate) fn chunk_start(&self) -> u64 {
        self.start + self.carry.len() as u64
    }

    /// File offset just past the last byte.
    pub(crate) fn end(&self) -> u64 {
        self.chunk_start() + self.chunk.len() as u64
    }

    /// The two pieces of `[from, to)`: the part inside `carry` and the part inside `chunk`.
    fn pieces(&self, from: u64, to: u64) -> (&'a [u8], &'a [u8]) {
        debug_assert!(self.start <= from && from <= to && to <= self.end());
        let to = to.max(from);
        let split = self.chunk_start();
        let local = |offset: u64, base: u64, len: usize| {
            usize::try_from(offset.saturating_sub(base)).map_or(len, |o| o.min(len))
        };
        let carry = &self.carry[local(from, self.start, self.carry.len())
            ..local(to.min(split), self.start, self.carry.len())];
        let chunk = &self.chunk
            [local(from.max(split), split, self.chunk.len())..local(to, split, self.chunk.len())];
        (carry, chunk)
    }

    /// The bytes `[from, to)`, copied only when they straddle carry and chunk.
    pub(crate) fn bytes(&self, from: u64, to: u64) -> Cow<'a, [u8]> {
        match self.pieces(from, to) {
            ([], chunk) => Cow::Borrowed(chunk),
            (carry, []) => Cow::Borrowed(carry),
            (carry, chunk) => Cow::Owned([carry, chunk].concat()),
        }
    }

    /// Number of `\n` bytes in `[from, to)`.
    pub(crate) fn count_newlines(&self, from: u64, to: u64) -> u64 {
        let (carry, chunk) = self.pieces(from, to);
        (memchr::memchr_iter(b'\n', carry).count() + memchr::memchr_iter(b'\n', chunk).count())
            as u64
    }

    /// The first `\n` or `\r` in `[from, to)`, as a file offset.
    pub(crate) fn find_terminator(&self, from: u64, to: u64) -> Option<u64> {
        let (carry, chunk) = self.pieces(from, to);
        memchr::memchr2(b'\n', b'\r', carry)
            .or_else(|| memchr::memchr2(b'\n', b'\r', chunk).map(|i| carry.len() + i))
            .map(|i| from + i as u64)
    }

    /// First offset at or after `from` (and before `to`) that is not `\r` or `\n`.
    pub(crate) fn skip_terminators(&self, from: u64, to: u64) -> u64 {
        let (carry, chunk) = self.pieces(from, to);
        let blank = carry
            .iter()
            .chain(chunk)
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        from + blank as u64
    }
}

/// The line number at a file offset, advanced monotonically.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineCursor {
    /// File offset the cursor stands at.
    pos: u64,
    /// 1-based line of `pos`.
    line: u64,
}

impl Default for LineCursor {
    fn default() -> Self {
        LineCursor { pos: 0, line: 1 }
    }
}

impl LineCursor {
    /// Moves to `to` (which must not be behind the cursor nor outside `window`) and returns
    /// its line.
    pub(crate) fn advance(&mut self, window: &Window<'_>, to: u64) -> u64 {
        debug_assert!(to >= self.pos, "line cursor moved backwards");
        if to > self.pos {
            self.line += window.count_newlines(self.pos.max(window.start), to);
            self.pos = to;
        }
        self.line
    }

    /// Moves to `pos`, which is on line `line`: after bytes that left the window without
    /// being counted (a line too long to keep, whose newlines the caller counted).
    pub(crate) fn jump(&mut self, pos: u64, line: u64) {
        debug_assert!(pos >= self.pos, "line cursor moved backwards");
        *self = LineCursor { pos, line };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window<'static> = Window {
        carry: b"ab\ncd",
        start: 10,
        chunk: b"e\nfg\n",
    };

    #[test]
    fn bytes_are_addressed_by_file_offset_across_carry_and_chunk() {
        assert_eq!(&*W.bytes(10, 12), b"ab");
        assert_eq!(&*W.bytes(13, 17), b"cde\n");
        assert_eq!(&*W.bytes(16, 20), b"\nfg\n");
        assert_eq!(&*W.bytes(15, 15), b"");
        assert_eq!(W.end(), 20);
    }

    #[test]
    fn terminators_are_found_across_carry_and_chunk() {
        assert_eq!(W.find_terminator(10, 20), Some(12));
        assert_eq!(W.find_terminator(13, 20), Some(16));
        assert_eq!(W.find_terminator(17, 19), None);
        let w = Window {
            carry: b"ab",
            start: 0,
            chunk: b"c\rd",
        };
        assert_eq!(w.find_terminator(1, 5), Some(3));
    }

    #[test]
    fn the_cursor_counts_newlines_up_to_an_offset() {
        let mut cursor = LineCursor { pos: 10, line: 4 };
        assert_eq!(cursor.advance(&W, 12), 4);
        assert_eq!(cursor.advance(&W, 13), 5);
        assert_eq!(cursor.advance(&W, 20), 7);
    }

    #[test]
    fn leading_terminators_are_skipped() {
        let w = Window {
            carry: b"\r",
            start: 0,
            chunk: b"\n\nx",
        };
        assert_eq!(w.skip_terminators(0, 4), 3);
        assert_eq!(w.skip_terminators(0, 2), 2);
    }
}
