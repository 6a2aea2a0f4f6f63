//! A pattern whose conditions or measures can fail keeps every column of a row for its dead
//! letters; a row taken without ending a match holds only the columns something reads (see
//! `Setup::shed`), which come first among a row's cells. Its matches and its dead letters are
//! those of a pattern whose rows keep every column: a condition's dead letter shows the row
//! being taken, a measure's the last row of its match, both whole and in the input's order;
//! also when the run is restored from a checkpoint on the way.

use std::path::PathBuf;
use std::sync::Arc;

use anduin_operator_api::{
    BuildContext, DeadLetter, DeadLetterTarget, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_types::{Epoch, SnapshotKind, Watermark};
use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::super::compile;
use super::super::test_rng::Rng;
use super::cells_of_tests::Ints;
use super::PatternOp;

/// Event time (ms), a tag nothing reads, sensor, value, and a note nothing reads.
fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("tag", DataType::Utf8, true),
        Field::new("sensor", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
        Field::new("note", DataType::Utf8, true),
    ]))
}

/// A row: ts, sensor, value, number of its tag and note.
type In = (i64, i64, i64, u64);

/// Batches of rows, each followed by a watermark.
type Input = [(Vec<In>, i64)];

/// Rows (ts, sensor, value, number of the tag and the note).
fn batch(rows: &[In]) -> RecordBatch {
    let col = |f: fn(&In) -> i64| -> Arc<dyn Array> {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
    };
    let tags = StringArray::from_iter_values(rows.iter().map(|r| format!("tag {}", r.3)));
    let notes = StringArray::from_iter_values(rows.iter().map(|r| format!("note {}", r.3)));
    RecordBatch::try_new(
        schema(),
        vec![
            col(|r| r.0),
            Arc::new(tags),
            col(|r| r.1),
            col(|r| r.2),
            Arc::new(notes),
        ],
    )
    .expect("valid")
}

/// Nexmark's cep_q3 on (sensor, value): `A.value - 50` overflows for a value near the
/// smallest, `A.value - C.value` for values far apart.
fn params(within: &str) -> String {
    format!(
        r#"operator name = "p", type = "pattern" {{
  input name = "s"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B* C"
  param define = "B AS B.value > A.value - 50, C AS C.value < A.value - 50"
  param measures = "A.ts AS a_ts, C.ts AS c_ts, A.value - C.value AS diff"
  param within = "{within}"
  output name = "m"
}}
"#
    )
}

/// What a run emitted, the dead letters it wrote (JSON lines), and how many rows it held
/// without the columns nothing reads after the input before the end.
struct Ran {
    rows: Vec<Vec<Option<i64>>>,
    dead: Vec<String>,
    shed_rows: usize,
}

/// Removes the dead-letter file of a run when the run ends, however it ends.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A checkpoint in memory: the manifest's inline value and one full snapshot.
#[derive(Default)]
pub(super) struct Memory {
    pub(super) inline: Option<serde_json::Value>,
    pub(super) bytes: Vec<u8>,
}

impl SnapshotOut for Memory {
    fn epoch(&self) -> Epoch {
        Epoch(1)
    }
    fn full_due(&self) -> bool {
        true
    }
    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }
    fn stream(&mut self, _kind: SnapshotKind) -> Result<&mut dyn std::io::Write, OperatorError> {
        Ok(&mut self.bytes)
    }
}

/// Runs the pattern over `input`, its rows dropping the columns nothing reads (`shed`) or
/// not; with `restore_at`, a checkpoint is taken after that many batches and a new operator
/// restored from it takes the rest.
fn run(within: &str, shed: bool, input: &Input, tag: &str, restore_at: Option<usize>) -> Ran {
    let def = anduin_spec::parse_flow(&params(within))
        .expect("parses")
        .operators
        .remove(0);
    let mut setup = compile(&def, &[("s", schema())]).expect("compiles");
    // The cells read first, then the tag and the note.
    assert_eq!(setup.cells_of, [0, 2, 3, 1, 4]);
    assert_eq!(
        setup.shed,
        [3, 4],
        "the tag and the note go, the columns read stay"
    );
    if !shed {
        setup.shed.clear();
    }
    let setup = Arc::new(setup);
    let path = std::env::temp_dir().join(format!(
        "anduin-cep-shed-{}-{tag}-{shed}-{restore_at:?}.jsonl",
        std::process::id()
    ));
    let _removed = Removed(path.clone());
    let dead = Arc::new(DeadLetter::new(DeadLetterTarget::File(path.clone())));
    let ctx = BuildContext {
        dead_letter: Arc::clone(&dead),
        ..BuildContext::default()
    };
    let mut op = PatternOp::new(Arc::clone(&setup), &ctx).expect("builds");
    let mut out = Ints::default();
    for (i, (rows, wm)) in input.iter().enumerate() {
        if restore_at == Some(i) {
            let mut checkpoint = Memory::default();
            op.snapshot(&mut checkpoint).expect("a snapshot");
            op = PatternOp::new(Arc::clone(&setup), &ctx).expect("builds");
            op.restore(RestoreIn {
                epoch: Epoch(1),
                inline: checkpoint.inline,
                files: vec![Box::new(std::io::Cursor::new(checkpoint.bytes))],
            })
            .expect("restores");
        }
        op.process_batch(0, batch(rows), &mut out).expect("rows");
        op.handle_watermark(Watermark(*wm), &mut out)
            .expect("a watermark");
    }
    let shed_rows = op
        .store
        .live()
        .flat_map(|p| p.parts().0.iter())
        .filter(|r| r.cells.len() < 5)
        .count();
    op.on_end_of_input(&mut out).expect("the end");
    dead.sync().expect("written");
    let dead = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    Ran {
        rows: out.0,
        dead,
        shed_rows,
    }
}

