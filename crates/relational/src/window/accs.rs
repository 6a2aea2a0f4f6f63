//! The aggregates of one window, pane or session: one DataFusion group accumulator per
//! aggregate column, over the same group ids.
//!
//! An integer `SUM` whose total leaves `BIGINT` (as a row is added, or as the partial sums of
//! panes or sessions are merged) stops the query with an error that names the aggregate, its
//! place in the query, the key and the window: the total is no single row's fault, so there
//! is no row to send to the dead letters, and leaving one out would make the window's result
//! quietly wrong.

use anduin_expr::{CompiledAggregate, SumOverflow};
use arrow::array::{ArrayRef, BooleanArray, TimestampMillisecondArray};
use arrow::row::Row;
use arrow::util::display::array_value_to_string;
use datafusion_expr::{EmitTo, GroupsAccumulator};

use super::keys::KeyCodec;
use super::WindowSetup;
use anduin_operator_api::OperatorError;

/// Per-aggregate argument columns and filters of a batch (or a slice of one).
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    pub args: Vec<Vec<ArrayRef>>,
    pub filters: Vec<Option<BooleanArray>>,
}

impl Inputs {
    /// Rows `from..from + len`.
    pub(crate) fn slice(&self, from: usize, len: usize) -> Inputs {
        Inputs {
            args: self
                .args
                .iter()
                .map(|a| a.iter().map(|c| c.slice(from, len)).collect())
                .collect(),
            filters: self
                .filters
                .iter()
                .map(|f| f.as_ref().map(|f| f.slice(from, len)))
                .collect(),
        }
    }
}

/// One accumulator per aggregate column.
pub(crate) struct Accs {
    accs: Vec<Box<dyn GroupsAccumulator>>,
}

impl std::fmt::Debug for Accs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Accs({})", self.accs.len())
    }
}

fn df(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

/// Why adding rows or partial states to the accumulators failed.
#[derive(Debug)]
pub(crate) enum AccError {
    /// Aggregate `agg`'s integer `SUM` left its type's range.
    Overflow {
        /// Which aggregate column.
        agg: usize,
        /// What went beyond which bound, and in which group.
        overflow: SumOverflow,
    },
    /// Aggregate `agg`'s function failed: a user-defined aggregate threw, ran out of fuel,
    /// or gave a state it may not.
    Failed {
        /// Which aggregate column.
        agg: usize,
        /// What went wrong, as the function's error says (it names the function).
        message: String,
    },
}

impl AccError {
    /// The operator's error, with `place` telling in which key and window it happened (given
    /// the group id it happened in, when one is known).
    pub(crate) fn at(
        self,
        setup: &WindowSetup,
        place: impl FnOnce(Option<usize>) -> String,
    ) -> OperatorError {
        let (agg, what) = match self {
            AccError::Overflow { agg, overflow } => (agg, Ok(overflow)),
            AccError::Failed { agg, message } => (agg, Err(message)),
        };
        let written = setup
            .aggs
            .get(agg)
            .map_or_else(|| "SUM".to_string(), |a| a.site.text.clone());
        let site = setup.sites.get(agg);
        let at = site
            .and_then(|s| s.at(setup.query_file.as_deref()))
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        let role = site.map(|s| format!("{} ", s.role)).unwrap_or_default();
        let message = match what {
            Ok(overflow) => format!(
                "{role}`{written}`{at} overflowed {} {}: {overflow}. The query stops: the total is no single row's fault. Add up a wider type instead, e.g. `SUM(CAST(… AS DOUBLE))` (approximate) or `SUM(CAST(… AS DECIMAL(38, 0)))`",
                overflow.type_name,
                place(Some(overflow.group)),
            ),
            Err(message) => format!(
                "{role}`{written}`{at} failed {}: {message}. The query stops: an aggregate's state holds many rows, so there is no single row to send to the dead letters",
                place(None),
            ),
        };
        OperatorError::Execution {
            operator: setup.name.clone(),
            message,
        }
    }

    /// The operator's error for a failure in the `window` (`"window"`, `"session"`, …)
    /// starting at `start`, whose group ids are keys `keys` (in group-id order; one key, or
    /// none for a global window, for a window of one group).
    pub(crate) fn in_window<'a>(
        self,
        setup: &WindowSetup,
        window: &str,
        start: i64,
        key_of: impl FnOnce(usize) -> Option<Row<'a>>,
    ) -> OperatorError {
        self.at(setup, |group| {
            let key = match group {
                Some(g) if !setup.codec.is_global() => key_of(g),
                _ => None,
            };
            format!(
                "{}in the {window} starting at {}",
                key_text(&setup.codec, key),
                time_text(start)
            )
        })
    }
}

