//! A CSV file cut into splits at any offsets, each split decoded from its first record
//! boundary (found by [`super::boundary`]) up to the next split's, gives the rows and the
//! rejects (line and reason) of the file decoded whole: every record, malformed ones too,
//! goes to exactly one split, on the line the whole read gives it. The oracle is the decoder
//! itself (csv-core's grammar and its rules for a record too long or left in quotes), so
//! the scanner is held to what the sequential read does, not to a restatement of it.
//!
//! One difference is allowed, as in the reader's own scenario: a quote left open that the
//! end of a split cuts is rejected as never closed, where the whole read sees the record
//! grow too long first (same line, and the same records after it).

use std::io::Cursor;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use proptest::prelude::*;

use super::boundary::{find, Boundary, Dialect, Scanner, Step};
use crate::codec::{CsvDecoder, CsvOptions, Decoded};

/// A decoder of `a` (int), `b` (string), without a header: every line is a record.
fn decoder(max_record: usize) -> CsvDecoder {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]));
    let options = CsvOptions {
        delimiter: b',',
        has_header: false,
    };
    let mut d = CsvDecoder::new(schema, options).with_max_record_bytes(max_record);
    d.record_lines();
    d
}

/// What a decoded chunk gave: each row and reject, with its line (rows and rejects are
/// handed back apart, so their order is compared as a multiset's).
fn outcomes(decoded: Decoded, out: &mut Vec<String>) {
    let mut rows = Vec::new();
    if let Some(batch) = &decoded.batch {
        for (row, line) in decoded.lines.iter().enumerate() {
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .map(|c| arrow::util::display::array_value_to_string(c, row).expect("displays"))
                .collect();
            rows.push(format!("{line:>4}: row {cells:?}"));
        }
        assert_eq!(rows.len(), batch.num_rows(), "every row has its line");
    }
    let rejects = decoded.rejected.into_iter().map(|r| {
        let reason = if r.reason.contains("never closed") || r.reason.contains("record longer") {
            "a quote never closed, or a record too long"
        } else {
            &r.reason
        };
        format!("{:>4}: reject {reason}", r.line)
    });
    out.extend(rows.into_iter().chain(rejects));
}

/// Decodes `text[first.offset..stop]` as a split does, fed `chunk` bytes at a time.
fn decode_split(text: &[u8], first: Boundary, stop: u64, max: u64, chunk: usize) -> Vec<String> {
    let mut d = decoder(usize::try_from(max).expect("small"));
    d.start_file("f.csv");
    if first.offset > 0 {
        d.jump_to(first.offset, first.line);
    }
    let mut out = Vec::new();
    let bytes = &text[usize::try_from(first.offset).expect("small")..];
    let bytes = &bytes[..usize::try_from(stop - first.offset).expect("small")];
    for piece in bytes.chunks(chunk.max(1)) {
        outcomes(d.decode(piece).expect("decodes"), &mut out);
    }
    outcomes(d.finish_file().expect("finishes"), &mut out);
    out
}

/// The first record boundary at or after `target`, scanning from `from`: found by
/// [`find`] when `piece` is 64 KiB, its buffer, else by a scanner fed `piece` bytes at a time.
fn boundary(text: &[u8], max: u64, target: u64, from: Boundary, piece: usize) -> Boundary {
    let dialect = Dialect::Csv {
        delimiter: b',',
        max_record: max,
    };
    if piece >= 1 << 16 {
        return find(&mut Cursor::new(text), dialect, target, from).expect("reads");
    }
    let mut scanner = Scanner::new(dialect, target, from.offset);
    scanner.restart(from.offset, from.line);
    let mut at = usize::try_from(from.offset).expect("small");
    loop {
        let step = match text.get(at..).filter(|rest| !rest.is_empty()) {
            Some(rest) => {
                let n = piece.max(1).min(rest.len());
                at += n;
                scanner.feed(&rest[..n])
            }
            None => scanner.finish(),
        };
        match step {
            Step::More => {}
            Step::Found(b) => return b,
            Step::Restart { offset, line } => {
                scanner.restart(offset, line);
                at = usize::try_from(offset).expect("small");
            }
        }
    }
}

