//! Tumbling, sliding and cumulating windows, from panes. A row is accumulated once, into the
//! pane (`gcd(size, slide)` long; a cumulating window's `step`) that holds its event time.
//! Cumulating windows (Flink's CUMULATE) start at each multiple of `size` and end at each
//! multiple of `step` up to the next: the window ending at `e` merges the panes from its
//! cycle's start to `e`. A tumbling window is one pane and
//! fires from it directly; a pane of sliding windows is sealed (its intermediate state
//! taken) when the cutoff (the watermark less the allowed lateness, `running.rs`) passes its
//! end, and each window merges the sealed states of its `size / pane` panes when the cutoff
//! passes the window's end.
//!
//! A checkpoint writes each key's state in each pane as a backend entry, only for the groups
//! that changed since the previous checkpoint (a sealed pane changes no more); the entries of
//! panes that fired or were dropped are deleted at the next checkpoint.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::ArrayRef;
use arrow::row::Rows;

use super::accs::{group_key, Accs};
use super::assign::{cumulate_ends_of_pane, cumulate_start, gcd, slice_start, window_ends_of_pane};
use super::entries::{sub_key, Restored, StateRows, PANE};
use super::input::Prepared;
use super::keys::{KeyCodec, KeyMap};
use super::output::Results;
use super::WindowSetup;
use anduin_operator_api::OperatorError;
use anduin_state::KeyedTable;

/// Which groups of a pane changed since the last checkpoint, and which the backend holds.
#[derive(Debug, Default)]
pub(super) struct Changed {
    /// Groups `0..stored` have an entry in the backend (group ids only grow).
    stored: usize,
    /// Per group id: changed since the last checkpoint (empty: none did).
    flags: Vec<bool>,
}

impl Changed {
    /// All `groups` groups in the backend as they are.
    fn stored(groups: usize) -> Self {
        Self {
            stored: groups,
            flags: Vec::new(),
        }
    }

    /// `groups` groups none of which is in the backend (taken from another instance).
    pub(super) fn unstored(groups: usize) -> Self {
        Self {
            stored: 0,
            flags: vec![true; groups],
        }
    }

    /// What holds for the groups `kept` (ascending ids) once the others are cut out and the
    /// kept ones renumbered 0, 1, …: the stored ones are still a prefix, and each keeps its
    /// flag.
    pub(super) fn kept(&self, kept: &[usize]) -> Self {
        let flags: Vec<bool> = kept
            .iter()
            .map(|id| self.flags.get(*id).copied().unwrap_or(false))
            .collect();
        Self {
            stored: kept.iter().filter(|id| **id < self.stored).count(),
            flags: if flags.contains(&true) {
                flags
            } else {
                Vec::new()
            },
        }
    }

    pub(super) fn mark(&mut self, ids: &[usize]) {
        for id in ids {
            if *id >= self.flags.len() {
                self.flags.resize(id + 1, false);
            }
            if let Some(f) = self.flags.get_mut(*id) {
                *f = true;
            }
        }
    }

    fn changed(&self) -> impl Iterator<Item = usize> + '_ {
        self.flags
            .iter()
            .enumerate()
            .filter(|(_, f)| **f)
            .map(|(id, _)| id)
    }

    /// The entries of the pane's stored groups, to delete when it is dropped.
    fn forget(&self, codec: &KeyCodec, keys: &Rows, start: i64, gone: &mut Vec<(Box<[u8]>, i64)>) {
        for id in 0..self.stored.min(keys.num_rows()) {
            gone.push((codec.stored(keys.row(id)).into(), start));
        }
    }
}

/// A pane being accumulated.
#[derive(Debug)]
pub(crate) struct Slice {
    pub keys: KeyMap,
    pub accs: Accs,
    pub(super) changed: Changed,
}

/// A pane whose rows are all in: its keys and the intermediate state of each group.
#[derive(Debug)]
pub(crate) struct Sealed {
    pub keys: Rows,
    pub states: Vec<Vec<ArrayRef>>,
    pub(super) changed: Changed,
}

/// The panes of a tumbling, sliding or cumulating window operator.
#[derive(Debug)]
pub(crate) struct Panes {
    pub size: i64,
    /// How far apart consecutive windows end (a cumulating window's step).
    pub slide: i64,
    pub pane: i64,
    /// Cumulating windows (`slide` is their step) rather than sliding ones.
    cumulate: bool,
    pub live: BTreeMap<i64, Slice>,
    pub sealed: BTreeMap<i64, Sealed>,
    /// Every window ending at or before this has fired.
    pub fired_up_to: i64,
    ids: Vec<usize>,
    /// The checkpointed entries (key, pane start) of panes dropped since the last checkpoint.
    gone: Vec<(Box<[u8]>, i64)>,
}

impl Panes {
    pub(crate) fn new(size: i64, slide: i64) -> Self {
        Self {
            size,
            slide,
            pane: gcd(size, slide),
            cumulate: false,
            live: BTreeMap::new(),
            sealed: BTreeMap::new(),
            fired_up_to: i64::MIN,
            ids: Vec::new(),
            gone: Vec::new(),
        }
    }