/// The key of group `group` among `keys`.
pub(crate) fn group_key(keys: &arrow::row::Rows, group: usize) -> Option<Row<'_>> {
    (group < keys.num_rows()).then(|| keys.row(group))
}

/// `for key sensor = 1, region = eu ` (with the trailing space), or nothing for a global
/// window.
pub(crate) fn key_text(codec: &KeyCodec, key: Option<Row<'_>>) -> String {
    let Some(key) = key else {
        return String::new();
    };
    let Ok(columns) = codec.columns([key], "") else {
        return String::new();
    };
    let parts: Vec<String> = codec
        .schema
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| {
            let v = array_value_to_string(c, 0).unwrap_or_else(|_| "?".into());
            format!("{} = {v}", f.name())
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("for key {} ", parts.join(", "))
    }
}

/// An event time (epoch milliseconds) as the output shows timestamps.
pub(crate) fn time_text(ms: i64) -> String {
    let a = TimestampMillisecondArray::from(vec![ms]);
    array_value_to_string(&a, 0).unwrap_or_else(|_| format!("{ms} ms"))
}

/// The error of aggregate `agg`'s accumulator.
fn acc_error(agg: usize, e: datafusion_common::DataFusionError) -> AccError {
    match SumOverflow::of(&e) {
        Some(o) => AccError::Overflow {
            agg,
            overflow: o.clone(),
        },
        None => AccError::Failed {
            agg,
            message: e.find_root().message().to_string(),
        },
    }
}

impl Accs {
    pub(crate) fn new(aggs: &[CompiledAggregate], operator: &str) -> Result<Self, OperatorError> {
        let accs = aggs
            .iter()
            .map(|a| a.groups_accumulator().map_err(|e| df(operator, e)))
            .collect::<Result<_, _>>()?;
        Ok(Self { accs })
    }

    /// Bytes the accumulators hold (DataFusion's estimate).
    pub(crate) fn size(&self) -> usize {
        self.accs.iter().map(|a| a.size()).sum()
    }

    /// Accumulates rows into groups `ids` (one per row); `groups` is the number of groups.
    pub(crate) fn update(
        &mut self,
        inputs: &Inputs,
        ids: &[usize],
        groups: usize,
    ) -> Result<(), AccError> {
        for (agg, ((acc, args), filter)) in self
            .accs
            .iter_mut()
            .zip(&inputs.args)
            .zip(&inputs.filters)
            .enumerate()
        {
            acc.update_batch(args, ids, filter.as_ref(), groups)
                .map_err(|e| acc_error(agg, e))?;
        }
        Ok(())
    }

    /// Takes the intermediate state of every group out (the accumulators are left empty).
    pub(crate) fn take_state(
        &mut self,
        operator: &str,
    ) -> Result<Vec<Vec<ArrayRef>>, OperatorError> {
        self.accs
            .iter_mut()
            .map(|a| a.state(EmitTo::All).map_err(|e| df(operator, e)))
            .collect()
    }

    /// Merges intermediate states (one row per group of the states' own numbering) into
    /// groups `ids`.
    pub(crate) fn merge(
        &mut self,
        states: &[Vec<ArrayRef>],
        ids: &[usize],
        groups: usize,
    ) -> Result<(), AccError> {
        for (agg, (acc, state)) in self.accs.iter_mut().zip(states).enumerate() {
            acc.merge_batch(state, ids, groups)
                .map_err(|e| acc_error(agg, e))?;
        }
        Ok(())
    }

    /// The final value of every group, one array per aggregate column (a `SUM(DISTINCT …)`
    /// checks its total here).
    pub(crate) fn evaluate(&mut self) -> Result<Vec<ArrayRef>, AccError> {
        self.accs
            .iter_mut()
            .enumerate()
            .map(|(agg, a)| a.evaluate(EmitTo::All).map_err(|e| acc_error(agg, e)))
            .collect()
    }
}
