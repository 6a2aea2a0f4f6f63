//! Records longer than the bound, a quote that is never closed, and event-time columns, in
//! both decoders: a stray quote costs one line and the buffers stay bounded.

use std::sync::Arc;

use arrow::array::Int64Array;
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

use super::long_record::TEXT_MAX;
use super::{CodecError, CsvDecoder, CsvOptions, JsonDecoder, Rejected, DEFAULT_MAX_RECORD_BYTES};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("v", DataType::Utf8, true),
    ]))
}

/// A decoder run over `chunks`: the good rows, the rejects, and the most the decoder held.
struct Outcome {
    batch: RecordBatch,
    rejected: Vec<Rejected>,
    peak_buffered: usize,
}

fn run_csv(d: CsvDecoder, chunks: &[&[u8]]) -> Outcome {
    try_run_csv(d, chunks).expect("decodes")
}

fn try_run_csv(mut d: CsvDecoder, chunks: &[&[u8]]) -> Result<Outcome, CodecError> {
    d.start_file("in.csv");
    let (mut batches, mut rejected, mut peak_buffered) = (Vec::new(), Vec::new(), 0);
    for chunk in chunks {
        let out = d.decode(chunk)?;
        peak_buffered = peak_buffered.max(d.buffered_bytes());
        batches.extend(out.batch);
        rejected.extend(out.rejected);
    }
    let out = d.finish_file()?;
    batches.extend(out.batch);
    rejected.extend(out.rejected);
    Ok(Outcome {
        batch: concat_batches(&schema(), &batches).expect("same schema"),
        rejected,
        peak_buffered,
    })
}

fn run_json(mut d: JsonDecoder, chunks: &[&[u8]]) -> Outcome {
    d.start_file("in.jsonl");
    let (mut batches, mut rejected, mut peak_buffered) = (Vec::new(), Vec::new(), 0);
    for chunk in chunks {
        let out = d.decode(chunk).expect("decode");
        peak_buffered = peak_buffered.max(d.buffered_bytes());
        batches.extend(out.batch);
        rejected.extend(out.rejected);
    }
    let out = d.finish_file().expect("finish");
    batches.extend(out.batch);
    rejected.extend(out.rejected);
    Outcome {
        batch: concat_batches(&schema(), &batches).expect("same schema"),
        rejected,
        peak_buffered,
    }
}

fn csv_decoder() -> CsvDecoder {
    CsvDecoder::new(schema(), CsvOptions::default())
}

fn ts_column(batch: &RecordBatch) -> Vec<Option<i64>> {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("Int64")
        .iter()
        .collect()
}

fn lines(rejected: &[Rejected]) -> Vec<u64> {
    rejected.iter().map(|r| r.line).collect()
}

#[test]
fn a_stray_quote_early_in_a_large_csv_file_costs_one_line_and_the_buffers_stay_bounded() {
    const ROWS: usize = 600_000;
    let mut input = b"ts,v\n".to_vec();
    for i in 0..ROWS {
        // Line 11 is row 9: `9,"x9` opens a quote that nothing closes.
        let quote = if i == 9 { "\"" } else { "" };
        input.extend_from_slice(format!("{i},{quote}x{i}\n").as_bytes());
    }
    assert!(input.len() > 8 * DEFAULT_MAX_RECORD_BYTES);
    let chunks: Vec<&[u8]> = input.chunks(1 << 16).collect();
    let out = run_csv(csv_decoder(), &chunks);
    assert_eq!(lines(&out.rejected), [11]);
    assert_eq!(out.rejected[0].record, "9,\"x9");
    assert!(
        out.rejected[0]
            .reason
            .starts_with("record longer than 1 MiB"),
        "{}",
        out.rejected[0].reason
    );
    let expected: Vec<Option<i64>> = (0..ROWS as i64).filter(|i| *i != 9).map(Some).collect();
    assert_eq!(ts_column(&out.batch), expected);
    assert!(
        out.peak_buffered <= 4 * DEFAULT_MAX_RECORD_BYTES,
        "the decoder held {} bytes",
        out.peak_buffered
    );
}

