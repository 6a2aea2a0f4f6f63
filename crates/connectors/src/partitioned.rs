//! A `writer` with `partition_by` (SQL's `PARTITIONED BY (dt, hm)`, Flink's partitioned
//! filesystem sink): `path` is a directory with a directory per partition value,
//! `path/dt=2026-12-01/hm=10:15/`, each holding part files as a checkpointed writer's
//! directory does ([`crate::parts`]), committed when the checkpoint that covers them
//! completes: exactly once. The partition columns are in the directory names, not in the
//! files (as in Flink). Without checkpoints the parts are committed at the end of input.
//!
//! A value is written as its text, with `/`, `\`, `%` and control characters escaped as
//! `%XX` (and `.` in a value that is all dots); NULL and the empty text are
//! `__DEFAULT_PARTITION__`, Flink's default `partition.default-name`.
//!
//! A `path` that is a device (`/dev/null`) discards the rows, as a plain writer's does.
//!
//! A fresh start removes the part files of every partition directory under `path` (and the
//! directories left empty); a resume from checkpoint `e` brings each back to what `e` had
//! committed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anduin_types::Epoch;
use arrow::array::{Array, UInt32Array};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::codec::TimestampFormat;
use crate::parts::Parts;
use crate::writer::{new_encoder, Encoder, Format, FLUSH_AT};
use anduin_operator_api::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};

/// The directory name of a NULL or empty partition value (Flink's default).
pub(crate) const DEFAULT_PARTITION: &str = "__DEFAULT_PARTITION__";

/// What a partitioned writer is built from.
#[derive(Clone)]
pub(crate) struct PartitionedSetup {
    pub name: String,
    pub root: PathBuf,
    pub format: Format,
    pub ts: TimestampFormat,
    pub ext: &'static str,
    /// The partition columns (input indices) and their names, in directory order.
    pub partition: Vec<(usize, String)>,
    /// The other columns (input indices): what the files hold.
    pub kept: Vec<usize>,
}

/// One partition's output.
struct Partition {
    parts: Parts,
    encoder: Encoder,
    buf: Vec<u8>,
}

/// The epoch the parts of a run without checkpoints are named after (`part-00000000-…`):
/// no checkpoint has it (the first is 1), and none is ever restored.
const NO_CHECKPOINTS: Epoch = Epoch(0);

/// The epoch the parts written after a checkpointed run's last barrier are named after: none
/// (a restore removes them; their rows are produced again).
const AFTER_THE_LAST_CHECKPOINT: Epoch = Epoch(u64::MAX);

/// A running partitioned writer.
pub(crate) struct PartitionedWriter {
    setup: PartitionedSetup,
    /// Whether the run takes checkpoints (the epoch its last parts are named after).
    checkpointing: bool,
    /// By directory relative to the root.
    partitions: BTreeMap<PathBuf, Partition>,
    /// The root is a device (`/dev/null`): rows are discarded.
    discard: bool,
}

