//! Session windows: per key, rows whose windows `[ts, ts + gap)` overlap or touch form one
//! session, `[first row, last row + gap)`; a session fires when the watermark is past its end.

use std::collections::HashMap;

use ahash::RandomState;
use arrow::row::OwnedRow;

use super::accs::Accs;
use super::input::Prepared;
use super::output::Results;
use super::WindowSetup;
use crate::OperatorError;

/// One open session of a key.
#[derive(Debug)]
pub(crate) struct Session {
    pub start: i64,
    pub end: i64,
    /// One group (id 0).
    pub accs: Accs,
}

/// The open sessions, per key.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub gap: i64,
    pub by_key: HashMap<Box<[u8]>, (OwnedRow, Vec<Session>), RandomState>,
}

impl Sessions {
    pub(crate) fn new(gap: i64) -> Self {
        Self {
            gap,
            by_key: HashMap::with_hasher(RandomState::with_seeds(5, 6, 7, 8)),
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
                },
            };
            for mut other in joined {
                let state = other.accs.take_state(&setup.name)?;
                target.accs.merge(&state, &[0], 1, &setup.name)?;
                target.start = target.start.min(other.start);
                target.end = target.end.max(other.end);
            }
            target.start = target.start.min(lo);
            target.end = target.end.max(hi);
            target
                .accs
                .update(&p.inputs.slice(i, 1), &[0], 1, &setup.name)?;
            sessions.push(target);
        }
        Ok(())
    }

    /// Fires every session that ends before `watermark`. (A session ending exactly at the
    /// watermark stays open: a row at that time, which is not late, still touches it.)
    pub(crate) fn fire(
        &mut self,
        watermark: i64,
        setup: &WindowSetup,
    ) -> Result<Results, OperatorError> {
        let mut results = Results::default();
        let mut emptied = Vec::new();
        for (bytes, (key, sessions)) in self.by_key.iter_mut() {
            let mut k = 0;
            while k < sessions.len() {
                if sessions[k].end < watermark || watermark == i64::MAX {
                    let mut s = sessions.swap_remove(k);
                    let values = s.accs.evaluate(&setup.name)?;
                    let keys = setup.codec.columns([key.row()], &setup.name)?;
                    results.add(s.start, s.end, keys, values);
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
        Ok(results)
    }
}
