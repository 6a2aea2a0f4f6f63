//! A user-defined aggregate ([`JsAggregate`], [`crate::WasmAggregate`]) as a DataFusion
//! aggregate function, so that a window's (or any aggregate's) column calls it by name like
//! a built-in one: `wavg(value, weight) AS w`.
//!
//! Its intermediate state, which a window keeps per pane or session and writes to its
//! checkpoints (`state()`), and reads back and combines (`merge_batch()`), is one `Binary`
//! column: each group's state as bytes (JSON text for JavaScript), NULL for a group without
//! one. A group whose
//! state is merged into one that has none takes it as it is, so a restore, or a tumbling
//! window's pane, needs no `merge`; combining two states (the panes of a sliding window,
//! sessions that meet) calls the aggregate's `merge`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion_common::{DataFusionError, Result, ScalarValue};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::utils::{format_state_name, AggregateOrderSensitivity};
use datafusion_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

use crate::aggregate::{self, GroupStates, Stepper};
use crate::coerce::{datafusion_error, to_declared};
use crate::{JsAggregate, WasmAggregate};

/// What combining two states is needed for, in an error.
const MERGING: &str =
    "combining two of its states (the panes of a sliding window, or sessions that meet)";

/// The DataFusion face of a user-defined aggregate.
#[derive(Debug)]
struct UdfAggregate {
    function: Arc<dyn Stepper>,
    signature: Signature,
}

impl PartialEq for UdfAggregate {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.function), Arc::as_ptr(&other.function))
    }
}

impl Eq for UdfAggregate {}

impl Hash for UdfAggregate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.function.declaration().hash(state);
    }
}

impl AggregateUDFImpl for UdfAggregate {
    fn name(&self) -> &str {
        &self.function.declaration().name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The declared types, to which the arguments are cast as for a built-in function; an
    /// error naming the aggregate otherwise.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        to_declared(self.function.declaration(), "aggregate", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.function.declaration().result.arrow())
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneGroup {
            function: Arc::clone(&self.function),
            states: vec![None],
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "state"),
            DataType::Binary,
            true,
        ))])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups {
            function: Arc::clone(&self.function),
            states: Vec::new(),
        }))
    }

    /// anduin feeds an aggregate its rows in the order they come; it asks for no order.
    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// The states column of `states`.
fn states_column(states: GroupStates) -> ArrayRef {
    Arc::new(BinaryArray::from_iter(states))
}

/// The bytes `states` hold, without their text: DataFusion asks once per batch, and wants
/// no answer that takes a look at every group.
fn size_of(states: &GroupStates) -> usize {
    states.capacity() * std::mem::size_of::<Option<String>>()
}

fn incoming(values: &[ArrayRef], name: &str) -> Result<BinaryArray> {
    values
        .first()
        .and_then(|v| v.as_binary_opt::<i32>())
        .cloned()
        .ok_or_else(|| {
            DataFusionError::Internal(format!(
                "the state of aggregate `{name}` is not one column of bytes (a bug in anduin)"
            ))
        })
}

/// The states of many groups (a window's keys).
struct Groups {
    function: Arc<dyn Stepper>,
    states: GroupStates,
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.states.resize(total_num_groups, None);
        aggregate::accumulate(
            self.function.as_ref(),
            &mut self.states,
            group_indices,
            values,
            opt_filter,
            false,
        )
        .map_err(datafusion_error)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let states = emit_to.take_needed(&mut self.states);
        aggregate::finish(self.function.as_ref(), states).map_err(datafusion_error)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![states_column(emit_to.take_needed(&mut self.states))])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.states.resize(total_num_groups, None);
        let incoming = incoming(values, &self.function.declaration().name)?;
        aggregate::merge(
            self.function.as_ref(),
            &mut self.states,
            group_indices,
            &incoming,
            MERGING,
        )
        .map_err(datafusion_error)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let rows = values.first().map_or(0, |v| v.len());
        let mut states = vec![None; rows];
        let groups: Vec<usize> = (0..rows).collect();
        aggregate::accumulate(
            self.function.as_ref(),
            &mut states,
            &groups,
            values,
            opt_filter,
            false,
        )
        .map_err(datafusion_error)?;
        Ok(vec![states_column(states)])
    }

    fn size(&self) -> usize {
        size_of(&self.states)
    }
}

/// The state of one group.
#[derive(Debug)]
struct OneGroup {
    function: Arc<dyn Stepper>,
    /// One state.
    states: GroupStates,
}

impl OneGroup {
    fn rows(&mut self, values: &[ArrayRef], retract: bool) -> Result<()> {
        let groups = vec![0; values.first().map_or(0, |v| v.len())];
        aggregate::accumulate(
            self.function.as_ref(),
            &mut self.states,
            &groups,
            values,
            None,
            retract,
        )
        .map_err(datafusion_error)
    }
}

impl Accumulator for OneGroup {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.rows(values, false)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.rows(values, true)
    }

    fn supports_retract_batch(&self) -> bool {
        self.function.exports().retract
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let out = aggregate::finish(self.function.as_ref(), self.states.clone())
            .map_err(datafusion_error)?;
        ScalarValue::try_from_array(&out, 0)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(
            self.states.first().cloned().flatten(),
        )])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let incoming = incoming(states, &self.function.declaration().name)?;
        let groups = vec![0; incoming.len()];
        aggregate::merge(
            self.function.as_ref(),
            &mut self.states,
            &groups,
            &incoming,
            MERGING,
        )
        .map_err(datafusion_error)
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + size_of(&self.states)
    }
}

fn aggregate_udf(function: Arc<dyn Stepper>) -> AggregateUDF {
    AggregateUDF::new_from_impl(UdfAggregate {
        signature: Signature::user_defined(Volatility::Immutable),
        function,
    })
}

impl JsAggregate {
    /// This aggregate as a DataFusion aggregate function of the same name, with its declared
    /// signature (arguments coerced to it as for a built-in function).
    pub fn into_aggregate_udf(self: Arc<Self>) -> AggregateUDF {
        aggregate_udf(self)
    }
}

impl WasmAggregate {
    /// This aggregate as a DataFusion aggregate function, as
    /// [`JsAggregate::into_aggregate_udf`].
    pub fn into_aggregate_udf(self: Arc<Self>) -> AggregateUDF {
        aggregate_udf(self)
    }
}

/// The aggregate as the updating `GROUP BY` steps it ([`anduin_expr::UserAggregate`]): rows
/// added to and taken out of states kept by the operator. The same for both languages.
macro_rules! user_aggregate {
    ($t:ty) => {
        impl anduin_expr::UserAggregate for $t {
            fn name(&self) -> &str {
                &self.declaration().name
            }

            fn merges(&self) -> bool {
                <$t>::merges(self)
            }

            fn retracts(&self) -> bool {
                <$t>::retracts(self)
            }

            fn accumulate(
                &self,
                states: &mut GroupStates,
                groups: &[usize],
                args: &[ArrayRef],
                filter: Option<&BooleanArray>,
                retract: bool,
            ) -> Result<(), String> {
                aggregate::accumulate(self, states, groups, args, filter, retract)
                    .map_err(|e| e.to_string())
            }

            fn finish(&self, states: GroupStates) -> Result<ArrayRef, String> {
                aggregate::finish(self, states).map_err(|e| e.to_string())
            }
        }
    };
}

user_aggregate!(JsAggregate);
user_aggregate!(WasmAggregate);