#[test]
fn a_csv_quote_that_the_end_of_the_file_leaves_open_costs_one_line() {
    let input = b"ts,v\n1,a\n2,\"b\n3,c\n\n4,d";
    let out = run_csv(csv_decoder(), &[input]);
    assert_eq!(ts_column(&out.batch), [Some(1), Some(3), Some(4)]);
    assert_eq!(lines(&out.rejected), [3]);
    assert_eq!(out.rejected[0].record, "2,\"b");
    assert!(out.rejected[0].reason.contains("never closed"));
    // The same decoder reads a broker's messages: the reason does not say a file ends
    // (probe40 L10).
    assert!(
        out.rejected[0]
            .reason
            .contains("the input ends inside it: the file, or the message"),
        "{}",
        out.rejected[0].reason
    );
    let out = run_csv(csv_decoder(), &[b"ts,v\n1,\"a"]);
    assert_eq!((out.batch.num_rows(), lines(&out.rejected)), (0, vec![2]));
}

#[test]
fn a_csv_line_longer_than_the_bound_is_rejected_with_the_start_of_its_text() {
    let long = "y".repeat(3 * TEXT_MAX);
    let input = format!("ts,v\n1,a\n2,{long}\n3,c\n4,\"{long}\"\n5,e\n");
    for chunk in [7, 100, 1 << 16] {
        let chunks: Vec<&[u8]> = input.as_bytes().chunks(chunk).collect();
        let out = run_csv(csv_decoder().with_max_record_bytes(1000), &chunks);
        assert_eq!(ts_column(&out.batch), [Some(1), Some(3), Some(5)]);
        assert_eq!(lines(&out.rejected), [3, 5], "chunks of {chunk}");
        for r in &out.rejected {
            assert_eq!(r.record.len(), TEXT_MAX, "chunks of {chunk}");
            assert!(r.reason.starts_with("line longer than 1000 bytes"));
        }
        assert!(out.peak_buffered < 4 * (1 << 16), "chunks of {chunk}");
    }
}

#[test]
fn a_quoted_field_within_the_bound_still_spans_lines() {
    let input = b"ts,v\n1,\"a\nb\"\n2,c\n";
    let out = run_csv(csv_decoder().with_max_record_bytes(7), &[input]);
    assert_eq!(ts_column(&out.batch), [Some(1), Some(2)]);
    assert!(out.rejected.is_empty());
    let out = run_csv(csv_decoder().with_max_record_bytes(6), &[input]);
    assert_eq!(ts_column(&out.batch), [Some(2)], "`b\"` is line 3");
    assert_eq!(lines(&out.rejected), [2, 3]);
}

#[test]
fn a_json_line_longer_than_the_bound_is_rejected_without_being_buffered() {
    let long = format!(
        "{{\"v\": \"{}\"}}",
        "z".repeat(10 * DEFAULT_MAX_RECORD_BYTES)
    );
    let input = format!("{{\"ts\": 1}}\n{long}\n{{\"ts\": 3}}\n{long}");
    let chunks: Vec<&[u8]> = input.as_bytes().chunks(1 << 16).collect();
    let out = run_json(JsonDecoder::new(schema()), &chunks);
    assert_eq!(ts_column(&out.batch), [Some(1), Some(3)]);
    assert_eq!(lines(&out.rejected), [2, 4]);
    assert_eq!(out.rejected[0].record.len(), TEXT_MAX);
    assert!(out.rejected[1].reason.starts_with("line longer than 1 MiB"));
    assert!(
        out.peak_buffered <= 2 * DEFAULT_MAX_RECORD_BYTES,
        "the decoder held {} bytes",
        out.peak_buffered
    );
    let short = JsonDecoder::new(schema()).with_max_record_bytes(10);
    let out = run_json(short, &[b"{\"ts\": 1}\n{\"ts\":   2}\n"]);
    assert_eq!(
        (ts_column(&out.batch), lines(&out.rejected)),
        (vec![Some(1)], vec![2])
    );
}

