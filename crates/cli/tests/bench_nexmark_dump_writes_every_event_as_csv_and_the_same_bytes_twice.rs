//! `anduin bench nexmark --dump DIR` (issue 23) writes the events of the `nexmark` source to
//! DIR/person.csv, DIR/auction.csv and DIR/bid.csv for another engine to read: every event
//! once (1 person, 3 auctions and 46 bids in 50, as Nexmark generates them), every column of
//! its kind, no header, timestamps as epoch milliseconds; and a second dump with the same
//! arguments is the same bytes, so that both engines of a comparison read the same events.

use std::path::Path;

use crate::common;

use common::{anduin_ok, repo};

/// `(file, columns, the columns that are timestamps, rows of 10 000 events)`.
const FILES: [(&str, usize, &[usize], usize); 3] = [
    ("person.csv", 8, &[6], 200),
    ("auction.csv", 10, &[5, 6], 600),
    ("bid.csv", 7, &[5], 9_200),
];

fn dump(into: &Path) -> String {
    let out = anduin_ok(
        &repo(),
        &[
            "bench",
            "nexmark",
            "--dump",
            into.to_str().expect("utf-8"),
            "--events",
            "10000",
            "--rate",
            "200000",
        ],
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_dump_of_10000_events_holds_each_kind_with_its_columns_and_a_second_is_the_same_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    let said = dump(&first);
    dump(&second);
    for (file, columns, timestamps, rows) in FILES {
        let text = std::fs::read_to_string(first.join(file)).expect("the dumped file");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), rows, "{file}: rows");
        assert!(
            said.contains(&format!("{rows} rows to {}", first.join(file).display())),
            "{file}: the dump says what it wrote:\n{said}"
        );
        for line in &lines {
            // The generator's text holds no comma nor quote, so a plain split is the CSV's.
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), columns, "{file}: columns of `{line}`");
            assert!(
                fields[0].parse::<i64>().is_ok(),
                "{file}: no header, an id first: `{line}`"
            );
            for &t in timestamps {
                let ms: i64 = fields[t].parse().expect("epoch milliseconds");
                assert!(
                    ms > 1_000_000_000_000,
                    "{file}: column {t} is epoch milliseconds: `{line}`"
                );
            }
        }
        let again = std::fs::read(second.join(file)).expect("the second dump");
        assert!(
            again == text.as_bytes(),
            "{file}: a second dump of the same events is the same bytes"
        );
    }
}
