//! Session windows: per key, rows whose windows `[ts, ts + gap)` overlap or touch form one
//! session, `[first row, last row + gap)`; a session fires when the cutoff (the watermark less
//! the allowed lateness, `running.rs`) is past its end.
//! A checkpoint writes each session that changed since the previous one as a backend entry
//! (under its key and start) and deletes the entries of sessions that fired or merged away.

use std::collections::HashMap;

use ahash::RandomState;
use arrow::array::ArrayRef;
use arrow::row::OwnedRow;

use super::accs::Accs;
use super::entries::{split_value, sub_key, value, Restored, StateRows, SESSION};
use super::input::Prepared;
use super::output::Results;
use super::WindowSetup;
use anduin_operator_api::OperatorError;
use anduin_state::KeyedTable;

/// One open session of a key.
#[derive(Debug)]
pub(crate) struct Session {
    pub start: i64,
    pub end: i64,
    /// One group (id 0).
    pub accs: Accs,
    /// The start it has an entry in the backend under, if any.
    stored: Option<i64>,
    /// Whether it changed since the last checkpoint.
    changed: bool,
}

/// The open sessions, per key.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub gap: i64,
    pub by_key: HashMap<Box<[u8]>, (OwnedRow, Vec<Session>), RandomState>,
    /// The checkpointed entries (key, start) of sessions gone since the last checkpoint.
    gone: Vec<(Box<[u8]>, i64)>,
}

impl Sessions {
    pub(crate) fn new(gap: i64) -> Self {
        Self {
            gap,
            by_key: HashMap::with_hasher(RandomState::with_seeds(5, 6, 7, 8)),
            gone: Vec::new(),
        }
    }

    /// Adds on-time rows, merging the sessions each row joins.
    pub(crate) fn add(&mut self, p: &Prepared, setup: &WindowSetup) -> Result<(), OperatorError> {
        for i in 0..p.times.len() {
            let ts = p.times[i];
            let (lo, hi) = (ts, ts.saturating_add(self.gap));
            let row = p.keys.row(i);
            let (_, sessions) = self
                .by_key
                .entry(row.as_ref().into())
                .or_insert_with(|| (row.owned(), Vec::new()));
            // Every session that overlaps or touches [lo, hi) merges with the row.
            let mut joined: Vec<Session> = Vec::new();
            let mut k = 0;
            while k < sessions.len() {
                if sessions[k].start <= hi && lo <= sessions[k].end {
                    joined.push(sessions.swap_remove(k));
                } else {
                    k += 1;
                }
            }
            let mut target = match joined.pop() {
                Some(s) => s,
                None => Session {
                    start: lo,
                    end: hi,
                    accs: Accs::new(&setup.aggs, &setup.name)?,
                    stored: None,
                    changed: true,
                },
            };
            for mut other in joined {
                if let Some(start) = other.stored {
                    self.gone.push((setup.codec.stored(row).into(), start));
                }
                let state = other.accs.take_state(&setup.name)?;
                target.accs.merge(&state, &[0], 1).map_err(|e| {
                    e.in_window(setup, "session", target.start.min(other.start), |_| {
                        Some(row)
                    })
                })?;
                target.start = target.start.min(other.start);
                target.end = target.end.max(other.end);
            }
            target.start = target.start.min(lo);
            target.end = target.end.max(hi);
            target.changed = true;
            target
                .accs
                .update(&p.inputs.slice(i, 1), &[0], 1)
                .map_err(|e| e.in_window(setup, "session", target.start, |_| Some(row)))?;
            sessions.push(target);
        }
        Ok(())
    }

