//! Where each row of a batch was read: the input's name and the 1-based line its record
//! starts on. A source that can tell ([`crate::Source::take_origins`]) hands them along with
//! its batches, and the operators fused after it keep them in step with their rows, so that a
//! row rejected there names the input line it came from. Rows that crossed a channel to
//! another task, or that an operator made (a window's results), have none.

use std::sync::Arc;

use arrow::array::{Array as _, BooleanArray, UInt64Array};
use arrow::buffer::ScalarBuffer;

/// The origin of every row of one batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowOrigins {
    /// 1-based line of each row (sliced without copying, filtered with Arrow's kernel).
    lines: ScalarBuffer<u64>,
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
        Self {
            lines: ScalarBuffer::from(lines),
            inputs,
        }
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
        if base == 0 {
            self.lines = other.lines;
        } else {
            let mut lines = Vec::with_capacity(base + other.lines.len());
            lines.extend_from_slice(&self.lines);
            lines.extend_from_slice(&other.lines);
            self.lines = ScalarBuffer::from(lines);
        }
    }

    /// The origins of rows `offset..offset + len` (without copying).
    pub fn slice(&self, offset: usize, len: usize) -> RowOrigins {
        let end = offset.saturating_add(len).min(self.lines.len());
        let offset = offset.min(end);
        let mut inputs = Vec::new();
        for (i, (first, input)) in self.inputs.iter().enumerate() {
            let next = self.inputs.get(i + 1).map_or(usize::MAX, |(f, _)| *f);
            if next > offset && *first < end {
                inputs.push((first.saturating_sub(offset), Arc::clone(input)));
            }
        }
        RowOrigins {
            lines: self.lines.slice(offset, end - offset),
            inputs,
        }
    }

    /// The origins of the rows that `keep` keeps (a null keeps nothing), as
    /// [`arrow::compute::filter`] keeps them.
    pub fn filter(&self, keep: &BooleanArray) -> RowOrigins {
        if keep.len() != self.lines.len() {
            // Not the rows of this batch (a bug): better no origins than wrong ones.
            return RowOrigins::default();
        }
        let lines = UInt64Array::new(self.lines.clone(), None);
        let Ok(kept) = arrow::compute::filter(&lines, keep) else {
            return RowOrigins::default();
        };
        let kept = kept
            .as_any()
            .downcast_ref::<UInt64Array>()
            .map(|a| a.values().clone())
            .unwrap_or_default();
        let mut inputs: Vec<(usize, Arc<str>)> = Vec::new();
        for (i, (first, input)) in self.inputs.iter().enumerate() {
            let end = self.inputs.get(i + 1).map_or(keep.len(), |(f, _)| *f);
            if keep.slice(*first, end - first).true_count() > 0 {
                let before = keep.slice(0, *first).true_count();
                inputs.push((before, Arc::clone(input)));
            }
        }
        RowOrigins {
            lines: kept,
            inputs,
        }
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
