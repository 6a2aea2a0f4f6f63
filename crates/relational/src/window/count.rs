//! Count windows: every `size` rows of a key (in arrival order) form a window, emitted at
//! once. Its start is the earliest event time of its rows and its end one millisecond after
//! the latest (rows may arrive out of order), so that every row of it is in `[start, end)`.
//! A window still short of `size` rows at the end of input is not emitted.
//! A checkpoint writes each open window that changed since the previous one as a backend entry
//! (under its key and start) and deletes the entries of windows that fired.

use std::collections::HashMap;

use ahash::RandomState;
use arrow::row::OwnedRow;

use super::accs::Accs;
use super::entries::{split_value, sub_key, value, Restored, StateRows, COUNT};
use super::input::Prepared;
use super::output::Results;
use super::session::{corrupt, one_row};
use super::WindowSetup;
use anduin_operator_api::OperatorError;
use anduin_state::KeyedTable;

/// The open window of one key.
#[derive(Debug)]
pub(crate) struct Counted {
    pub rows: u64,
    /// The earliest event time of its rows (the start it is stored under).
    pub earliest: i64,
    /// The latest event time of its rows.
    pub latest: i64,
    /// One group (id 0).
    pub accs: Accs,
    /// The start it has an entry in the backend under, if any.
    stored: Option<i64>,
    /// Whether it changed since the last checkpoint.
    changed: bool,
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
                        earliest: ts,
                        latest: ts,
                        accs: Accs::new(&setup.aggs, &setup.name)?,
                        stored: None,
                        changed: true,
                    },
                )),
            };
            let (key, w) = entry;
            if w.rows == 0 {
                (w.earliest, w.latest) = (ts, ts);
            }
            w.earliest = w.earliest.min(ts);
            w.latest = w.latest.max(ts);
            w.rows += 1;
            w.changed = true;
            w.accs
                .update(&p.inputs.slice(i, 1), &[0], 1)
                .map_err(|e| e.in_window(setup, "count window", w.earliest, |_| Some(key.row())))?;
            if w.rows == self.size {
                let values = w.accs.evaluate().map_err(|e| {
                    e.in_window(setup, "count window", w.earliest, |_| Some(key.row()))
                })?;
                let keys = setup.codec.columns([key.row()], &setup.name)?;
                // The latest time is below i64::MAX: a row at i64::MAX is in no window.
                results.add(w.earliest, w.latest + 1, keys, values);
                w.rows = 0;
                w.accs = Accs::new(&setup.aggs, &setup.name)?;
            }
        }
        Ok(results)
    }
    /// Writes the windows that changed since the last checkpoint to the table, deleting the
    /// entries of those that fired.
    pub(crate) fn save(
        &mut self,
        table: &mut KeyedTable,
        state_rows: &StateRows,
        setup: &WindowSetup,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        for (row, w) in self.by_key.values_mut().filter(|(_, w)| w.changed) {
            let key = setup.codec.stored(row.row());
            if let Some(old) = w.stored.filter(|old| w.rows == 0 || *old != w.earliest) {
                table.delete(key, &sub_key(COUNT, old))?;
                w.stored = None;
            }
            if w.rows > 0 {
                // Taking the state empties the accumulator: merge it straight back.
                let states = w.accs.take_state(name)?;
                w.accs.merge(&states, &[0], 1).map_err(|e| {
                    e.in_window(setup, "count window", w.earliest, |_| Some(row.row()))
                })?;
                let rows = state_rows.encode(&states, 1, name)?;
                let v = value(&[w.rows, w.latest as u64], rows.row(0).data());
                table.put(key, &sub_key(COUNT, w.earliest), &v)?;
                w.stored = Some(w.earliest);
            }
            w.changed = false;
        }
        Ok(())
    }

    /// Rebuilds the open windows from the checkpointed entries.
    pub(crate) fn restore(
        &mut self,
        entries: Vec<Restored>,
        state_rows: &StateRows,
        setup: &WindowSetup,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        let mut fixed = Vec::with_capacity(entries.len());
        let mut states = Vec::with_capacity(entries.len());
        for e in &entries {
            let (numbers, state) = split_value::<2>(&e.value).ok_or_else(|| corrupt(name))?;
            fixed.push(numbers);
            states.push(state);
        }
        let states = state_rows.decode(states, name)?;
        let keys = setup
            .codec
            .rows_of_stored(entries.iter().map(|e| &e.key[..]), name)?;
        for (i, (e, [rows, latest])) in entries.iter().zip(fixed).enumerate() {
            let row = keys.row(i);
            let mut accs = Accs::new(&setup.aggs, name)?;
            accs.merge(&one_row(&states, i), &[0], 1)
                .map_err(|err| err.in_window(setup, "count window", e.start, |_| Some(row)))?;
            self.by_key.insert(
                row.as_ref().into(),
                (
                    row.owned(),
                    Counted {
                        rows,
                        earliest: e.start,
                        latest: latest as i64,
                        accs,
                        stored: Some(e.start),
                        changed: false,
                    },
                ),
            );
        }
        Ok(())
    }
}