    /// Fires every session that ends before `cutoff`. (A session ending exactly at the
    /// cutoff stays open: a row at that time, which is not late, still touches it.)
    ///
    /// Sessions come out in the order of their ends, then keys: the order in which a
    /// sequence of cutoffs closes them, whatever the cutoffs and the map's own order, so
    /// that every run (restored from a checkpoint or not) emits them in one order.
    pub(crate) fn fire(
        &mut self,
        cutoff: i64,
        setup: &WindowSetup,
    ) -> Result<Results, OperatorError> {
        let mut fired: Vec<(i64, OwnedRow, i64, Vec<ArrayRef>)> = Vec::new();
        let mut emptied = Vec::new();
        for (bytes, (key, sessions)) in self.by_key.iter_mut() {
            let mut k = 0;
            while k < sessions.len() {
                if sessions[k].end < cutoff || cutoff == i64::MAX {
                    let mut s = sessions.swap_remove(k);
                    if let Some(start) = s.stored {
                        self.gone
                            .push((setup.codec.stored(key.row()).into(), start));
                    }
                    let values = s
                        .accs
                        .evaluate()
                        .map_err(|e| e.in_window(setup, "session", s.start, |_| Some(key.row())))?;
                    fired.push((s.end, key.clone(), s.start, values));
                } else {
                    k += 1;
                }
            }
            if sessions.is_empty() {
                emptied.push(bytes.clone());
            }
        }
        for b in emptied {
            self.by_key.remove(&b);
        }
        fired.sort_unstable_by(|a, b| (a.0, a.1.row(), a.2).cmp(&(b.0, b.1.row(), b.2)));
        let mut results = Results::default();
        for (end, key, start, values) in fired {
            let keys = setup.codec.columns([key.row()], &setup.name)?;
            results.add(start, end, keys, values);
        }
        Ok(results)
    }
    /// Writes the sessions that changed since the last checkpoint to the table, and
    /// deletes the entries of the sessions gone.
    pub(crate) fn save(
        &mut self,
        table: &mut KeyedTable,
        state_rows: &StateRows,
        setup: &WindowSetup,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        for (key, start) in self.gone.drain(..) {
            table.delete(&key, &sub_key(SESSION, start))?;
        }
        for (row, sessions) in self.by_key.values_mut() {
            let key = setup.codec.stored(row.row());
            for s in sessions.iter_mut().filter(|s| s.changed) {
                if let Some(old) = s.stored.filter(|old| *old != s.start) {
                    table.delete(key, &sub_key(SESSION, old))?;
                }
                // Taking the state empties the accumulator: merge it straight back.
                let states = s.accs.take_state(name)?;
                s.accs
                    .merge(&states, &[0], 1)
                    .map_err(|e| e.in_window(setup, "session", s.start, |_| Some(row.row())))?;
                let rows = state_rows.encode(&states, 1, name)?;
                let v = value(&[s.end as u64], rows.row(0).data());
                table.put(key, &sub_key(SESSION, s.start), &v)?;
                s.stored = Some(s.start);
                s.changed = false;
            }
        }
        Ok(())
    }

    /// Rebuilds the sessions from the checkpointed entries.
    pub(crate) fn restore(
        &mut self,
        entries: Vec<Restored>,
        state_rows: &StateRows,
        setup: &WindowSetup,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        let mut ends = Vec::with_capacity(entries.len());
        let mut states = Vec::with_capacity(entries.len());
        for e in &entries {
            let ([end], state) = split_value::<1>(&e.value).ok_or_else(|| corrupt(name))?;
            ends.push(end as i64);
            states.push(state);
        }
        let states = state_rows.decode(states, name)?;
        let keys = setup
            .codec
            .rows_of_stored(entries.iter().map(|e| &e.key[..]), name)?;
        for (i, (e, end)) in entries.iter().zip(ends).enumerate() {
            let row = keys.row(i);
            let mut accs = Accs::new(&setup.aggs, name)?;
            accs.merge(&one_row(&states, i), &[0], 1)
                .map_err(|err| err.in_window(setup, "session", e.start, |_| Some(row)))?;
            self.by_key
                .entry(row.as_ref().into())
                .or_insert_with(|| (row.owned(), Vec::new()))
                .1
                .push(Session {
                    start: e.start,
                    end,
                    accs,
                    stored: Some(e.start),
                    changed: false,
                });
        }
        Ok(())
    }
}

/// Row `row` of per-aggregate state columns.
pub(crate) fn one_row(states: &[Vec<ArrayRef>], row: usize) -> Vec<Vec<ArrayRef>> {
    states
        .iter()
        .map(|cols| cols.iter().map(|c| c.slice(row, 1)).collect())
        .collect()
}

pub(crate) fn corrupt(operator: &str) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: "the checkpoint's window state holds a corrupt entry: restore from an earlier checkpoint".into(),
    }
}
