//! Where each row of a batch was read: the input's name and the 1-based line its record
//! starts on. A source that can tell ([`crate::Source::take_origins`]) hands them along with
//! its batches, and the operators fused after it keep them in step with their rows, so that a
//! row rejected there names the input line it came from. Rows that crossed a channel to
//! another task, or that an operator made (a window's results), have none.

use std::sync::Arc;

use arrow::array::{Array as _, BooleanArray};

/// The origin of every row of one batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowOrigins {
    /// 1-based line of each row.
    lines: Vec<u64>,
    /// `(first row, input name)` of each run of rows read from one input, in row order.
    inputs: Vec<(usize, Arc<str>)>,
}

impl RowOrigins {
    /// Rows read from `input`, on `lines`.
    pub fn new(input: Arc<str>, lines: Vec<u64>) -> Self {
        let inputs = if lines.is_empty() {
            Vec::new()
        } else {
            vec![(0, input)]
        };
        Self { lines, inputs }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The input and line of row `row`.
    pub fn get(&self, row: usize) -> Option<(&str, u64)> {
        let line = *self.lines.get(row)?;
        let run = self.inputs.partition_point(|(first, _)| *first <= row);
        let (_, input) = self.inputs.get(run.checked_sub(1)?)?;
        Some((input, line))
    }

    /// Appends the origins of the rows of a batch that follows.
    pub fn append(&mut self, other: RowOrigins) {
        let base = self.lines.len();
        for (first, input) in other.inputs {
            if self.inputs.last().is_some_and(|(_, last)| *last == input) {
                continue;
            }
            self.inputs.push((base + first, input));
        }
        self.lines.extend(other.lines);
    }

    /// The origins of rows `offset..offset + len`.
    pub fn slice(&self, offset: usize, len: usize) -> RowOrigins {
        let end = (offset + len).min(self.lines.len());
        let offset = offset.min(end);
        self.select((offset..end).map(|row| (row, true)))
    }

    /// The origins of the rows that `keep` keeps (a null keeps nothing), as
    /// [`arrow::compute::filter`] keeps them.
    pub fn filter(&self, keep: &BooleanArray) -> RowOrigins {
        self.select(
            (0..self.lines.len().min(keep.len()))
                .map(|row| (row, keep.is_valid(row) && keep.value(row))),
        )
    }

    fn select(&self, rows: impl Iterator<Item = (usize, bool)>) -> RowOrigins {
        let mut out = RowOrigins::default();
        let mut run = 0;
        for (row, kept) in rows {
            if !kept {
                continue;
            }
            while self
                .inputs
                .get(run + 1)
                .is_some_and(|(first, _)| *first <= row)
            {
                run += 1;
            }
            if let Some((_, input)) = self.inputs.get(run) {
                if out
                    .inputs
                    .last()
                    .is_none_or(|(_, last)| !Arc::ptr_eq(last, input))
                {
                    out.inputs.push((out.lines.len(), Arc::clone(input)));
                }
            }
            out.lines.push(self.lines[row]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_files() -> RowOrigins {
        let mut o = RowOrigins::new("a.csv".into(), vec![2, 3, 5]);
        o.append(RowOrigins::new("b.csv".into(), vec![2, 4]));
        o
    }

    #[test]
    fn rows_keep_their_input_and_line_through_append_slice_and_filter() {
        let o = two_files();
        assert_eq!(o.len(), 5);
        assert_eq!(o.get(2), Some(("a.csv", 5)));
        assert_eq!(o.get(3), Some(("b.csv", 2)));
        assert_eq!(o.get(5), None);
        let s = o.slice(2, 2);
        assert_eq!(
            (s.get(0), s.get(1)),
            (Some(("a.csv", 5)), Some(("b.csv", 2)))
        );
        let f = o.filter(&BooleanArray::from(vec![
            Some(false),
            None,
            Some(true),
            Some(false),
            Some(true),
        ]));
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f.get(0), f.get(1)),
            (Some(("a.csv", 5)), Some(("b.csv", 4)))
        );
        assert_eq!(o.slice(4, 10).get(0), Some(("b.csv", 4)));
        assert!(o.slice(9, 2).is_empty());
    }
}