    /// Cumulating windows: from each multiple of `size`, one ending at each multiple of
    /// `step` (a divisor of `size`) up to the next.
    pub(crate) fn cumulate(size: i64, step: i64) -> Self {
        Self {
            cumulate: true,
            pane: step,
            ..Self::new(size, step)
        }
    }

    /// The ends of the windows that contain the pane starting at `start`, in order.
    fn ends_of(&self, start: i64) -> Vec<i64> {
        if self.cumulate {
            cumulate_ends_of_pane(start, self.pane, self.size)
        } else {
            window_ends_of_pane(start, self.pane, self.size, self.slide).collect()
        }
    }

    /// The start of the window that ends at `end`.
    fn start_of(&self, end: i64) -> i64 {
        if self.cumulate {
            cumulate_start(end, self.size)
        } else {
            end - self.size
        }
    }

    /// The start of the first window after the one ending at `end`: the panes before it are
    /// in no window to come (written so that it stays a timestamp when `end + slide` would
    /// not be).
    fn next_start(&self, end: i64) -> i64 {
        if !self.cumulate {
            end - (self.size - self.slide)
        } else if end.rem_euclid(self.size) == 0 {
            // The end of a cycle: the next cycle starts there.
            end
        } else {
            cumulate_start(end, self.size)
        }
    }

    /// Bytes the open panes hold, about: each live pane's keys and accumulators, each sealed
    /// pane's keys and states (a live figure: the autoscaler's and rules' `state_bytes`).
    pub(crate) fn size_bytes(&self) -> usize {
        let live: usize = self
            .live
            .values()
            .map(|s| s.keys.size() + s.accs.size())
            .sum();
        let sealed: usize = self
            .sealed
            .values()
            .map(|p| {
                p.keys.size()
                    + p.states
                        .iter()
                        .flatten()
                        .map(|a| a.get_array_memory_size())
                        .sum::<usize>()
            })
            .sum();
        live + sealed
    }

    /// Whether each window is one pane (a cumulating window whose step is its size too).
    pub(super) fn tumbling(&self) -> bool {
        self.size == self.slide
    }

    /// The end of the earliest window still to fire, if a pane is open.
    pub(crate) fn next_end(&self) -> Option<i64> {
        let mut starts: Vec<i64> = self
            .live
            .keys()
            .chain(self.sealed.keys())
            .copied()
            .collect();
        starts.sort_unstable();
        if self.tumbling() {
            return starts.first().map(|s| s.saturating_add(self.size));
        }
        starts
            .into_iter()
            .find_map(|s| self.ends_of(s).into_iter().find(|e| *e > self.fired_up_to))
    }