impl PartitionedWriter {
    /// Opens the root (see the module's documentation): fresh, or brought back to checkpoint
    /// `restore`, for a run that takes checkpoints (`checkpointing`) or not.
    pub(crate) fn open(
        setup: PartitionedSetup,
        checkpointing: bool,
        restore: Option<Epoch>,
    ) -> Result<Self, OperatorError> {
        let io = |path: &Path, e: std::io::Error| OperatorError::Io {
            operator: setup.name.clone(),
            path: path.to_path_buf(),
            source: e,
        };
        let device = std::fs::metadata(&setup.root).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_char_device() || m.file_type().is_block_device()
        });
        if device {
            return Ok(Self {
                setup,
                checkpointing,
                partitions: BTreeMap::new(),
                discard: true,
            });
        }
        if setup.root.is_file() {
            return Err(OperatorError::Config {
                operator: setup.name.clone(),
                message: format!(
                    "`{}` is a file, but a partitioned writer writes a directory per partition under a directory of that name",
                    setup.root.display()
                ),
            });
        }
        std::fs::create_dir_all(&setup.root).map_err(|e| io(&setup.root, e))?;
        let mut partitions = BTreeMap::new();
        let mut dirs = Vec::new();
        subdirectories(&setup.root, &mut dirs).map_err(|e| io(&setup.root, e))?;
        // Deepest first, so that a directory emptied of its parts and of its emptied
        // subdirectories goes too.
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            let parts = Parts::open(&dir, setup.ext, restore).map_err(|e| io(&dir, e))?;
            let committed = std::fs::read_dir(&dir)
                .map_err(|e| io(&dir, e))?
                .next()
                .is_some();
            if !committed {
                // Nothing left (nor under it): not a partition of this run.
                let _ = std::fs::remove_dir(&dir);
                continue;
            }
            let rel = dir
                .strip_prefix(&setup.root)
                .expect("walked under the root")
                .to_path_buf();
            partitions.insert(
                rel,
                Partition {
                    parts,
                    encoder: new_encoder(setup.format, setup.ts),
                    buf: Vec::new(),
                },
            );
        }
        Ok(Self {
            setup,
            checkpointing,
            partitions,
            discard: false,
        })
    }

    fn io_error(&self, path: &Path, e: std::io::Error) -> OperatorError {
        OperatorError::Io {
            operator: self.setup.name.clone(),
            path: path.to_path_buf(),
            source: e,
        }
    }

    /// The partition directory (relative to the root) of each row of `batch`, with the rows.
    fn split(&self, batch: &RecordBatch) -> Result<BTreeMap<PathBuf, Vec<u32>>, OperatorError> {
        let options = FormatOptions::default().with_null("");
        let formatters = (self.setup.partition.iter())
            .map(|(i, _)| ArrayFormatter::try_new(batch.column(*i).as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                OperatorError::internal(
                    &self.setup.name,
                    format!("formatting a partition value: {e}"),
                )
            })?;
        let mut rows: BTreeMap<PathBuf, Vec<u32>> = BTreeMap::new();
        for row in 0..batch.num_rows() {
            let mut dir = PathBuf::new();
            for ((i, name), f) in self.setup.partition.iter().zip(&formatters) {
                let value = if batch.column(*i).is_null(row) {
                    String::new()
                } else {
                    f.value(row).to_string()
                };
                dir.push(format!("{name}={}", escaped(&value)));
            }
            let row = u32::try_from(row).map_err(|_| {
                OperatorError::internal(&self.setup.name, "a batch of more than 2^32 rows")
            })?;
            rows.entry(dir).or_default().push(row);
        }
        Ok(rows)
    }

    /// Writes what partition `rel` has buffered to its in-progress part.
    fn write_out(&mut self, rel: &Path) -> Result<(), OperatorError> {
        let Some(p) = self.partitions.get_mut(rel) else {
            return Ok(());
        };
        if p.buf.is_empty() {
            return Ok(());
        }
        let res = p.parts.write(&p.buf);
        p.buf.clear();
        let dir = p.parts.dir().to_path_buf();
        res.map_err(|e| self.io_error(&dir, e))
    }

    fn write_all(&mut self) -> Result<(), OperatorError> {
        let rels: Vec<PathBuf> = self.partitions.keys().cloned().collect();
        rels.iter().try_for_each(|r| self.write_out(r))
    }

    /// Closes every partition's part for `epoch`; returns the pending parts' paths.
    fn close_for(&mut self, epoch: Epoch) -> Result<Vec<String>, OperatorError> {
        self.write_all()?;
        let mut pending = Vec::new();
        for p in self.partitions.values_mut() {
            let dir = p.parts.dir().to_path_buf();
            p.parts.close_for(epoch).map_err(|e| OperatorError::Io {
                operator: self.setup.name.clone(),
                path: dir,
                source: e,
            })?;
            pending.extend(p.parts.pending_paths());
        }
        Ok(pending)
    }

    fn commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        for p in self.partitions.values_mut() {
            let dir = p.parts.dir().to_path_buf();
            p.parts.commit(epoch).map_err(|e| OperatorError::Io {
                operator: self.setup.name.clone(),
                path: dir,
                source: e,
            })?;
        }
        Ok(())
    }
}

