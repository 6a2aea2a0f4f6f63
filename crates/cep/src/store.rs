//! Where a pattern operator keeps its partitions. Partitions in use live in memory; the state
//! backend (anduin-state: heap or LSM, chosen per operator) holds each partition's durable
//! copy under its key group, so that a checkpoint is a backend snapshot (full, or the changes
//! since the last one) and a range of key groups can later move between instances. With the
//! LSM backend, idle partitions (no partial match, no row waiting) beyond `cache` are dropped
//! from memory and read back when a row for them arrives: state larger than memory.

use std::collections::HashMap;

use ahash::RandomState;
use std::io::{Read, Write};

use anduin_state::{
    key_group_for_key, open_backend, BackendKind, KeyGroup, SnapshotKind, StateBackend, StateError,
    DEFAULT_MAX_KEY_GROUPS,
};

use super::matcher::{Partition, Pattern, Refused, Row};
use super::value::Value;

/// Why the store failed.
#[derive(Debug)]
pub(crate) enum StoreError {
    State(StateError),
    Corrupt(&'static str),
    /// Replaying a partition's rows refused one (it cannot: each was taken before).
    Replay(Refused),
}

impl From<StateError> for StoreError {
    fn from(e: StateError) -> Self {
        StoreError::State(e)
    }
}

/// A row waiting for the watermark, with its partition key.
pub(crate) type Waiting = (Box<[u8]>, Row);

/// Entries are `b'p' + partition key` (a partition) and `b'w'` in key group 0 (the rows
/// waiting for the watermark).
const PARTITION: u8 = b'p';
const WAITING: &[u8] = b"w";

/// The partitions of one operator instance.
pub(crate) struct Store {
    kind: BackendKind,
    backend: Box<dyn StateBackend>,
    /// Partitions in memory, each with whether it changed since the last snapshot.
    live: HashMap<Box<[u8]>, (Partition, bool), RandomState>,
    /// LSM: how many partitions stay in memory before idle ones are dropped.
    cache: usize,
    /// Partitions only in the backend.
    spilled: usize,
}

fn kg(key: &[u8]) -> KeyGroup {
    key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS)
}

fn entry(key: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(key.len() + 1);
    e.push(PARTITION);
    e.extend_from_slice(key);
    e
}

impl Store {
    pub(crate) fn open(
        kind: BackendKind,
        dir: Option<&std::path::Path>,
        cache: usize,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            kind,
            backend: open_backend(kind, dir)?,
            live: HashMap::default(),
            cache: cache.max(1),
            spilled: 0,
        })
    }

    /// How many partitions there are (in memory and only in the backend).
    pub(crate) fn partitions(&self) -> usize {
        self.live.len() + self.spilled
    }

    /// The backend's bytes (a metric).
    pub(crate) fn backend_bytes(&self) -> u64 {
        self.backend.size_bytes()
    }

    /// The partition of `key`, read back from the backend if it was dropped from memory, or a
    /// new one; marked as changed.
    pub(crate) fn get_mut(
        &mut self,
        p: &Pattern,
        key: &[u8],
    ) -> Result<&mut Partition, StoreError> {
        if !self.live.contains_key(key) {
            let part = match self.backend.get(kg(key), &entry(key))? {
                Some(bytes) => {
                    self.spilled = self.spilled.saturating_sub(1);
                    decode(p, &bytes)?
                }
                None => Partition::default(),
            };
            self.live.insert(key.into(), (part, true));
        }
        let (part, changed) = self.live.get_mut(key).expect("inserted above if absent");
        *changed = true;
        Ok(part)
    }

    /// Every partition in memory with a partial match in flight, marked as changed.
    pub(crate) fn busy(&mut self) -> impl Iterator<Item = &mut Partition> {
        self.live
            .values_mut()
            .filter(|(p, _)| !p.is_idle())
            .map(|(p, changed)| {
                *changed = true;
                p
            })
    }

    /// Every partition in memory, marked as changed.
    pub(crate) fn all_live(&mut self) -> impl Iterator<Item = &mut Partition> {
        self.live.values_mut().map(|(p, changed)| {
            *changed = true;
            p
        })
    }

    /// LSM: drops idle partitions from memory (their copy goes to the backend) while more than
    /// `cache` are live.
    pub(crate) fn spill(&mut self) -> Result<(), StoreError> {
        if self.kind != BackendKind::Lsm || self.live.len() <= self.cache {
            return Ok(());
        }
        let idle: Vec<Box<[u8]>> = self
            .live
            .iter()
            .filter(|(_, (part, _))| part.is_idle())
            .map(|(k, _)| k.clone())
            .take(self.live.len() - self.cache)
            .collect();
        for key in idle {
            if let Some((part, changed)) = self.live.remove(&key) {
                if changed {
                    self.backend.put(kg(&key), &entry(&key), &encode(&part))?;
                }
                self.spilled += 1;
            }
        }
        Ok(())
    }

    /// Writes the changed partitions and the waiting rows to the backend, then its snapshot
    /// of `kind` to `out`.
    pub(crate) fn snapshot(
        &mut self,
        waiting: &[(&[u8], &Row)],
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<(), StoreError> {
        for (key, (part, changed)) in self.live.iter_mut() {
            if std::mem::take(changed) {
                self.backend.put(kg(key), &entry(key), &encode(part))?;
            }
        }
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(waiting.len() as u64).to_le_bytes());
        for (key, row) in waiting {
            bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
            bytes.extend_from_slice(key);
            put_row(&mut bytes, row);
        }
        self.backend.put(KeyGroup(0), WAITING, &bytes)?;
        let _stats = self.backend.snapshot(kind, out)?;
        Ok(())
    }

    /// Replaces everything with a full snapshot and the changelogs after it; returns the rows
    /// that were waiting for the watermark. Partitions with partial matches (and, with the
    /// heap backend, all of them) are rebuilt in memory.
    pub(crate) fn restore(
        &mut self,
        p: &Pattern,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<Vec<Waiting>, StoreError> {
        self.backend.restore(full, changes)?;
        self.live.clear();
        self.spilled = 0;
        let mut waiting = Vec::new();
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for g in 0..DEFAULT_MAX_KEY_GROUPS.get() {
            self.backend.scan(KeyGroup(g), &mut |k, v| {
                found.push((k.to_vec(), v.to_vec()));
                Ok(())
            })?;
            for (k, v) in found.drain(..) {
                if k == WAITING {
                    waiting =
                        get_waiting(&mut &v[..]).ok_or(StoreError::Corrupt("waiting rows"))?;
                    continue;
                }
                let Some(key) = k.strip_prefix(&[PARTITION]) else {
                    return Err(StoreError::Corrupt("an entry of an unknown kind"));
                };
                let part = decode(p, &v)?;
                if self.kind == BackendKind::Heap || !part.is_idle() {
                    self.live.insert(key.into(), (part, false));
                } else {
                    self.spilled += 1;
                }
            }
        }
        Ok(waiting)
    }
}

