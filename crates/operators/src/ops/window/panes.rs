//! Tumbling and sliding windows, from panes. A row is accumulated once, into the pane
//! (`gcd(size, slide)` long) that holds its event time. A tumbling window is one pane and
//! fires from it directly; a pane of sliding windows is sealed (its intermediate state
//! taken) when the watermark passes its end, and each window merges the sealed states of
//! its `size / pane` panes when the watermark passes the window's end.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::ArrayRef;
use arrow::row::Rows;

use super::accs::Accs;
use super::assign::{gcd, slice_start, window_ends_of_pane};
use super::input::Prepared;
use super::keys::KeyMap;
use super::output::Results;
use super::WindowSetup;
use crate::OperatorError;

/// A pane being accumulated.
#[derive(Debug)]
pub(crate) struct Slice {
    pub keys: KeyMap,
    pub accs: Accs,
}

/// A pane whose rows are all in: its keys and the intermediate state of each group.
#[derive(Debug)]
pub(crate) struct Sealed {
    pub keys: Rows,
    pub states: Vec<Vec<ArrayRef>>,
}

/// The panes of a tumbling or sliding window operator.
#[derive(Debug)]
pub(crate) struct Panes {
    pub size: i64,
    pub slide: i64,
    pub pane: i64,
    pub live: BTreeMap<i64, Slice>,
    pub sealed: BTreeMap<i64, Sealed>,
    /// Every window ending at or before this has fired.
    pub fired_up_to: i64,
    ids: Vec<usize>,
}

impl Panes {
    pub(crate) fn new(size: i64, slide: i64) -> Self {
        Self {
            size,
            slide,
            pane: gcd(size, slide),
            live: BTreeMap::new(),
            sealed: BTreeMap::new(),
            fired_up_to: i64::MIN,
            ids: Vec::new(),
        }
    }

    fn tumbling(&self) -> bool {
        self.size == self.slide
    }

    /// Accumulates on-time rows into their panes.
    pub(crate) fn add(&mut self, p: &Prepared, setup: &WindowSetup) -> Result<(), OperatorError> {
        let n = p.times.len();
        let mut i = 0;
        while i < n {
            let start = slice_start(p.times[i], self.pane);
            let mut j = i + 1;
            while j < n && slice_start(p.times[j], self.pane) == start {
                j += 1;
            }
            let slice = match self.live.entry(start) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(Slice {
                    keys: KeyMap::new(&setup.codec),
                    accs: Accs::new(&setup.aggs, &setup.name)?,
                }),
            };
            slice.keys.group_ids(&p.keys, i, j, &mut self.ids);
            let inputs = p.inputs.slice(i, j - i);
            slice
                .accs
                .update(&inputs, &self.ids, slice.keys.len(), &setup.name)?;
            i = j;
        }
        Ok(())
    }

    /// Fires every window that ends at or before `watermark`.
    pub(crate) fn fire(
        &mut self,
        watermark: i64,
        setup: &WindowSetup,
    ) -> Result<Results, OperatorError> {
        let mut results = Results::default();
        if self.tumbling() {
            while let Some(entry) = self.live.first_entry() {
                let start = *entry.key();
                if start.saturating_add(self.size) > watermark {
                    break;
                }
                let mut slice = entry.remove();
                let values = slice.accs.evaluate(&setup.name)?;
                let keys = setup.codec.columns(slice.keys.keys().iter(), &setup.name)?;
                results.add(start, start + self.size, keys, values);
            }
            return Ok(results);
        }
        // Seal the panes that are complete.
        while let Some(entry) = self.live.first_entry() {
            let start = *entry.key();
            if start.saturating_add(self.pane) > watermark {
                break;
            }
            let mut slice = entry.remove();
            let states = slice.accs.take_state(&setup.name)?;
            self.sealed.insert(
                start,
                Sealed {
                    keys: slice.keys.into_keys(),
                    states,
                },
            );
        }
        // Fire the windows that hold sealed panes and end by the watermark, in order.
        let ends: BTreeSet<i64> = self
            .sealed
            .keys()
            .flat_map(|s| window_ends_of_pane(*s, self.pane, self.size, self.slide))
            .filter(|e| *e <= watermark && *e > self.fired_up_to)
            .collect();
        for end in ends {
            let start = end - self.size;
            let mut keys = KeyMap::new(&setup.codec);
            let mut accs = Accs::new(&setup.aggs, &setup.name)?;
            for (_, pane) in self.sealed.range(start..end) {
                self.ids.clear();
                for row in pane.keys.iter() {
                    self.ids.push(keys.group_of(row));
                }
                accs.merge(&pane.states, &self.ids, keys.len(), &setup.name)?;
            }
            let values = accs.evaluate(&setup.name)?;
            let key_columns = setup.codec.columns(keys.keys().iter(), &setup.name)?;
            results.add(start, end, key_columns, values);
            self.fired_up_to = end;
            // Panes before the next window's start are in no window to come.
            let next_start = end + self.slide - self.size;
            self.sealed = self.sealed.split_off(&next_start);
        }
        Ok(results)
    }
}