/// The outcomes of `text` cut at `cuts` (ascending offsets), each split read as
/// `file_splits::input` reads it: from the first boundary at or after its start (scanning
/// from the file's start) to the first at or after its end (scanning from its first). The
/// scanner and the decoder are fed `chunk` bytes at a time.
/// Sorted: rows and rejects of one call come apart, and lines may repeat (bare `\r`).
fn read_in_splits(text: &[u8], max: u64, cuts: &[u64], chunk: usize) -> Vec<String> {
    let size = text.len() as u64;
    let start = Boundary { offset: 0, line: 1 };
    let mut edges = vec![0];
    edges.extend(cuts.iter().copied().filter(|&c| c > 0 && c < size));
    edges.push(size);
    let mut out = Vec::new();
    for w in edges.windows(2) {
        let (from, end) = (w[0], w[1]);
        let first = match from {
            0 => start,
            _ => boundary(text, max, from, start, chunk),
        };
        let stop = match end {
            e if e >= size => size,
            e => boundary(text, max, e, first, chunk).offset,
        };
        if stop > first.offset || from == 0 {
            out.extend(decode_split(
                text,
                first,
                stop.max(first.offset),
                max,
                chunk,
            ));
        }
    }
    out.sort();
    out
}

/// `text` read whole, and cut once at every offset, gives the same outcomes, however the
/// bytes are fed.
fn every_cut_reads_as_one(text: &str, max: u64) {
    let bytes = text.as_bytes();
    let one = read_in_splits(bytes, max, &[], 1 << 16);
    for chunk in [1 << 16, 1, 3] {
        for cut in 1..bytes.len() as u64 {
            assert_eq!(
                read_in_splits(bytes, max, &[cut], chunk),
                one,
                "cut at {cut} of {text:?} (max_record {max}, fed {chunk} bytes at a time)"
            );
        }
    }
}

#[test]
fn issue_19_a_quote_closed_lines_later_and_followed_by_text_is_cut_as_the_whole_read_cuts_it() {
    // The quote opened on line 2 closes on line 6 (`10,"`), and `open` after it makes the
    // record 42 bytes, past the bound of 40: the whole read rejects line 2 and reads on from
    // line 3, so `10,"open\r54,"lt\n` is a row (line 6) and `lt"` a reject (line 7). The
    // scanner passed over `pen` outside quotes without seeing the record grow too long, and
    // put a boundary after the bare `\r` of line 6, inside that row.
    let text = "a,b\n0,\"open\r\n10,aaa\r\n0,aa\r\n10,aaaaaa\n10,\"open\r54,\"lt\nlt\"\n\
                68,\"i\"\"i\"\r\n17,vdn\nNaN,x\"y\r\n19,tswwe\r\n";
    every_cut_reads_as_one(text, 40);
    let start = Boundary { offset: 0, line: 1 };
    for target in 38..=53 {
        let b = boundary(text.as_bytes(), 40, target, start, 1 << 16);
        assert_eq!((b.offset, b.line), (53, 7), "target {target}");
    }
}

#[test]
fn a_record_whose_quotes_closed_grows_too_long_outside_them_from_its_first_line_on() {
    // Quotes spanning `\n`, `\r\n` and a bare `\r`, then unquoted text past the bound, with
    // and without a terminator in the stretch the scanner passes over at once.
    for text in [
        "1,\"a\nb\"cccccccccccc\n2,x\n3,y\n",
        "1,\"a\r\nb\"cccccccccccc\r\n2,x\r\n3,y\r\n",
        "1,\"a\rb\"cccccccccccc\r2,x\r3,y\r",
        "1,\"a\nb\",cccccccccccc\n2,x\n3,y\n",
        "1,\"a\nb\"cc\n2,\"x\ny\"dddddddddddd\n3,y\n4,\"z\n",
        // Read again from line 2, `2,"bcccc\n3,d"` is one record: no boundary after `cccc`.
        "1,\"aaaaa\n2,\"bcccc\n3,d\"\n4,e\n",
        "1,\"aaaaa\r2,\"bcccc\r3,d\"\r4,e\r",
        "1,\"aaaaa\r\n2,\"bcccc\r\n3,d\"\r\n4,e\r\n",
    ] {
        for max in [6, 9, 12, 13, 14, 15, 20] {
            every_cut_reads_as_one(text, max);
        }
    }
}

