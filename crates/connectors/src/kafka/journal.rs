//! The exactly-once sink's journal: the records of each checkpoint epoch, kept until the
//! Kafka transaction that writes them commits, and kept in the checkpoint meanwhile.
//!
//! librdkafka cannot commit a transaction that another producer (a killed run's) began: a
//! new producer with the same `transactional.id` aborts it. So a record is sent only once
//! its epoch's checkpoint completed, in one transaction per epoch; until then it is in the
//! journal, which each checkpoint stores. A run that resumes from checkpoint `e` finds there
//! the records of every epoch up to `e` that were not known to be committed, reads back
//! what the sink's earlier transactions made visible (each record carries its epoch and its
//! index in the epoch), and writes the rest: every record once, whether the crash came
//! before, during or after a commit.

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};

/// One record to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// The key, if the sink has key columns.
    pub key: Option<Vec<u8>>,
    /// The value.
    pub value: Vec<u8>,
}

/// Where a record is in the journal: its epoch and its index in it.
pub(crate) type RecordId = (u64, u64);

/// The records not known to be committed.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// Closed epochs, waiting for their checkpoint's completion.
    pending: BTreeMap<u64, Vec<Record>>,
    /// Records since the last barrier.
    current: Vec<Record>,
}

impl Journal {
    /// Adds a record of the epoch in progress.
    pub(crate) fn push(&mut self, r: Record) {
        self.current.push(r);
    }

    /// The barrier of `epoch` passed: the records since the last one are that epoch's.
    pub(crate) fn close(&mut self, epoch: u64) {
        let records = std::mem::take(&mut self.current);
        if !records.is_empty() {
            self.pending.entry(epoch).or_default().extend(records);
        }
    }

    /// Takes the closed epochs up to `epoch` (committed by its checkpoint), oldest first.
    pub(crate) fn take_through(&mut self, epoch: u64) -> Vec<(u64, Vec<Record>)> {
        let later = self.pending.split_off(&(epoch.saturating_add(1)));
        std::mem::replace(&mut self.pending, later)
            .into_iter()
            .collect()
    }

    /// Gives back closed epochs taken by [`Journal::take_through`] and not committed (the run
    /// stops while the broker is lost): later checkpoints keep them, for the resumed run.
    pub(crate) fn put_back(&mut self, epochs: impl IntoIterator<Item = (u64, Vec<Record>)>) {
        for (epoch, mut records) in epochs {
            let later = self.pending.entry(epoch).or_default();
            records.append(later);
            *later = records;
        }
    }

    /// Rows after the last barrier, and closed epochs, not committed.
    pub(crate) fn uncommitted(&self) -> (usize, usize) {
        (
            self.current.len(),
            self.pending.values().map(Vec::len).sum(),
        )
    }

    /// Writes the closed epochs to `out` (a checkpoint's state file).
    pub(crate) fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(&(self.pending.len() as u64).to_le_bytes())?;
        for (epoch, records) in &self.pending {
            out.write_all(&epoch.to_le_bytes())?;
            out.write_all(&(records.len() as u64).to_le_bytes())?;
            for r in records {
                match &r.key {
                    Some(k) => write_bytes(out, k)?,
                    None => out.write_all(&u64::MAX.to_le_bytes())?,
                }
                write_bytes(out, &r.value)?;
            }
        }
        Ok(())
    }

    /// The closed epochs a checkpoint's state file holds.
    pub(crate) fn read(input: &mut dyn Read) -> std::io::Result<Self> {
        let mut pending = BTreeMap::new();
        for _ in 0..read_u64(input)? {
            let epoch = read_u64(input)?;
            let n = read_u64(input)?;
            let mut records = Vec::new();
            for _ in 0..n {
                let key = read_bytes(input)?;
                let value = read_bytes(input)?.unwrap_or_default();
                records.push(Record { key, value });
            }
            pending.insert(epoch, records);
        }
        Ok(Self {
            pending,
            current: Vec::new(),
        })
    }
}

/// The records of `epoch` still to write, given those already visible.
pub(crate) fn still_to_write<'a>(
    epoch: u64,
    records: &'a [Record],
    visible: &HashSet<RecordId>,
) -> Vec<(u64, &'a Record)> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .filter(|(i, _)| !visible.contains(&(epoch, *i)))
        .collect()
}

fn write_bytes(out: &mut dyn Write, b: &[u8]) -> std::io::Result<()> {
    out.write_all(&(b.len() as u64).to_le_bytes())?;
    out.write_all(b)
}

fn read_u64(input: &mut dyn Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    input.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_bytes(input: &mut dyn Read) -> std::io::Result<Option<Vec<u8>>> {
    let len = read_u64(input)?;
    if len == u64::MAX {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut b = Vec::new();
    input.take(len as u64).read_to_end(&mut b)?;
    if b.len() != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the journal ends inside a record",
        ));
    }
    Ok(Some(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: &str) -> Record {
        Record {
            key: v.len().is_multiple_of(2).then(|| v.as_bytes().to_vec()),
            value: v.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_journal_round_trips_and_hands_out_epochs_in_order() {
        let mut j = Journal::default();
        j.push(rec("a"));
        j.close(1);
        j.close(2);
        j.push(rec("bb"));
        j.push(rec(""));
        j.close(3);
        j.push(rec("after"));
        let mut bytes = Vec::new();
        j.write(&mut bytes).expect("writes");
        let mut back = Journal::read(&mut bytes.as_slice()).expect("reads");
        assert_eq!(
            back.uncommitted(),
            (0, 3),
            "rows after the barrier are not kept"
        );
        let first = back.take_through(2);
        assert_eq!(first, vec![(1, vec![rec("a")])]);
        let rest = back.take_through(10);
        assert_eq!(rest, vec![(3, vec![rec("bb"), rec("")])]);
        assert_eq!(back.uncommitted(), (0, 0));
    }

    #[test]
    fn epochs_given_back_are_written_to_later_checkpoints() {
        let mut j = Journal::default();
        j.push(rec("a"));
        j.close(1);
        j.push(rec("b"));
        j.close(2);
        let taken = j.take_through(2);
        j.push(rec("c"));
        j.put_back(taken);
        j.close(3);
        let mut bytes = Vec::new();
        j.write(&mut bytes).expect("writes");
        let mut back = Journal::read(&mut bytes.as_slice()).expect("reads");
        assert_eq!(
            back.take_through(3),
            vec![
                (1, vec![rec("a")]),
                (2, vec![rec("b")]),
                (3, vec![rec("c")])
            ]
        );
    }

    #[test]
    fn records_already_visible_are_not_written_again() {
        let records = vec![rec("a"), rec("b"), rec("c")];
        let visible: HashSet<RecordId> = [(4, 0), (4, 2), (3, 1)].into_iter().collect();
        let left: Vec<u64> = still_to_write(4, &records, &visible)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(left, [1]);
    }

    #[test]
    fn a_cut_journal_is_an_error() {
        let mut j = Journal::default();
        j.push(rec("abc"));
        j.close(1);
        let mut bytes = Vec::new();
        j.write(&mut bytes).expect("writes");
        bytes.truncate(bytes.len() - 1);
        assert!(Journal::read(&mut bytes.as_slice()).is_err());
    }
}