impl Operator for PartitionedWriter {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if self.discard {
            return Ok(());
        }
        let groups = self.split(&batch)?;
        let kept = batch.project(&self.setup.kept).map_err(|e| {
            OperatorError::internal(
                &self.setup.name,
                format!("dropping the partition columns: {e}"),
            )
        })?;
        let whole = groups.len() == 1;
        for (rel, rows) in groups {
            let rows_of = if whole {
                kept.clone()
            } else {
                arrow::compute::take_record_batch(&kept, &UInt32Array::from(rows)).map_err(|e| {
                    OperatorError::internal(
                        &self.setup.name,
                        format!("splitting by partition: {e}"),
                    )
                })?
            };
            if !self.partitions.contains_key(&rel) {
                let dir = self.setup.root.join(&rel);
                // New in this run: nothing of it is committed by the checkpoint resumed from.
                let parts =
                    Parts::open(&dir, self.setup.ext, None).map_err(|e| self.io_error(&dir, e))?;
                let encoder = new_encoder(self.setup.format, self.setup.ts);
                tracing::debug!(operator = %self.setup.name, partition = %rel.display(), "new partition");
                self.partitions.insert(
                    rel.clone(),
                    Partition {
                        parts,
                        encoder,
                        buf: Vec::new(),
                    },
                );
            }
            let p = self.partitions.get_mut(&rel).expect("inserted above");
            // Each part is a whole file: a new part starts with its own header.
            if !p.parts.has_current() && p.buf.is_empty() {
                p.encoder = new_encoder(self.setup.format, self.setup.ts);
            }
            match &mut p.encoder {
                Encoder::Csv(e) => e.encode(&rows_of, &mut p.buf),
                Encoder::Json(e) => e.encode(&rows_of, &mut p.buf),
            }
            if p.buf.len() >= FLUSH_AT {
                self.write_out(&rel)?;
            }
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let pending = self.close_for(out.epoch())?;
        out.inline(serde_json::json!({ "pending": pending }));
        Ok(())
    }

    /// The partition directories were brought back to the checkpoint when the writer was
    /// built (every one under the root, whatever the checkpoint lists).
    fn restore(&mut self, _state: RestoreIn) -> Result<(), OperatorError> {
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        self.commit(epoch)
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        // As the plain writer's parts: the query succeeded, what is pending is committed.
        // Without checkpoints every part is named after epoch 0.
        let epoch = if self.checkpointing {
            AFTER_THE_LAST_CHECKPOINT
        } else {
            NO_CHECKPOINTS
        };
        self.close_for(epoch)?;
        self.commit(epoch)
    }
}

/// Every directory under `dir` (not `dir` itself), into `out`.
fn subdirectories(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            let path = entry.path();
            subdirectories(&path, out)?;
            out.push(path);
        }
    }
    Ok(())
}

