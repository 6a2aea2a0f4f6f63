//! Text of the SQL source with its positions, so that errors in expressions taken from a
//! query point at the right line and column of the `.sql` file.

use anduin_types::Pos;
use sqlparser::tokenizer::{Location, Span};

use crate::Text;

/// The SQL source, indexed by line.
pub(crate) struct Source<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self {
            lines: src.split('\n').collect(),
        }
    }

    /// The text between the start and the end of `span`, with the position of each char.
    pub(crate) fn text(&self, span: Span) -> Option<Text> {
        let (s, e) = (span.start, span.end);
        if s.line == 0 || e.line == 0 || (e.line, e.column) < (s.line, s.column) {
            return None;
        }
        let mut value = String::new();
        let mut positions = Vec::new();
        for line_no in s.line..=e.line {
            let line = self.lines.get(usize::try_from(line_no).ok()? - 1)?;
            let from = if line_no == s.line { s.column } else { 1 };
            for (i, c) in line.chars().enumerate() {
                let col = i as u64 + 1;
                if col < from || (line_no == e.line && col >= e.column) {
                    continue;
                }
                value.push(c);
                positions.push(pos(Location::new(line_no, col)));
            }
            if line_no < e.line {
                value.push('\n');
                positions.push(pos(Location::new(line_no, line.chars().count() as u64 + 1)));
            }
        }
        let start = positions.first().copied().unwrap_or_default();
        Some(Text::with_positions(value, positions, start))
    }
}

/// A sqlparser location as a position.
pub(crate) fn pos(l: Location) -> Pos {
    Pos::new(
        u32::try_from(l.line).unwrap_or(u32::MAX),
        u32::try_from(l.column).unwrap_or(u32::MAX),
    )
}