#[test]
fn a_number_too_large_for_a_float_is_malformed_in_both_formats() {
    let schema = Arc::new(Schema::new(vec![Field::new("f", DataType::Float64, true)]));
    let mut csv = CsvDecoder::new(Arc::clone(&schema), CsvOptions::default());
    let out = csv
        .decode(b"f\n1e400\n-1e400\ninf\nNaN\n1.5\n")
        .expect("decode");
    assert_eq!(out.num_rows(), 3, "inf, NaN and 1.5");
    assert_eq!(
        out.rejected
            .iter()
            .map(|r| r.reason.as_str())
            .collect::<Vec<_>>(),
        [
            "column `f`: `1e400` is out of range for a float (beyond ±1.8e308)",
            "column `f`: `-1e400` is out of range for a float (beyond ±1.8e308)"
        ]
    );
    let mut json = JsonDecoder::new(schema);
    let out = json
        .decode(b"{\"f\": 1e400}\n{\"f\": -1e400}\n{\"f\": NaN}\n{\"f\": 1.5}\n")
        .expect("decode");
    assert_eq!(out.num_rows(), 1);
    assert_eq!(lines(&out.rejected), [1, 2, 3]);
    assert!(out.rejected[0].reason.contains("number out of range"));
}

#[test]
fn an_empty_event_time_rejects_the_record_in_both_formats() {
    let mut csv = csv_decoder().with_event_time(0);
    let out = csv.decode(b"ts,v\n1,a\n,b\n3,c\n").expect("decode");
    assert_eq!(out.num_rows(), 2);
    assert_eq!(
        (out.rejected[0].line, out.rejected[0].reason.as_str()),
        (3, "event-time column `ts` is empty")
    );
    let mut json = JsonDecoder::new(schema()).with_event_time(0);
    let out = json
        .decode(b"{\"ts\": 1}\n{\"v\": \"b\"}\n{\"ts\": null}\n")
        .expect("decode");
    assert_eq!(out.num_rows(), 1);
    assert_eq!(lines(&out.rejected), [2, 3]);
    assert_eq!(
        out.rejected[0].reason,
        "event-time column `ts` is null or missing"
    );
}

/// Found by the property below (CI, stop 33): blank lines before a record that the splitter
/// reads counted toward its bound when a cut made it read them, and not otherwise.
#[test]
fn blank_lines_before_a_record_count_toward_no_bound_whichever_way_the_input_is_cut() {
    let input = b"11111111111111111\r1,\"1\r\"\r\"11\r\"\r1111\r\r\r111\"111111111";
    let run = |chunks: &[&[u8]]| {
        let options = CsvOptions {
            delimiter: b',',
            has_header: false,
        };
        let out = run_csv(
            CsvDecoder::new(schema(), options).with_max_record_bytes(14),
            chunks,
        );
        (out.batch, out.rejected)
    };
    let whole = run(&[input]);
    assert_eq!(
        whole
            .1
            .last()
            .map(|r| (r.record.as_str(), r.reason.as_str())),
        Some(("111\"111111111", "expected 2 fields, found 1"))
    );
    for cut in 0..=input.len() {
        assert_eq!(run(&[&input[..cut], &input[cut..]]), whole, "cut at {cut}");
    }
}