fn encode(part: &Partition) -> Vec<u8> {
    let (rows, base, replay, resume, matches) = part.parts();
    let mut out = Vec::new();
    for n in [base, replay, resume] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&matches.to_le_bytes());
    put_rows(&mut out, rows.iter());
    out
}

fn decode(p: &Pattern, bytes: &[u8]) -> Result<Partition, StoreError> {
    let bad = StoreError::Corrupt("a partition");
    let mut r = bytes;
    let mut u64s = [0u64; 3];
    for n in &mut u64s {
        *n = get_u64(&mut r).ok_or(StoreError::Corrupt("a partition"))?;
    }
    let matches = get_u64(&mut r).ok_or(StoreError::Corrupt("a partition"))? as i64;
    let rows = get_rows(&mut r).ok_or(bad)?;
    Partition::rebuild(p, rows, u64s[0], u64s[1], u64s[2], matches).map_err(StoreError::Replay)
}

fn put_rows<'a>(out: &mut Vec<u8>, rows: impl ExactSizeIterator<Item = &'a Row>) {
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    for row in rows {
        put_row(out, row);
    }
}

fn put_row(out: &mut Vec<u8>, row: &Row) {
    {
        out.extend_from_slice(&row.ts.to_le_bytes());
        out.extend_from_slice(&(row.cells.len() as u32).to_le_bytes());
        for c in row.cells.iter() {
            match c {
                Value::Null => out.push(0),
                Value::Bool(false) => out.push(1),
                Value::Bool(true) => out.push(2),
                Value::Int(i) => {
                    out.push(3);
                    out.extend_from_slice(&i.to_le_bytes());
                }
                Value::Float(f) => {
                    out.push(4);
                    out.extend_from_slice(&f.to_le_bytes());
                }
                Value::Str(s) => {
                    out.push(5);
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if r.len() < n {
        return None;
    }
    let (head, tail) = r.split_at(n);
    *r = tail;
    Some(head)
}

fn get_u64(r: &mut &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(take(r, 8)?.try_into().ok()?))
}

fn get_u32(r: &mut &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(take(r, 4)?.try_into().ok()?))
}

fn get_waiting(r: &mut &[u8]) -> Option<Vec<Waiting>> {
    let n = usize::try_from(get_u64(r)?).ok()?;
    let mut out = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        let len = get_u32(r)? as usize;
        let key: Box<[u8]> = take(r, len)?.into();
        out.push((key, get_row(r)?));
    }
    Some(out)
}

fn get_rows(r: &mut &[u8]) -> Option<Vec<Row>> {
    let n = usize::try_from(get_u64(r)?).ok()?;
    let mut rows = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        rows.push(get_row(r)?);
    }
    Some(rows)
}

fn get_row(r: &mut &[u8]) -> Option<Row> {
    {
        let ts = get_u64(r)? as i64;
        let k = get_u32(r)? as usize;
        let mut cells = Vec::with_capacity(k.min(1 << 10));
        for _ in 0..k {
            let tag = take(r, 1)?[0];
            cells.push(match tag {
                0 => Value::Null,
                1 => Value::Bool(false),
                2 => Value::Bool(true),
                3 => Value::Int(get_u64(r)? as i64),
                4 => Value::Float(f64::from_bits(get_u64(r)?)),
                5 => {
                    let len = get_u32(r)? as usize;
                    Value::Str(std::str::from_utf8(take(r, len)?).ok()?.into())
                }
                _ => return None,
            });
        }
        Some(Row {
            ts,
            cells: cells.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_bytes() {
        let rows = vec![
            Row {
                ts: -5,
                cells: vec![Value::Null, Value::Bool(true), Value::Int(-7)].into(),
            },
            Row {
                ts: 9,
                cells: vec![
                    Value::Float(1.5),
                    Value::Str("héllo".into()),
                    Value::Bool(false),
                ]
                .into(),
            },
        ];
        let mut bytes = Vec::new();
        put_rows(&mut bytes, rows.iter());
        let back = get_rows(&mut &bytes[..]).expect("decodes");
        assert_eq!(back, rows);
        assert!(
            get_rows(&mut &bytes[..bytes.len() - 1]).is_none(),
            "truncated"
        );
    }
}
