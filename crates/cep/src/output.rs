//! What a pattern operator emits: output rows of matches (one row per match, or every row of
//! the match with running measures) and of timed-out partial matches, and the figures the run
//! summary reports.

use super::eval::{eval, grows, walked_aggregate, Grown};
use super::expr::{Agg, E};
use super::matcher::{MatchView, Memo, Outcome, Partition};
use super::value::Value;
use super::Setup;
use anduin_operator_api::{OperatorError, RowErrors};

/// What [`Operator::metrics`] reports.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// Rows kept by all partitions now, and at most.
    pub kept: usize,
    pub peak_kept: usize,
    /// The most rows one partition kept.
    pub peak_partition: usize,
    /// The most rows waiting for the watermark.
    pub peak_pending: usize,
    pub matches: u64,
    pub timed_out: u64,
    /// The partial matches (attempts) all partitions keep now, and at most.
    pub partial_matches: usize,
    pub peak_partial_matches: usize,
}

impl Figures {
    pub(crate) fn kept(&mut self, part: &Partition, added: usize, dropped: usize) {
        self.kept = (self.kept + added).saturating_sub(dropped);
        self.peak_kept = self.peak_kept.max(self.kept);
        self.peak_partition = self.peak_partition.max(part.rows_kept());
    }

    /// `part` left this instance (a live rescale gave it away) with its rows and partial
    /// matches.
    pub(crate) fn gone(&mut self, part: &Partition) {
        self.kept = self.kept.saturating_sub(part.rows_kept());
        self.partial_matches = self.partial_matches.saturating_sub(part.attempts_kept());
    }

    /// `part` kept `before` partial matches (attempts) and keeps what it keeps now.
    pub(crate) fn partial(&mut self, before: usize, part: &Partition) {
        self.partial_matches = (self.partial_matches + part.attempts_kept()).saturating_sub(before);
        self.peak_partial_matches = self.peak_partial_matches.max(self.partial_matches);
    }

    pub(crate) fn outcomes(&mut self, outcomes: &[Outcome]) {
        for o in outcomes {
            match o {
                Outcome::Match { .. } => self.matches += 1,
                Outcome::TimedOut { .. } => self.timed_out += 1,
                Outcome::Unmatched { .. } => {}
            }
        }
    }
}

