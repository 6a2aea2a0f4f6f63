//! Text that remembers where each of its characters came from in the query file.

use anduin_types::Pos;

/// A string value with the source position of each character, so that an error found inside
/// a value (an unknown column in an expression) can point at the exact line and column.
#[derive(Clone, Debug, Default)]
pub struct Text {
    value: String,
    /// Position of each char of `value` in the file; empty when unknown (JSON input).
    positions: Vec<Pos>,
    /// Position of the token the text came from (the opening quote of a string).
    start: Pos,
    /// Names the text uses that the planner made, each with the name as the query writes
    /// it (a join's `b_price` is the query's `b.price`): see [`Text::as_written`].
    written: Vec<(String, String)>,
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Text {}

impl Text {
    /// Text at a known position whose characters follow each other on one line.
    pub fn at(value: impl Into<String>, start: Pos) -> Self {
        let value = value.into();
        let positions = (0..value.chars().count()).map(|i| start.right(i)).collect();
        Self {
            value,
            positions,
            start,
            written: Vec::new(),
        }
    }

    /// Text with a position for every character.
    pub(crate) fn with_positions(value: String, positions: Vec<Pos>, start: Pos) -> Self {
        debug_assert_eq!(value.chars().count(), positions.len());
        Self {
            value,
            positions,
            start,
            written: Vec::new(),
        }
    }

    /// Text whose position is unknown (read from JSON, or made by a program).
    pub fn unplaced(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            positions: Vec::new(),
            start: Pos::default(),
            written: Vec::new(),
        }
    }

    /// The text, whose names `names` (pairs of the name in the text and the name as the query
    /// writes it) the planner made: messages about it say the written ones.
    pub fn with_written_names(mut self, names: Vec<(String, String)>) -> Self {
        self.written = names;
        self
    }

    /// `message` (about this text) with each name the planner made in the text as the query
    /// writes it, where it stands as a whole name between backticks: `` type mismatch: `b_b`
    /// is string `` becomes `` type mismatch: `b.b` is string ``.
    pub fn as_written(&self, message: &str) -> String {
        if self.written.is_empty() {
            return message.to_string();
        }
        // Odd pieces are between backticks.
        message
            .split('`')
            .enumerate()
            .map(|(i, piece)| match i % 2 {
                1 => self.names_written(piece),
                _ => piece.to_string(),
            })
            .collect::<Vec<_>>()
            .join("`")
    }

    /// `code` with each name (a run of letters, digits, `_` and `.`) the planner made as the
    /// query writes it, in one pass.
    fn names_written(&self, code: &str) -> String {
        let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
        let mut out = String::with_capacity(code.len());
        let mut rest = code;
        while let Some(start) = rest.find(is_name) {
            out.push_str(&rest[..start]);
            let name = &rest[start..];
            let end = name.find(|c: char| !is_name(c)).unwrap_or(name.len());
            let (name, after) = name.split_at(end);
            match self.written.iter().find(|(made, _)| made == name) {
                Some((_, written)) => out.push_str(written),
                None => out.push_str(name),
            }
            rest = after;
        }
        out.push_str(rest);
        out
    }

    /// The text itself.
    pub fn as_str(&self) -> &str {
        &self.value
    }

    /// Where the text starts in the file (for a string, its opening quote).
    pub fn pos(&self) -> Pos {
        self.start
    }

    /// Where the character at byte `offset` of the text came from. Offsets past the end map
    /// to just after the last character.
    pub fn pos_at_byte(&self, offset: usize) -> Pos {
        if self.positions.is_empty() {
            return self.start;
        }
        let idx = self
            .value
            .char_indices()
            .position(|(b, _)| b >= offset)
            .unwrap_or(self.positions.len());
        match self.positions.get(idx) {
            Some(p) => *p,
            None => self
                .positions
                .last()
                .map(|p| p.right(1))
                .unwrap_or(self.start),
        }
    }