/// Random rows of up to 8 sensors, a few with values near the extremes, in batches each
/// followed by a watermark a few milliseconds behind.
fn random_input(rng: &mut Rng) -> Vec<(Vec<In>, i64)> {
    let mut ts = 0;
    let mut note = 0;
    (0..30)
        .map(|_| {
            let rows: Vec<_> = (0..1 + rng.below(12))
                .map(|_| {
                    ts += rng.below(3) as i64;
                    note += 1;
                    let value = match rng.below(40) {
                        // Below MIN + 50 `A.value - 50` overflows; above, B holds for
                        // most rows after it and C for few.
                        0 => i64::MIN + rng.below(100) as i64,
                        1 => i64::MAX - rng.below(40) as i64,
                        _ => rng.below(200) as i64,
                    };
                    (ts, rng.below(8) as i64, value, note)
                })
                .collect();
            (rows, ts - 3)
        })
        .collect()
}

#[test]
fn rows_drop_the_columns_only_dead_letters_show_and_their_dead_letters_stay_whole() {
    let mut rng = Rng(3);
    let (mut conditions, mut measures, mut shed) = (0, 0, 0);
    for round in 0..30 {
        let input = random_input(&mut rng);
        let within = ["20ms", "1s"][round % 2];
        let tag = format!("{round}");
        let lean = run(within, true, &input, &tag, None);
        let whole = run(within, false, &input, &tag, None);
        assert_eq!(lean.rows, whole.rows, "round {round}");
        assert_eq!(lean.dead, whole.dead, "round {round}");
        assert_eq!(whole.shed_rows, 0);
        // Restored from a checkpoint on the way (rows waiting for the watermark and rows
        // held without the columns nothing reads, written and read back).
        let at = 1 + (round * 7) % (input.len() - 1);
        // In the same order: the partitions end in the order of their keys, whatever order
        // a restored table holds them in.
        let restored = run(within, true, &input, &tag, Some(at));
        assert_eq!(restored.rows, whole.rows, "round {round}, restored at {at}");
        assert_eq!(restored.dead, whole.dead, "round {round}, restored at {at}");
        shed += lean.shed_rows;
        for d in &lean.dead {
            // Whole, each column under its name: the tag and the note of one row's number.
            let number = d
                .split("\"tag\":\"tag ")
                .nth(1)
                .and_then(|t| t.split('"').next())
                .unwrap_or_else(|| panic!("shown whole: {d}"));
            assert!(
                d.contains(&format!("\"note\":\"note {number}\"")),
                "one row's tag and note: {d}"
            );
            if d.contains("A.value - C.value") {
                measures += 1;
            } else {
                conditions += 1;
            }
        }
    }
    // Both kinds of dead letters came, and rows held dropped their notes.
    assert!(conditions > 5 && measures > 5, "{conditions} {measures}");
    assert!(shed > 100, "{shed}");
}

#[test]
fn a_match_reported_after_an_earlier_attempt_ends_shows_its_last_row_whole() {
    // Sensor 1: A at MIN + 60 takes every row after it as B (none is below MIN + 10) and
    // never ends; the match of the next row (MAX - 5) ends at the third, which waits for the
    // first attempt to end (at the end of the input), and then its `A.value - C.value`
    // overflows: the dead letter shows the third row, note and all.
    let input = vec![(
        vec![
            (1, 1, i64::MIN + 60, 1),
            (2, 1, i64::MAX - 5, 2),
            (3, 1, i64::MIN + 30, 3),
        ],
        10,
    )];
    let lean = run("1s", true, &input, "late-report", None);
    assert!(lean.rows.is_empty(), "{:?}", lean.rows);
    assert_eq!(lean.dead.len(), 1, "{:?}", lean.dead);
    assert!(
        lean.dead[0].contains("\"note\":\"note 3\""),
        "{}",
        lean.dead[0]
    );
    // The first two rows, which end no match, dropped their notes.
    assert_eq!(lean.shed_rows, 2);
}