#[test]
fn quotes_inside_unquoted_fields_and_quotes_left_open_move_no_boundary() {
    for text in [
        "1,x\"y\n2,\"open\n3,z\n4,w\n",
        "1,x\"y\r2,\"open\r3,z\r4,w\r",
        "1,\"open\r\n2,x\"y\r\n3,\"b\"\"c\"\r\n4,w\n",
        "1,\"\"\n2,\"\"\"\n3,a\"\"b\n4,\"ab\"cd\"ef\n5,z",
        "\r\n\r\n1,\"a\n\n\nb\"\r\r2,x\n\n",
        "1,\"open",
        "1,\"open\n",
        "1,\"a\n2,b\"x\n3,\"c",
        // The file ends right after a closing quote, or a doubled one.
        "1,\"a\nb\"",
        "1,\"a\nb\"\"",
        "0,\"\n\"",
        // Exactly a byte past the bound, at the file's end or before more.
        "1,\"a\nb\"c",
        "1,\"a\nb\"c\n2,x\n",
        "1,\"a\rb\"c\r2,x\r",
    ] {
        for max in [4, 6, 7, 8, 16, 1 << 20] {
            every_cut_reads_as_one(text, max);
        }
    }
}

/// A CSV field: plain, quoted (with a delimiter, a line break of any kind or a doubled quote
/// inside), with a quote inside or after it, left open, or long.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{0,5}",
        2 => "[a-z ,]{0,4}".prop_map(|s| format!("\"{s}\"")),
        1 => ("[a-z]{0,3}", prop_oneof![Just("\n"), Just("\r\n"), Just("\r")])
            .prop_map(|(s, end)| format!("\"{s}{end}{s}\"")),
        1 => "[a-z]{0,3}".prop_map(|s| format!("\"{s}\"\"{s}\"")),
        1 => Just("x\"y".to_string()),
        1 => "[a-z]{0,8}".prop_map(|s| format!("\"a\nb\"{s}")),
        1 => "[a-z]{0,8}".prop_map(|s| format!("\"{s}\"{s}")),
        1 => Just("\"open".to_string()),
        1 => "z{10,40}",
    ]
}

