//! The aggregates of one window, pane or session: one DataFusion group accumulator per
//! aggregate column, over the same group ids.

use anduin_expr::CompiledAggregate;
use arrow::array::{ArrayRef, BooleanArray};
use datafusion_expr::{EmitTo, GroupsAccumulator};

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

impl Accs {
    pub(crate) fn new(aggs: &[CompiledAggregate], operator: &str) -> Result<Self, OperatorError> {
        let accs = aggs
            .iter()
            .map(|a| a.groups_accumulator().map_err(|e| df(operator, e)))
            .collect::<Result<_, _>>()?;
        Ok(Self { accs })
    }

    /// Accumulates rows into groups `ids` (one per row); `groups` is the number of groups.
    pub(crate) fn update(
        &mut self,
        inputs: &Inputs,
        ids: &[usize],
        groups: usize,
        operator: &str,
    ) -> Result<(), OperatorError> {
        for ((acc, args), filter) in self.accs.iter_mut().zip(&inputs.args).zip(&inputs.filters) {
            acc.update_batch(args, ids, filter.as_ref(), groups)
                .map_err(|e| df(operator, e))?;
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
        operator: &str,
    ) -> Result<(), OperatorError> {
        for (acc, state) in self.accs.iter_mut().zip(states) {
            acc.merge_batch(state, ids, groups)
                .map_err(|e| df(operator, e))?;
        }
        Ok(())
    }

    /// The final value of every group, one array per aggregate column.
    pub(crate) fn evaluate(&mut self, operator: &str) -> Result<Vec<ArrayRef>, OperatorError> {
        self.accs
            .iter_mut()
            .map(|a| a.evaluate(EmitTo::All).map_err(|e| df(operator, e)))
            .collect()
    }
}