/// A partition value as a directory name (see the module's documentation).
pub(crate) fn escaped(value: &str) -> String {
    if value.is_empty() {
        return DEFAULT_PARTITION.to_string();
    }
    if value.chars().all(|c| c == '.') {
        return value.replace('.', "%2E");
    }
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '/' | '\\' | '%') || c.is_control() {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use anduin_operator_api::{Bound, BuildContext};
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

    use crate::test_fakes::{At, Nowhere};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("dt", DataType::Utf8, true),
            Field::new("hm", DataType::Utf8, true),
        ]))
    }

    /// Rows `(n, dt, hm)`.
    fn write(w: &mut Box<dyn Operator>, rows: &[(i64, Option<&str>, &str)]) {
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1))),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
            ],
        )
        .expect("a batch");
        w.process_batch(0, batch, &mut Nowhere).expect("writes");
    }

    /// A writer of `root` partitioned by `dt, hm`, in a run with checkpoints, resumed from
    /// `restore`.
    fn writer(root: &Path, restore: Option<Epoch>) -> Box<dyn Operator> {
        writer_of(root, true, restore)
    }

    /// A writer of `root` partitioned by `dt, hm`, in a run with checkpoints or not
    /// (`checkpointing`), resumed from `restore`.
    fn writer_of(root: &Path, checkpointing: bool, restore: Option<Epoch>) -> Box<dyn Operator> {
        let src = format!(
            "operator name = \"out\", type = \"writer\" {{\n  input name = \"s\"\n  param path = \"{}\"\n  param partition_by = \"dt, hm\"\n}}\n",
            root.display()
        );
        let spec = anduin_spec::parse_flow(&src).expect("parses");
        let op = spec.operators.first().expect("one operator");
        let binding = crate::writer::bind(op, &[("s", schema())]).expect("binds");
        let Bound::Operator(factory) = binding.bound else {
            panic!("an operator")
        };
        factory(&BuildContext {
            checkpointing,
            restore_epoch: restore,
            ..BuildContext::default()
        })
        .expect("builds")
    }

    /// Every file under `root` (relative), sorted, with its text.
    fn files(root: &Path) -> Vec<(String, String)> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
            for e in std::fs::read_dir(dir).expect("lists") {
                let path = e.expect("an entry").path();
                if path.is_dir() {
                    walk(&path, root, out);
                } else {
                    let rel = path
                        .strip_prefix(root)
                        .expect("under")
                        .display()
                        .to_string();
                    out.push((rel, std::fs::read_to_string(&path).expect("reads")));
                }
            }
        }
        let mut out = Vec::new();
        walk(root, root, &mut out);
        out.sort();
        out
    }

    #[test]
    fn rows_go_to_the_directory_of_their_values_without_the_partition_columns() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("out");
        let mut w = writer_of(&root, false, None);
        write(
            &mut w,
            &[
                (1, Some("2026-12-01"), "10:15"),
                (2, Some("2026-12-01"), "10:16"),
                (3, None, "10:15"),
            ],
        );
        write(&mut w, &[(4, Some("2026-12-01"), "10:15")]);
        w.on_end_of_input(&mut Nowhere).expect("ends");
        // Without checkpoints the parts are named after epoch 0 (issue 17's probe found them
        // named after u64::MAX, `part-18446744073709551615-000000.csv`).
        let last = 0;
        assert_eq!(
            files(&root),
            [
                (
                    format!("dt=2026-12-01/hm=10:15/part-{last:08}-000000.csv"),
                    "n\n1\n4\n".to_string()
                ),
                (
                    format!("dt=2026-12-01/hm=10:16/part-{last:08}-000000.csv"),
                    "n\n2\n".to_string()
                ),
                (
                    format!("dt=__DEFAULT_PARTITION__/hm=10:15/part-{last:08}-000000.csv"),
                    "n\n3\n".to_string()
                ),
            ]
        );
    }

    #[test]
    fn parts_are_committed_with_their_checkpoint_and_a_restore_drops_what_came_after_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("out");
        let mut w = writer(&root, None);
        write(&mut w, &[(1, Some("d1"), "h1")]);
        w.snapshot(&mut At(1)).expect("closes");
        assert_eq!(files(&root).len(), 1);
        assert!(
            files(&root)[0].0.ends_with(".pending"),
            "{:?}",
            files(&root)
        );
        w.handle_commit(Epoch(1)).expect("commits");
        write(&mut w, &[(2, Some("d1"), "h1"), (3, Some("d2"), "h1")]);
        w.snapshot(&mut At(2)).expect("closes");
        // The process dies before checkpoint 2 completes.
        drop(w);
        let mut w = writer(&root, Some(Epoch(1)));
        assert_eq!(
            files(&root),
            [(
                "dt=d1/hm=h1/part-00000001-000000.csv".to_string(),
                "n\n1\n".to_string()
            )],
            "d2 came after the checkpoint: gone with its directory"
        );
        write(&mut w, &[(2, Some("d1"), "h1"), (3, Some("d2"), "h1")]);
        w.snapshot(&mut At(2)).expect("closes");
        w.handle_commit(Epoch(2)).expect("commits");
        assert_eq!(
            files(&root),
            [
                (
                    "dt=d1/hm=h1/part-00000001-000000.csv".to_string(),
                    "n\n1\n".to_string()
                ),
                (
                    "dt=d1/hm=h1/part-00000002-000001.csv".to_string(),
                    "n\n2\n".to_string()
                ),
                (
                    "dt=d2/hm=h1/part-00000002-000000.csv".to_string(),
                    "n\n3\n".to_string()
                ),
            ]
        );
        drop(w);
        // A fresh start removes every part and the directories they leave empty.
        let _w = writer(&root, None);
        assert!(files(&root).is_empty());
        assert_eq!(std::fs::read_dir(&root).expect("lists").count(), 0);
    }

    #[test]
    fn a_value_becomes_a_directory_name_that_cannot_climb_or_nest() {
        assert_eq!(escaped("2026-12-01"), "2026-12-01");
        assert_eq!(escaped("10:15"), "10:15");
        assert_eq!(escaped("a/b"), "a%2Fb");
        assert_eq!(escaped("100%"), "100%25");
        assert_eq!(escaped(".."), "%2E%2E");
        assert_eq!(escaped("a\nb"), "a%0Ab");
        assert_eq!(escaped(""), DEFAULT_PARTITION);
    }
}
