//! Count windows: every `size` rows of a key (in arrival order) form a window, emitted at
//! once. Its start is the event time of its first row and its end one millisecond after its
//! last. A window still short of `size` rows at the end of input is not emitted.

use std::collections::HashMap;

use ahash::RandomState;
use arrow::row::OwnedRow;

use super::accs::Accs;
use super::input::Prepared;
use super::output::Results;
use super::WindowSetup;
use crate::OperatorError;

/// The open window of one key.
#[derive(Debug)]
pub(crate) struct Counted {
    pub rows: u64,
    pub first: i64,
    pub last: i64,
    /// One group (id 0).
    pub accs: Accs,
}

/// The open windows, per key.
#[derive(Debug)]
pub(crate) struct Counting {
    pub size: u64,
    pub by_key: HashMap<Box<[u8]>, (OwnedRow, Counted), RandomState>,
}

impl Counting {
    pub(crate) fn new(size: u64) -> Self {
        Self {
            size,
            by_key: HashMap::with_hasher(RandomState::with_seeds(9, 10, 11, 12)),
        }
    }

    /// Adds rows; returns the windows they complete.
    pub(crate) fn add(
        &mut self,
        p: &Prepared,
        setup: &WindowSetup,
    ) -> Result<Results, OperatorError> {
        let mut results = Results::default();
        for i in 0..p.times.len() {
            let ts = p.times[i];
            let row = p.keys.row(i);
            let entry = match self.by_key.entry(row.as_ref().into()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert((
                    row.owned(),
                    Counted {
                        rows: 0,
                        first: ts,
                        last: ts,
                        accs: Accs::new(&setup.aggs, &setup.name)?,
                    },
                )),
            };
            let (key, w) = entry;
            if w.rows == 0 {
                w.first = ts;
            }
            w.last = ts;
            w.rows += 1;
            w.accs.update(&p.inputs.slice(i, 1), &[0], 1, &setup.name)?;
            if w.rows == self.size {
                let values = w.accs.evaluate(&setup.name)?;
                let keys = setup.codec.columns([key.row()], &setup.name)?;
                results.add(w.first, w.last + 1, keys, values);
                w.rows = 0;
                w.accs = Accs::new(&setup.aggs, &setup.name)?;
            }
        }
        Ok(results)
    }
}
