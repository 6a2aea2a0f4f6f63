//! `stream-selector`: forwards the output of one of several replicas of an operator (paper
//! §4.2, pattern 3: hot standby), every row once and in order, switching to another replica
//! when the active one is lost (see [`decide`] for how).
//!
//! Its event time is the active replica's, watermark by watermark at the rows they stand
//! between (see [`decide`]), not the minimum over the replicas: what follows a selector
//! (a window) sees one replica's rows and watermarks, whichever replicas fail.
//!
//! Its inputs are the replicas' outputs, of the same columns. Its state is nothing a
//! checkpoint keeps: at a checkpoint every replica has emitted the same rows for the input
//! before the barrier, and after a restore their rows are numbered from the checkpoint on.
//! The runtime tells it of a lost replica through [`Operator::on_input_lost`]: a task whose
//! every output goes to a stream selector may fail while the run goes on.

pub mod decide;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostics, Watermark};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::{Collector, Operator, OperatorError};

use decide::{Out, Selector};

/// The `stream-selector` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "stream-selector",
    doc: "forwards the rows of one of its inputs, replicas of one deterministic operator, each row once and in order, switching to another when the active one is lost (hot standby)",
    inputs: Arity::AtLeast(2),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[],
};

/// Checks that the replicas have the same columns, and binds the operator.
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let first = crate::union::same_columns(
        op,
        inputs,
        "stream selector",
        "the inputs of a stream selector are replicas of one operator",
    )?;
    let name = op.name.to_string();
    let replicas = inputs.len();
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_| {
            Ok(Box::new(StreamSelector {
                name: name.clone(),
                selector: Selector::new(replicas),
            }))
        })),
        outputs: vec![Arc::clone(first)],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// A running stream selector.
struct StreamSelector {
    name: String,
    selector: Selector<RecordBatch, Watermark>,
}

impl StreamSelector {
    fn emit(
        &self,
        out: &mut dyn Collector,
        got: Result<Vec<Out<RecordBatch, Watermark>>, decide::SelectorError>,
    ) -> Result<(), OperatorError> {
        let got = got.map_err(|e| OperatorError::Execution {
            operator: self.name.clone(),
            message: e.to_string(),
        })?;
        for o in got {
            match o {
                Out::Rows(b) => out.collect(0, b)?,
                Out::Watermark(w) => out.watermark(w)?,
            }
        }
        Ok(())
    }
}

impl Operator for StreamSelector {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let rows = self.selector.rows(input, batch);
        self.emit(out, rows)
    }

    /// A replica's own event time, in order with its rows. +∞ is left to
    /// [`Operator::handle_watermark`]: it comes when the input ended, and while it is idle.
    fn handle_input_watermark(
        &mut self,
        input: usize,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if watermark == Watermark::MAX {
            return Ok(());
        }
        let got = self.selector.watermark(input, watermark);
        self.emit(out, got)
    }

    /// The minimum over the replicas goes out only when it is +∞ (every replica ended or
    /// lost); before, the active replica's watermarks go out as they come.
    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        Ok((watermark == Watermark::MAX).then_some(watermark))
    }

    /// Once every replica is exhausted its output is, unless a replica not lost sent rows
    /// that have not gone out (a paused active one's come when it is back).
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(self.selector.caught_up())
    }

    fn on_input_suspended(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let got = self.selector.suspend(input);
        self.emit(out, got)
    }

    fn on_input_resumed(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let got = self.selector.resume(input);
        self.emit(out, got)
    }

    fn on_input_lost(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let rows = self.selector.lost(input);
        self.emit(out, rows)
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        vec![("active_replica", self.selector.active() as u64)]
    }
}
