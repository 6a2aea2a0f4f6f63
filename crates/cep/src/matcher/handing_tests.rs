//! Handing attempts between partitions (`handing.rs`) against one partition that ran
//! straight through: the starting partition forgets itself when it is blank, as the store
//! does, and numbers its rows from 0 again, while the extending one goes on numbering them,
//! so that a later handoff lines up by the last row, not by the indices.

use super::tests::{compiled, row_of, Rng};
use super::*;

/// Matches as (first row's time, rows as (time, variable)).
type Seen = Vec<(i64, Vec<(i64, usize)>)>;

fn seen(part: &Partition, out: &mut Vec<Outcome>, into: &mut Seen) {
    for o in out.drain(..) {
        if let Outcome::Match { start, steps, .. } = o {
            let ts = |i: u64| part.row(i).expect("a reported match's rows are kept").ts;
            into.push((ts(start), steps.iter().map(|(r, v)| (ts(*r), *v)).collect()));
        }
    }
}

#[test]
fn attempts_handed_to_a_partition_numbered_otherwise_give_the_matches_of_one() {
    let mut p = compiled(
        "A B+ C",
        "A AS value < 3, B AS value > 0 AND value < 5, C AS value >= 5",
    );
    p.skip = Skip::ToNextRow;
    p.max_back = 0;
    let mut merges_numbered_otherwise = 0;
    let mut handed = 0;
    for seed in 0..200u64 {
        let mut rng = Rng(seed);
        let rows: Vec<Row> = (0..40).map(|i| row_of(i, rng.below(7) as i64)).collect();
        let mut scratch = Scratch::default();
        let mut out = Vec::new();

        let mut expected = Seen::new();
        let mut one = Partition::default();
        for r in &rows {
            one.push_starting(&p, &mut scratch, r.clone(), &mut out, Starts::Every)
                .expect("taken");
            seen(&one, &mut out, &mut expected);
            one.trim(&p);
        }
        one.finish(&p, &mut out);
        seen(&one, &mut out, &mut expected);

        let mut got = Seen::new();
        let (mut start, mut extend) = (Partition::default(), Partition::default());
        for r in &rows {
            start
                .push_starting(&p, &mut scratch, r.clone(), &mut out, Starts::Every)
                .expect("taken");
            seen(&start, &mut out, &mut got);
            start.trim(&p);
            if !extend.is_idle() {
                extend
                    .push_starting(&p, &mut scratch, r.clone(), &mut out, Starts::Never)
                    .expect("taken");
                seen(&extend, &mut out, &mut got);
                extend.trim(&p);
            }
            // Handing at every row, the starting partition reports no match and forgets
            // itself whenever it handed all; at some rows, it reports matches too.
            if seed % 2 == 0 || rng.below(3) == 0 {
                if let Some(piece) = start.hand(&p, i64::MAX) {
                    handed += piece.starts.len();
                    start.trim(&p);
                    if !extend.is_idle() && extend.next() != piece.next() {
                        merges_numbered_otherwise += 1;
                    }
                    extend
                        .adopt(&p, &mut scratch, piece, &mut out)
                        .expect("adopts");
                    seen(&extend, &mut out, &mut got);
                }
            }
            // As the store forgets them (an extending instance: also when idle).
            if start.is_blank(&p) {
                start = Partition::default();
            }
            if extend.is_idle() {
                extend = Partition::default();
            }
        }
        for part in [&mut start, &mut extend] {
            part.finish(&p, &mut out);
            seen(part, &mut out, &mut got);
        }
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "seed {seed}");
    }
    assert!(handed > 0, "attempts were handed");
    assert!(
        merges_numbered_otherwise > 0,
        "some handoffs went to a partition that numbers the rows otherwise"
    );
}