fn csv_line() -> impl Strategy<Value = String> {
    (
        prop_oneof![8 => (0i64..100).prop_map(|n| n.to_string()), 1 => Just("NaN".to_string())],
        proptest::collection::vec(field(), 1..3),
        prop_oneof![
            6 => Just("\n"),
            2 => Just("\r\n"),
            2 => Just("\r"),
            1 => Just("\n\n"),
            1 => Just("\r\r"),
            1 => Just(""),
        ],
    )
        .prop_map(|(a, fields, end)| format!("{a},{}{end}", fields.join(",")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn csv_cut_into_splits_anywhere_decodes_as_read_whole(
        lines in proptest::collection::vec(csv_line(), 0..16),
        max in 4u64..48,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 1..4),
        chunk in prop_oneof![Just(1usize << 16), 1usize..16],
    ) {
        let text = lines.concat();
        let bytes = text.as_bytes();
        let one = read_in_splits(bytes, max, &[], chunk);
        let mut cuts: Vec<u64> = cuts.iter().map(|c| c.index(bytes.len() + 1) as u64).collect();
        cuts.sort_unstable();
        cuts.dedup();
        prop_assert_eq!(
            &read_in_splits(bytes, max, &cuts, chunk),
            &one,
            "cuts {:?} of {:?} (max_record {})", cuts, text, max
        );
        for cut in 1..bytes.len() as u64 {
            prop_assert_eq!(
                &read_in_splits(bytes, max, &[cut], 1 << 16),
                &one,
                "cut at {} of {:?} (max_record {})", cut, text, max
            );
        }
    }
}

/// The bytes [`SplitInput`](super::input::SplitInput) gives for each split of `text` (a file
/// cut at `cuts`), read `chunk` bytes at most at a time, each with the first boundary it
/// starts at.
fn split_input_reads(text: &[u8], max: u64, cuts: &[u64], chunk: usize) -> Vec<(u64, Vec<u8>)> {
    use super::input::{Next, SplitInput};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("f.csv");
    std::fs::write(&path, text).expect("written");
    let path = path.display().to_string();
    let size = text.len() as u64;
    let dialect = Dialect::Csv {
        delimiter: b',',
        max_record: max,
    };
    let mut edges = vec![0];
    edges.extend(cuts.iter().copied().filter(|&c| c > 0 && c < size));
    edges.push(size);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut out = Vec::new();
    for w in edges.windows(2) {
        let split = super::Split::new(&path, w[0], w[1], size);
        let mut input = SplitInput::new(dialect, vec![split]);
        let mut read: Option<(u64, Vec<u8>)> = None;
        loop {
            match input.next_at_most(chunk, deadline).expect("reads") {
                Next::Start { first, .. } => read = Some((first.offset, Vec::new())),
                Next::Data(bytes) => read
                    .as_mut()
                    .expect("data after the start")
                    .1
                    .extend_from_slice(bytes),
                Next::End | Next::Idle => {}
                Next::Done => break,
            }
        }
        out.extend(read);
    }
    out
}

/// Each split from the first boundary at or after its start to the first at or after its
/// end, both found by a scan before the read (as the reader did before issue 19's change).
fn scanned_before(text: &[u8], max: u64, cuts: &[u64]) -> Vec<(u64, Vec<u8>)> {
    let size = text.len() as u64;
    let start = Boundary { offset: 0, line: 1 };
    let mut edges = vec![0];
    edges.extend(cuts.iter().copied().filter(|&c| c > 0 && c < size));
    edges.push(size);
    let mut out = Vec::new();
    for w in edges.windows(2) {
        let (from, end) = (w[0], w[1]);
        let first = match from {
            0 => start,
            _ => boundary(text, max, from, start, 1 << 16),
        };
        let stop = match end {
            e if e >= size => size,
            e => boundary(text, max, e, first, 1 << 16).offset,
        };
        if stop > first.offset || from == 0 {
            let bytes = text[first.offset as usize..stop.max(first.offset) as usize].to_vec();
            out.push((first.offset, bytes));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_split_read_finds_its_end_as_a_scan_before_the_read_does(
        lines in proptest::collection::vec(csv_line(), 0..16),
        max in 4u64..48,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 1..4),
        chunk in prop_oneof![Just(1usize << 20), 1usize..16],
    ) {
        let text = lines.concat();
        let bytes = text.as_bytes();
        let mut cuts: Vec<u64> = cuts.iter().map(|c| c.index(bytes.len() + 1) as u64).collect();
        cuts.sort_unstable();
        cuts.dedup();
        prop_assert_eq!(
            split_input_reads(bytes, max, &cuts, chunk),
            scanned_before(bytes, max, &cuts),
            "cuts {:?} of {:?} (max_record {}, read {} bytes at a time)", cuts, text, max, chunk
        );
    }
}

#[test]
fn a_split_whose_end_falls_in_a_record_too_long_ends_where_a_scan_before_the_read_ends_it() {
    // Records cut as too long around the split's end: the scanner fed while the split is
    // read starts again from a line already read.
    for text in [
        "1,\"a\nb\"cccccccccccc\n2,x\n3,y\n",
        "1,\"aaaaa\n2,\"bcccc\n3,d\"\n4,e\n",
        "1,\"aaaaa\r\n2,\"bcccc\r\n3,d\"\r\n4,e\r\n",
        "a,b\n0,\"open\r\n10,aaa\r\n0,aa\r\n10,aaaaaa\n10,\"open\r54,\"lt\nlt\"\n",
    ] {
        let bytes = text.as_bytes();
        for max in [6, 12, 20, 40] {
            for cut in 1..bytes.len() as u64 {
                for chunk in [1, 5, 1 << 20] {
                    assert_eq!(
                        split_input_reads(bytes, max, &[cut], chunk),
                        scanned_before(bytes, max, &[cut]),
                        "cut at {cut} of {text:?} (max_record {max}, read {chunk} bytes at a time)"
                    );
                }
            }
        }
    }
}