    /// Where the character at (1-based) `line`, `col` of the text came from, as a parser of
    /// the text's own content reports it.
    pub fn pos_at_line_col(&self, line: u64, col: u64) -> Pos {
        let mut offset = 0usize;
        let mut cur_line = 1u64;
        for (b, c) in self.value.char_indices() {
            if cur_line == line {
                offset = b;
                break;
            }
            if c == '\n' {
                cur_line += 1;
            }
            offset = b + c.len_utf8();
        }
        let line_text = &self.value[offset..];
        let in_line = line_text
            .char_indices()
            .nth(usize::try_from(col.saturating_sub(1)).unwrap_or(usize::MAX))
            .map(|(b, _)| b)
            .unwrap_or(line_text.len());
        self.pos_at_byte(offset + in_line)
    }

    pub(crate) fn positions(&self) -> &[Pos] {
        &self.positions
    }

    /// Characters `from..to` of the text.
    pub(crate) fn sub(&self, from: usize, to: usize) -> Text {
        let value: String = self
            .value
            .chars()
            .skip(from)
            .take(to.saturating_sub(from))
            .collect();
        if self.positions.is_empty() {
            return Text::unplaced(value).with_written_names(self.written.clone());
        }
        let positions: Vec<Pos> = self
            .positions
            .iter()
            .skip(from)
            .take(to.saturating_sub(from))
            .copied()
            .collect();
        let start = positions.first().copied().unwrap_or(self.start);
        Text::with_positions(value, positions, start).with_written_names(self.written.clone())
    }

    /// `parts` joined by `sep`; the separator's characters take the position of the part
    /// after them.
    pub(crate) fn join(parts: &[Text], sep: &str) -> Text {
        let mut value = String::new();
        let mut positions = Vec::new();
        let placed = parts
            .iter()
            .all(|p| !p.positions.is_empty() || p.value.is_empty());
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                value.push_str(sep);
                positions.extend(std::iter::repeat_n(p.start, sep.chars().count()));
            }
            value.push_str(&p.value);
            positions.extend_from_slice(&p.positions);
        }
        let start = parts.first().map(|p| p.start).unwrap_or_default();
        let mut written: Vec<(String, String)> = Vec::new();
        for pair in parts.iter().flat_map(|p| &p.written) {
            if !written.contains(pair) {
                written.push(pair.clone());
            }
        }
        let joined = if placed {
            Text::with_positions(value, positions, start)
        } else {
            Text::unplaced(value)
        };
        joined.with_written_names(written)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_columns_on_one_line() {
        let t = Text::at("value < 42", Pos::new(7, 20));
        assert_eq!(t.pos_at_byte(0), Pos::new(7, 20));
        assert_eq!(t.pos_at_byte(8), Pos::new(7, 28));
        assert_eq!(t.pos_at_line_col(1, 9), Pos::new(7, 28));
        assert_eq!(t.pos_at_byte(100), Pos::new(7, 30));
    }

    #[test]
    fn messages_name_what_the_planner_made_as_the_query_writes_it() {
        let t = Text::at("\"b_b\" = 1 AND \"a\" > 2", Pos::new(1, 1)).with_written_names(vec![
            ("b_b".into(), "b.b".into()),
            ("a".into(), "b.a".into()),
            ("ts".into(), "a.ts".into()),
        ]);
        assert_eq!(
            t.as_written("type mismatch: `b_b` is string but `1` is int"),
            "type mismatch: `b.b` is string but `1` is int"
        );
        assert_eq!(
            t.as_written("in `ts BETWEEN b.ts AND a`: `a` is a column, a b_b outside"),
            "in `a.ts BETWEEN b.ts AND b.a`: `b.a` is a column, a b_b outside",
            "whole names between backticks only, each once"
        );
        assert_eq!(t.as_written("`a_b_b`, `b_bx`"), "`a_b_b`, `b_bx`");
        let joined = Text::join(&[t, Text::at("x", Pos::new(1, 9))], " AND ");
        assert_eq!(joined.as_written("`b_b`"), "`b.b`", "a join keeps them");
    }

    #[test]
    fn unplaced_text_has_no_position() {
        assert!(!Text::unplaced("x").pos_at_byte(0).is_known());
    }
}