proptest! {
    #[test]
    fn with_any_bound_csv_decodes_the_same_however_it_is_chunked(
        input in proptest::collection::vec(
            prop_oneof![Just(b'1'), Just(b'x'), Just(b','), Just(b'"'), Just(b'\r'), Just(b'\n')],
            0..160,
        ),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        max in 1usize..40,
        has_header in any::<bool>(),
    ) {
        let run = |chunks: &[&[u8]]| {
            let options = CsvOptions { delimiter: b',', has_header };
            let d = CsvDecoder::new(schema(), options).with_max_record_bytes(max);
            try_run_csv(d, chunks)
                .map(|out| (out.batch, out.rejected))
                .map_err(|e| e.to_string())
        };
        let whole = run(&[&input]);
        let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        positions.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in positions {
            chunks.push(&input[start..p]);
            start = p;
        }
        chunks.push(&input[start..]);
        prop_assert_eq!(run(&chunks), whole);
    }

    #[test]
    fn with_any_bound_json_lines_decode_the_same_however_they_are_chunked(
        input in r#"([{}:, \n\r]|"ts"|"v"|12|"abc"){0,40}"#,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        max in 1usize..30,
    ) {
        let input = input.as_bytes();
        let run = |chunks: &[&[u8]]| {
            let out = run_json(JsonDecoder::new(schema()).with_max_record_bytes(max), chunks);
            (out.batch, out.rejected)
        };
        let whole = run(&[input]);
        let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        positions.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in positions {
            chunks.push(&input[start..p]);
            start = p;
        }
        chunks.push(&input[start..]);
        prop_assert_eq!(run(&chunks), whole);
    }
}

#[test]
fn a_decoder_restored_at_any_consumed_offset_goes_on_as_the_first_one_did() {
    let mut input = b"ts,v\n".to_vec();
    for i in 0..60 {
        let quote = if i == 2 { "\"" } else { "" };
        input.extend_from_slice(format!("{i},{quote}{:>25}\n", format!("x{i}")).as_bytes());
    }
    let max = 100;
    // The first run, with the rows and rejects that each call gave and where it stood after.
    let mut first = csv_decoder().with_max_record_bytes(max);
    first.start_file("in.csv");
    let mut steps = Vec::new();
    for chunk in input.chunks(7) {
        let out = first.decode(chunk).expect("decode");
        steps.push((
            first.consumed_offset(),
            ts_column(
                &out.batch
                    .unwrap_or_else(|| RecordBatch::new_empty(schema())),
            ),
            lines(&out.rejected),
        ));
    }
    let out = first.finish_file().expect("finish");
    steps.push((
        first.consumed_offset(),
        out.batch.map(|b| ts_column(&b)).unwrap_or_default(),
        lines(&out.rejected),
    ));
    let mut cut_records = 0;
    for (k, (offset, _, _)) in steps.iter().enumerate() {
        let offset = usize::try_from(*offset).expect("small");
        let expected_rows: Vec<Option<i64>> =
            steps[k + 1..].iter().flat_map(|s| s.1.clone()).collect();
        let expected_rejects: Vec<u64> = steps[k + 1..].iter().flat_map(|s| s.2.clone()).collect();
        let mut restored = csv_decoder().with_max_record_bytes(max);
        restored.start_file("in.csv");
        let _ = restored.decode(&input[..offset]).expect("replay");
        cut_records += usize::from(restored.consumed_offset() != offset as u64);
        assert!(restored.resume_at(offset as u64), "at {offset}");
        let out = run_csv_rest(restored, &input[offset..]);
        assert_eq!(ts_column(&out.batch), expected_rows, "restored at {offset}");
        assert_eq!(
            lines(&out.rejected),
            expected_rejects,
            "restored at {offset}"
        );
    }
    assert!(
        cut_records > 0,
        "some positions are inside the long record's first bytes"
    );
}

/// Decodes the rest of a file with a decoder already in it.
fn run_csv_rest(mut d: CsvDecoder, rest: &[u8]) -> Outcome {
    let mut out = d.decode(rest).expect("decode");
    let last = d.finish_file().expect("finish");
    let batches: Vec<RecordBatch> = out.batch.take().into_iter().chain(last.batch).collect();
    out.rejected.extend(last.rejected);
    Outcome {
        batch: concat_batches(&schema(), &batches).expect("same schema"),
        rejected: out.rejected,
        peak_buffered: 0,
    }
}