    /// Accumulates on-time rows into their panes.
    pub(crate) fn add(&mut self, p: &Prepared, setup: &WindowSetup) -> Result<(), OperatorError> {
        let window = if self.tumbling() {
            "window"
        } else if self.cumulate {
            "pane (of the cumulating windows)"
        } else {
            "pane (of the sliding windows)"
        };
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
                    changed: Changed::default(),
                }),
            };
            slice.keys.group_ids(&p.keys, i, j, &mut self.ids);
            slice.changed.mark(&self.ids);
            let inputs = p.inputs.slice(i, j - i);

            slice
                .accs
                .update(&inputs, &self.ids, slice.keys.len())
                .map_err(|e| {
                    e.in_window(setup, window, start, |g| group_key(slice.keys.keys(), g))
                })?;
            i = j;
        }
        Ok(())
    }

    /// Fires every window that ends at or before `cutoff`: windows in the order of their
    /// ends, each window's groups in the order of their keys (the same on every run).
    pub(crate) fn fire(
        &mut self,
        cutoff: i64,
        setup: &WindowSetup,
    ) -> Result<Results, OperatorError> {
        let mut results = Results::default();
        if self.tumbling() {
            while let Some(entry) = self.live.first_entry() {
                let start = *entry.key();
                if start.saturating_add(self.size) > cutoff {
                    break;
                }
                let mut slice = entry.remove();
                slice
                    .changed
                    .forget(&setup.codec, slice.keys.keys(), start, &mut self.gone);
                let values = slice.accs.evaluate().map_err(|e| {
                    e.in_window(setup, "window", start, |g| group_key(slice.keys.keys(), g))
                })?;
                results.add_in_key_order(
                    start,
                    start + self.size,
                    &setup.codec,
                    slice.keys.keys(),
                    values,
                    &setup.name,
                )?;
            }
            return Ok(results);
        }
        self.seal(cutoff, setup)?;
        // Fire the windows that hold sealed panes and end by the cutoff, in order.
        let ends: BTreeSet<i64> = self
            .sealed
            .keys()
            .flat_map(|s| self.ends_of(*s))
            .filter(|e| *e <= cutoff && *e > self.fired_up_to)
            .collect();
        for end in ends {
            let start = self.start_of(end);
            let mut keys = KeyMap::new(&setup.codec);
            let mut accs = Accs::new(&setup.aggs, &setup.name)?;
            for (_, pane) in self.sealed.range(start..end) {
                self.ids.clear();
                for row in pane.keys.iter() {
                    self.ids.push(keys.group_of(row));
                }
                accs.merge(&pane.states, &self.ids, keys.len())
                    .map_err(|e| {
                        e.in_window(setup, "window", start, |g| group_key(keys.keys(), g))
                    })?;
            }
            let values = accs
                .evaluate()
                .map_err(|e| e.in_window(setup, "window", start, |g| group_key(keys.keys(), g)))?;
            results.add_in_key_order(start, end, &setup.codec, keys.keys(), values, &setup.name)?;
            self.fired_up_to = end;
            // Panes before the next window's start are in no window to come.
            let next_start = self.next_start(end);
            let kept = self.sealed.split_off(&next_start);
            for (start, pane) in std::mem::replace(&mut self.sealed, kept) {
                pane.changed
                    .forget(&setup.codec, &pane.keys, start, &mut self.gone);
            }
        }
        Ok(results)
    }

    /// Seals the panes that end by `cutoff` (sliding windows only).
    pub(super) fn seal(&mut self, cutoff: i64, setup: &WindowSetup) -> Result<(), OperatorError> {
        while let Some(entry) = self.live.first_entry() {
            let start = *entry.key();
            if start.saturating_add(self.pane) > cutoff {
                break;
            }
            let mut slice = entry.remove();
            let states = slice.accs.take_state(&setup.name)?;
            self.sealed.insert(
                start,
                Sealed {
                    keys: slice.keys.into_keys(),
                    states,
                    changed: slice.changed,
                },
            );
        }
        Ok(())
    }

    /// Writes the groups that changed since the last checkpoint to the table, and deletes
    /// the entries of dropped panes.
    pub(crate) fn save(
        &mut self,
        table: &mut KeyedTable,
        states: &StateRows,
        setup: &WindowSetup,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        for (key, start) in self.gone.drain(..) {
            table.delete(&key, &sub_key(PANE, start))?;
        }
        for (start, slice) in self.live.iter_mut() {
            if slice.changed.flags.is_empty() {
                continue;
            }
            // Taking the state empties the accumulators: merge it straight back.
            let taken = slice.accs.take_state(name)?;
            let groups = slice.keys.len();
            let ids: Vec<usize> = (0..groups).collect();
            slice.accs.merge(&taken, &ids, groups).map_err(|e| {
                e.in_window(setup, "pane", *start, |g| group_key(slice.keys.keys(), g))
            })?;
            write(
                table,
                states,
                setup,
                *start,
                slice.keys.keys(),
                &taken,
                &slice.changed,
            )?;
            slice.changed = Changed::stored(groups);
        }
        for (start, pane) in self.sealed.iter_mut() {
            if pane.changed.flags.is_empty() {
                continue;
            }
            write(
                table,
                states,
                setup,
                *start,
                &pane.keys,
                &pane.states,
                &pane.changed,
            )?;
            pane.changed = Changed::stored(pane.keys.num_rows());
        }
        Ok(())
    }

    /// Rebuilds the panes from the checkpointed entries: the panes that end by `cutoff`
    /// sealed (sliding windows), the others live.
    pub(crate) fn restore(
        &mut self,
        entries: Vec<Restored>,
        states: &StateRows,
        setup: &WindowSetup,
        cutoff: i64,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        let mut panes: BTreeMap<i64, Vec<Restored>> = BTreeMap::new();
        for e in entries {
            panes.entry(e.start).or_default().push(e);
        }
        for (start, entries) in panes {
            let rows = setup
                .codec
                .rows_of_stored(entries.iter().map(|e| &e.key[..]), name)?;
            let keys = KeyMap::from_keys(&setup.codec, &rows);
            let states = states.decode(entries.iter().map(|e| &e.value[..]), name)?;
            let groups = keys.len();
            let mut accs = Accs::new(&setup.aggs, name)?;
            let ids: Vec<usize> = (0..groups).collect();
            accs.merge(&states, &ids, groups)
                .map_err(|e| e.in_window(setup, "pane", start, |g| group_key(keys.keys(), g)))?;
            self.live.insert(
                start,
                Slice {
                    keys,
                    accs,
                    changed: Changed::stored(groups),
                },
            );
        }
        if !self.tumbling() {
            self.seal(cutoff, setup)?;
        }
        Ok(())
    }
}

/// Puts the changed groups of the pane at `start` (a pane's value is its state alone).
fn write(
    table: &mut KeyedTable,
    state_rows: &StateRows,
    setup: &WindowSetup,
    start: i64,
    keys: &Rows,
    states: &[Vec<ArrayRef>],
    changed: &Changed,
) -> Result<(), OperatorError> {
    let groups = keys.num_rows();
    let rows = state_rows.encode(states, groups, &setup.name)?;
    let sub = sub_key(PANE, start);
    for id in changed.changed().filter(|id| *id < groups) {
        let key = setup.codec.stored(keys.row(id));
        table.put(key, &sub, rows.row(id).data())?;
    }
    Ok(())
}
