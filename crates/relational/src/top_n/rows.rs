//! A top-N's rows in and out: an input batch as partition keys, values and sort keys
//! (Arrow row-format bytes), and the output batch of a list of changes. Shared by the
//! running top-N (`running.rs`) and the per-window one (`windowed.rs`).

use std::sync::Arc;

use anduin_operator_api::OperatorError;
use anduin_types::is_updating;
use arrow::array::{ArrayRef, Int64Array, Int8Array};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, Rows, SortField};

use super::rank::Change;
use super::TopSetup;

/// The row-format converters of a top-N: a row's values to bytes and back, and its order
/// columns to bytes that compare in the order.
pub(crate) struct Codecs {
    values: RowConverter,
    sort: RowConverter,
}

pub(crate) fn internal(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::internal(operator, e.to_string())
}

/// Where input column `i` is in the output (the values come first, in input order).
pub(crate) fn value_at(setup: &TopSetup, i: usize) -> usize {
    setup.values.iter().position(|v| *v == i).unwrap_or(0)
}

impl Codecs {
    pub(crate) fn new(setup: &TopSetup) -> Result<Self, OperatorError> {
        let values = RowConverter::new(
            setup
                .values
                .iter()
                .map(|i| {
                    SortField::new(setup.schema.field(value_at(setup, *i)).data_type().clone())
                })
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
        let sort = RowConverter::new(
            setup
                .order
                .iter()
                .map(|(i, options)| {
                    SortField::new_with_options(
                        setup.schema.field(value_at(setup, *i)).data_type().clone(),
                        *options,
                    )
                })
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
        Ok(Self { values, sort })
    }

    /// The rows of `batch` as partition keys, values and sort keys.
    pub(crate) fn rows(
        &self,
        setup: &TopSetup,
        batch: &RecordBatch,
    ) -> Result<(Rows, Rows, Rows), OperatorError> {
        let pick = |columns: &mut dyn Iterator<Item = usize>| -> Vec<ArrayRef> {
            columns.map(|i| Arc::clone(batch.column(i))).collect()
        };
        let keys = setup.codec.rows(
            &pick(&mut setup.key_columns.iter().copied()),
            batch.num_rows(),
            &setup.name,
        )?;
        let values = self
            .values
            .convert_columns(&pick(&mut setup.values.iter().copied()))
            .map_err(|e| internal(&setup.name, e))?;
        let sort = self
            .sort
            .convert_columns(&pick(&mut setup.order.iter().map(|(i, _)| *i)))
            .map_err(|e| internal(&setup.name, e))?;
        Ok((keys, values, sort))
    }

    /// The output batch of `changes`: their values, the rank if asked, the change kind if
    /// the output is updating.
    pub(crate) fn output(
        &self,
        setup: &TopSetup,
        changes: &[Change],
    ) -> Result<RecordBatch, OperatorError> {
        let name = &setup.name;
        let parser = self.values.parser();
        let mut columns = self
            .values
            .convert_rows(changes.iter().map(|c| parser.parse(&c.row)))
            .map_err(|e| internal(name, e))?;
        if setup.ranked {
            columns.push(Arc::new(Int64Array::from_iter_values(
                changes
                    .iter()
                    .map(|c| i64::try_from(c.rank).unwrap_or(i64::MAX)),
            )));
        }
        if is_updating(&setup.schema) {
            columns.push(Arc::new(Int8Array::from_iter_values(
                changes.iter().map(|c| c.kind.code()),
            )));
        }
        RecordBatch::try_new(Arc::clone(&setup.schema), columns).map_err(|e| internal(name, e))
    }
}