/// Output rows of `outcomes` (drained), from the rows of `part`. An output row whose measure
/// fails goes to `errors` (the dead letters, or with `on_error = "fail"` the error returned),
/// shown as the match's last row (with ROWS PER MATCH ALL, the row of the match it is the
/// output of; for an empty match, its start row); the other rows are emitted.
pub(crate) fn render(
    setup: &Setup,
    part: &Partition,
    outcomes: &mut Vec<Outcome>,
    main: &mut Vec<Vec<Value>>,
    timeouts: &mut Vec<Vec<Value>>,
    errors: &RowErrors,
) -> Result<(), OperatorError> {
    for o in outcomes.drain(..) {
        let (start, steps, number, excluded, out) = match o {
            Outcome::Match {
                start,
                steps,
                number,
                excluded,
            } => (start, steps, number, excluded, &mut *main),
            Outcome::TimedOut {
                start,
                steps,
                excluded,
            } => {
                if setup.timeout_port.is_none() {
                    continue;
                }
                (start, steps, 0, excluded, &mut *timeouts)
            }
            // A row in no match: its columns, and null measures.
            Outcome::Unmatched { row } => {
                let mut cells = part
                    .row(row)
                    .map(|r| r.cells.to_vec())
                    .unwrap_or_else(|| vec![Value::Null; setup.types.len()]);
                cells.extend(std::iter::repeat_n(Value::Null, setup.measures.len()));
                main.push(cells);
                continue;
            }
        };
        let cells = |row: u64| -> Vec<Value> {
            part.row(row)
                .map(|r| r.cells.to_vec())
                .unwrap_or_else(|| vec![Value::Null; setup.cells_of.len()])
        };
        // The measures over the first `upto` rows of the match, appended to `row`, with the
        // aggregates `memo` knows; false if one failed (the row went to `errors`).
        let measures = |upto: usize,
                        memo: Option<&Memo>,
                        row: &mut Vec<Value>|
         -> Result<bool, OperatorError> {
            let view = MatchView {
                part,
                steps: &steps[..upto],
                all: &steps,
                number,
                memo,
                whole: false,
            };
            for (m, (_, e)) in setup.measures.iter().enumerate() {
                match eval(e, &view, &setup.pattern.vars) {
                    Ok(v) => row.push(v),
                    Err(error) if error.is_exhausted() => {
                        return Err(errors.exhausted_row(
                            setup.measure_sites + m,
                            error.message(),
                            None,
                        ));
                    }
                    Err(error) => {
                        let last = steps[..upto].last().map_or(start, |(r, _)| *r);
                        errors.reject_row(
                            || setup.row_json(&cells(last)),
                            setup.measure_sites + m,
                            error.message(),
                            None,
                        )?;
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        };
        if setup.all_rows {
            let mut memo = memo_of(setup, part, &steps, number);
            if steps.is_empty() && !setup.omit_empty {
                let mut row = cells(start);
                if measures(0, Some(&memo), &mut row)? {
                    out.push(row);
                }
            }
            for (i, (r, var)) in steps.iter().enumerate() {
                // The running aggregates grow by the row (excluded or not: it is part of the
                // match).
                let view = MatchView {
                    part,
                    steps: &steps[..=i],
                    all: &steps,
                    number,
                    memo: None,
                    whole: false,
                };
                for (_, a, g) in &mut memo.running {
                    g.add(a, &view, &setup.pattern.vars, (*r, *var));
                }
                // A row matched inside `{- … -}` is part of the match, not of its output.
                if excluded.contains(r) {
                    continue;
                }
                let mut row = cells(*r);
                if measures(i + 1, Some(&memo), &mut row)? {
                    out.push(row);
                }
            }
        } else {
            let first = cells(steps.first().map_or(start, |(r, _)| *r));
            let mut row: Vec<Value> = setup
                .partition_cells
                .iter()
                .map(|c| first.get(*c).cloned().unwrap_or(Value::Null))
                .collect();
            if measures(steps.len(), None, &mut row)? {
                out.push(row);
            }
        }
    }
    Ok(())
}

/// The aggregates of ALL ROWS PER MATCH's measures over the match `steps` (see [`Memo`]):
/// the running ones that grow, over no row yet; the `FINAL` ones, computed over the whole
/// match (an error stays that aggregate's value).
fn memo_of(setup: &Setup, part: &Partition, steps: &[(u64, usize)], number: i64) -> Memo {
    let mut found = Vec::new();
    for (_, e) in &setup.measures {
        aggregates(e, false, &mut found);
    }
    let whole = MatchView {
        part,
        steps,
        all: steps,
        number,
        memo: None,
        whole: true,
    };
    let mut memo = Memo::default();
    for (a, in_final) in found {
        let addr = std::ptr::from_ref(a) as usize;
        if in_final {
            memo.finals
                .push((addr, walked_aggregate(a, &whole, &setup.pattern.vars)));
        } else if grows(a) {
            memo.running.push((addr, a.clone(), Grown::new(a)));
        }
    }
    memo
}

/// The aggregates of `e` (not those inside an aggregate's argument), each with whether it is
/// under `FINAL`.
fn aggregates<'a>(e: &'a E, in_final: bool, out: &mut Vec<(&'a Agg, bool)>) {
    match e {
        E::Agg(a) => out.push((a, in_final)),
        E::Final(x) => aggregates(x, true, out),
        E::Lit(_) | E::Col(..) | E::Classifier(_) | E::MatchNumber | E::Next { .. } => {}
        E::Df(_, args) => args.iter().for_each(|x| aggregates(x, in_final, out)),
        E::Bin(_, a, b) | E::And(a, b) | E::Or(a, b) => {
            aggregates(a, in_final, out);
            aggregates(b, in_final, out);
        }
        E::Not(x) | E::Neg(x) | E::IsNull(x, _) | E::Cast(x, _) => aggregates(x, in_final, out),
    }
}
