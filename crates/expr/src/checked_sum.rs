//! `SUM` of integers that fails when its total leaves the range of its type, instead of
//! wrapping around.
//!
//! DataFusion's `SUM` adds `BIGINT`s with wrapping arithmetic: `9223372036854775807 + 1` gives
//! `-9223372036854775808`, a silent wrong answer. anduin registers [`CheckedSum`] under the
//! name `sum` instead: DataFusion's own function (same signature, coercions, return type and
//! state, so checkpoints keep their layout) whose accumulators for `BIGINT` (and `BIGINT
//! UNSIGNED`) add with `checked_add`. Every addition is checked, including a merge of
//! partial sums (the panes of a sliding window, two sessions that join): a total that goes
//! beyond the range is an error even if later rows would bring it back, as in Trino and in
//! Spark's ANSI mode. The error is a [`SumOverflow`] naming the group, for the operator to
//! say which key and window failed. `SUM(DISTINCT …)` adds the distinct values in 128 bits
//! (their order is a hash set's) and fails when the total does not fit. Floats and decimals
//! are DataFusion's own (a float does not overflow to a wrong value; a decimal sum is 128
//! bits wide).

use std::fmt::Debug;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, FieldRef, Int64Type, UInt64Type};
use datafusion_common::{DataFusionError, Result, ScalarValue};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::utils::AggregateOrderSensitivity;
use datafusion_expr::{
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, ReversedUDAF,
    SetMonotonicity, Signature,
};
use datafusion_functions_aggregate::sum::Sum;
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::accumulate::NullState;
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::nulls::apply_filter_as_nulls;
use datafusion_functions_aggregate_common::aggregate::sum_distinct::DistinctSumAccumulator;

/// An integer `SUM` whose total went beyond the range of its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the total went {} {}, the {} {}", if *.upward { "above" } else { "below" }, .bound, if *.upward { "largest" } else { "smallest" }, .type_name)]
pub struct SumOverflow {
    /// The group (of the accumulator's numbering) whose total overflowed.
    pub group: usize,
    /// The SQL name of the type: `BIGINT` or `BIGINT UNSIGNED`.
    pub type_name: &'static str,
    /// Whether it went above the largest value (else below the smallest).
    pub upward: bool,
    /// The value it went beyond.
    pub bound: String,
}

impl SumOverflow {
    /// The overflow `e` reports, if it is one.
    pub fn of(e: &DataFusionError) -> Option<&SumOverflow> {
        match e.find_root() {
            DataFusionError::External(inner) => inner.downcast_ref::<SumOverflow>(),
            _ => None,
        }
    }

    fn error(self) -> DataFusionError {
        DataFusionError::External(Box::new(self))
    }
}

/// An integer type a checked `SUM` adds.
trait CheckedInt: ArrowPrimitiveType + Send + Debug {
    const TYPE_NAME: &'static str;
    fn checked_add(a: Self::Native, b: Self::Native) -> Option<Self::Native>;
    /// Whether adding `v` that overflowed went above the largest value.
    fn upward(v: Self::Native) -> bool;
    fn bound(upward: bool) -> String;
    fn wide(v: Self::Native) -> i128;
    fn narrow(v: i128) -> Option<Self::Native>;
}

impl CheckedInt for Int64Type {
    const TYPE_NAME: &'static str = "BIGINT";
    #[inline]
    fn checked_add(a: i64, b: i64) -> Option<i64> {
        a.checked_add(b)
    }
    fn upward(v: i64) -> bool {
        v > 0
    }
    fn bound(upward: bool) -> String {
        if upward { i64::MAX } else { i64::MIN }.to_string()
    }
    fn wide(v: i64) -> i128 {
        i128::from(v)
    }
    fn narrow(v: i128) -> Option<i64> {
        i64::try_from(v).ok()
    }
}

impl CheckedInt for UInt64Type {
    const TYPE_NAME: &'static str = "BIGINT UNSIGNED";
    #[inline]
    fn checked_add(a: u64, b: u64) -> Option<u64> {
        a.checked_add(b)
    }
    fn upward(_: u64) -> bool {
        true
    }
    fn bound(upward: bool) -> String {
        if upward { u64::MAX } else { u64::MIN }.to_string()
    }
    fn wide(v: u64) -> i128 {
        i128::from(v)
    }
    fn narrow(v: i128) -> Option<u64> {
        u64::try_from(v).ok()
    }
}

fn overflow<T: CheckedInt>(group: usize, upward: bool) -> SumOverflow {
    SumOverflow {
        group,
        type_name: T::TYPE_NAME,
        upward,
        bound: T::bound(upward),
    }
}

/// DataFusion's `SUM`, with integer totals checked (module docs).
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct CheckedSum {
    inner: Sum,
}

/// Calls `$f` with the checked integer type of `$args`' result, or returns `$otherwise`.
macro_rules! on_integer {
    ($args:expr, $f:ident, $otherwise:expr) => {
        match $args.return_field.data_type() {
            DataType::Int64 => $f::<Int64Type>($args),
            DataType::UInt64 => $f::<UInt64Type>($args),
            _ => $otherwise,
        }
    };
}

fn plain<T: CheckedInt>(args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
    let data_type = args.return_field.data_type().clone();
    Ok(if args.is_distinct {
        Box::new(DistinctSum::<T> {
            inner: DistinctSumAccumulator::new(&data_type),
            data_type,
        })
    } else {
        Box::new(SumAcc::<T> {
            sum: None,
            data_type,
        })
    })
}

fn grouped<T: CheckedInt>(args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
    Ok(Box::new(SumGroups::<T> {
        sums: Vec::new(),
        nulls: NullState::new(),
        data_type: args.return_field.data_type().clone(),
    }))
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        on_integer!(args, plain, self.inner.accumulator(args))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        on_integer!(args, grouped, self.inner.create_groups_accumulator(args))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        // Only SQL window functions (`OVER`) slide, and expressions refuse them: should one
        // come, it gets the checked accumulator, which cannot take rows back out.
        on_integer!(args, plain, self.inner.create_sliding_accumulator(args))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }
}

/// The grouped accumulator: DataFusion's `PrimitiveGroupsAccumulator` for `SUM`, with a
/// checked addition and the same state (one column of the result type, null for a group
/// that saw no value).
#[derive(Debug)]
struct SumGroups<T: CheckedInt> {
    sums: Vec<T::Native>,
    nulls: NullState,
    data_type: DataType,
}

impl<T: CheckedInt> GroupsAccumulator for SumGroups<T> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let Some(values) = values.first().and_then(|v| v.as_primitive_opt::<T>()) else {
            return Err(DataFusionError::Internal(format!(
                "a checked SUM of {} was given another type",
                T::TYPE_NAME
            )));
        };
        self.sums.resize(total_num_groups, T::Native::default());
        let sums = &mut self.sums;
        // The first addition that overflows (the accumulator is then useless: the query stops).
        let mut first: Option<(usize, T::Native)> = None;
        self.nulls.accumulate(
            group_indices,
            values,
            opt_filter,
            total_num_groups,
            |group, value| {
                // The group ids are below `total_num_groups` (the accumulator's contract).
                if let Some(sum) = sums.get_mut(group) {
                    match T::checked_add(*sum, value) {
                        Some(s) => *sum = s,
                        None => {
                            first.get_or_insert((group, value));
                        }
                    }
                }
            },
        );
        if let Some((group, value)) = first {
            return Err(overflow::<T>(group, T::upward(value)).error());
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = self.nulls.build(emit_to);
        Ok(Arc::new(
            PrimitiveArray::<T>::new(sums.into(), nulls).with_data_type(self.data_type.clone()),
        ))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.evaluate(emit_to).map(|a| vec![a])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        // A partial sum is added as a value is.
        self.update_batch(values, group_indices, None, total_num_groups)
    }

    /// Each row's own state: its value (null where it is null or filtered out); nothing is
    /// added, so nothing can overflow.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let Some(values) = values.first() else {
            return Err(DataFusionError::Internal(
                "a SUM was given no argument".to_string(),
            ));
        };
        Ok(vec![apply_filter_as_nulls(values.as_ref(), opt_filter)?])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * size_of::<T::Native>() + self.nulls.size()
    }
}

/// The row-wise accumulator (one group).
#[derive(Debug)]
struct SumAcc<T: CheckedInt> {
    sum: Option<T::Native>,
    data_type: DataType,
}

impl<T: CheckedInt> Accumulator for SumAcc<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first().and_then(|v| v.as_primitive_opt::<T>()) else {
            return Err(DataFusionError::Internal(format!(
                "a checked SUM of {} was given another type",
                T::TYPE_NAME
            )));
        };
        for value in values.iter().flatten() {
            let sum = self.sum.unwrap_or_default();
            self.sum = Some(
                T::checked_add(sum, value)
                    .ok_or_else(|| overflow::<T>(0, T::upward(value)).error())?,
            );
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        ScalarValue::new_primitive::<T>(self.sum, &self.data_type)
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}

/// `SUM(DISTINCT …)`: DataFusion's set of distinct values, added up in 128 bits.
#[derive(Debug)]
struct DistinctSum<T: CheckedInt> {
    inner: DistinctSumAccumulator<T>,
    data_type: DataType,
}

impl<T: CheckedInt> Accumulator for DistinctSum<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.inner.distinct_count() == 0 {
            return ScalarValue::new_primitive::<T>(None, &self.data_type);
        }
        let mut total: i128 = 0;
        for state in self.inner.state()? {
            let ScalarValue::List(list) = state else {
                continue;
            };
            if let Some(values) = list.values().as_primitive_opt::<T>() {
                for v in values.iter().flatten() {
                    // At most 2^64 values of at most 2^64 each: 128 bits hold the total.
                    total = total.saturating_add(T::wide(v));
                }
            }
        }
        let sum = T::narrow(total).ok_or_else(|| overflow::<T>(0, total > 0).error())?;
        ScalarValue::new_primitive::<T>(Some(sum), &self.data_type)
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<DataType>()
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int64Array, UInt64Array};
    use arrow::datatypes::{Field, Schema};
    use arrow::record_batch::RecordBatch;

    use crate::{compile_aggregates, CompiledAggregate, Scope};

    use super::*;

    fn scope() -> Scope {
        Scope::new(
            "s",
            Arc::new(Schema::new(vec![
                Field::new("v", DataType::Int64, true),
                Field::new("f", DataType::Float64, true),
                Field::new("u", DataType::UInt64, true),
            ])),
        )
    }

    fn aggregate(text: &str) -> CompiledAggregate {
        compile_aggregates(text, &scope()).expect("valid").remove(0)
    }

    fn args(agg: &CompiledAggregate, v: Vec<Option<i64>>) -> Vec<ArrayRef> {
        let n = v.len();
        let batch = RecordBatch::try_new(
            Arc::clone(&scope().schema),
            vec![
                Arc::new(Int64Array::from(v.clone())),
                Arc::new(arrow::array::Float64Array::from(vec![0.0; n])),
                Arc::new(UInt64Array::from(
                    v.iter()
                        .map(|x| x.map(|x| x.unsigned_abs()))
                        .collect::<Vec<_>>(),
                )),
            ],
        )
        .expect("valid");
        agg.arguments(&batch).expect("arguments")
    }

    /// SUM over groups `ids` of `values`, in one batch.
    fn sum(text: &str, values: Vec<Option<i64>>, ids: &[usize]) -> Result<ArrayRef> {
        let agg = aggregate(text);
        let mut acc = agg.groups_accumulator().expect("accumulator");
        let groups = ids.iter().max().map_or(0, |m| m + 1);
        acc.update_batch(&args(&agg, values), ids, None, groups)?;
        acc.evaluate(EmitTo::All)
    }

    fn ints(a: &ArrayRef) -> Vec<Option<i64>> {
        a.as_primitive::<Int64Type>().iter().collect()
    }

    #[test]
    fn a_sum_that_fits_is_the_sum_and_an_empty_group_is_null() {
        let out = sum(
            "SUM(v) AS s",
            vec![Some(1), Some(i64::MAX - 1), None, Some(-5)],
            &[0, 0, 1, 2],
        )
        .expect("fits");
        assert_eq!(ints(&out), vec![Some(i64::MAX), None, Some(-5)]);
    }

    #[test]
    fn a_total_beyond_bigint_either_way_is_an_error_naming_the_group() {
        let e = sum(
            "SUM(v) AS s",
            vec![Some(3), Some(i64::MAX), Some(1)],
            &[0, 1, 1],
        )
        .expect_err("overflows");
        let o = SumOverflow::of(&e).expect("an overflow");
        assert_eq!((o.group, o.upward, o.type_name), (1, true, "BIGINT"));
        assert_eq!(
            o.to_string(),
            "the total went above 9223372036854775807, the largest BIGINT"
        );
        let e = sum("SUM(v) AS s", vec![Some(i64::MIN), Some(-1)], &[0, 0]).expect_err("under");
        let o = SumOverflow::of(&e).expect("an overflow");
        assert!(!o.upward);
        assert_eq!(
            o.to_string(),
            "the total went below -9223372036854775808, the smallest BIGINT"
        );
    }

    #[test]
    fn a_total_that_goes_beyond_and_comes_back_is_still_an_error() {
        let e = sum(
            "SUM(v) AS s",
            vec![Some(i64::MAX), Some(1), Some(-1)],
            &[0, 0, 0],
        )
        .expect_err("overflows midway");
        assert!(SumOverflow::of(&e).is_some(), "{e}");
        // In another order it never leaves the range.
        let out = sum(
            "SUM(v) AS s",
            vec![Some(i64::MAX), Some(-1), Some(1)],
            &[0, 0, 0],
        )
        .expect("fits");
        assert_eq!(ints(&out), vec![Some(i64::MAX)]);
    }

    #[test]
    fn merging_partial_sums_is_checked() {
        let agg = aggregate("SUM(v) AS s");
        let mut parts = Vec::new();
        for v in [i64::MAX - 1, 2] {
            let mut acc = agg.groups_accumulator().expect("accumulator");
            acc.update_batch(&args(&agg, vec![Some(v)]), &[0], None, 1)
                .expect("fits");
            parts.push(acc.state(EmitTo::All).expect("state"));
        }
        let mut merged = agg.groups_accumulator().expect("accumulator");
        merged.merge_batch(&parts[0], &[0], 1).expect("fits");
        let e = merged
            .merge_batch(&parts[1], &[0], 1)
            .expect_err("overflows");
        assert_eq!(SumOverflow::of(&e).map(|o| o.group), Some(0));
    }

    #[test]
    fn rows_a_filter_drops_are_not_added() {
        let agg = aggregate("SUM(v) FILTER (WHERE v < 10) AS s");
        let batch_args = args(&agg, vec![Some(i64::MAX), Some(3), Some(4)]);
        let filter = BooleanArray::from(vec![false, true, true]);
        let mut acc = agg.groups_accumulator().expect("accumulator");
        acc.update_batch(&batch_args, &[0, 0, 0], Some(&filter), 1)
            .expect("the large value is filtered out");
        assert_eq!(
            ints(&acc.evaluate(EmitTo::All).expect("evaluates")),
            vec![Some(7)]
        );
    }

    #[test]
    fn distinct_and_unsigned_sums_are_checked_and_floats_are_untouched() {
        let agg = aggregate("SUM(DISTINCT v) AS s");
        let mut acc = agg.groups_accumulator().expect("accumulator");
        acc.update_batch(
            &args(
                &agg,
                vec![Some(i64::MAX), Some(i64::MAX), Some(1), Some(-1)],
            ),
            &[0, 0, 0, 0],
            None,
            1,
        )
        .expect("updates");
        // MAX + 1 - 1: the distinct total fits.
        assert_eq!(
            ints(&acc.evaluate(EmitTo::All).expect("fits")),
            vec![Some(i64::MAX)]
        );
        let mut acc = agg.groups_accumulator().expect("accumulator");
        acc.update_batch(&args(&agg, vec![Some(i64::MAX), Some(1)]), &[0, 0], None, 1)
            .expect("updates");
        let e = acc.evaluate(EmitTo::All).expect_err("overflows");
        assert!(e.to_string().contains("above 9223372036854775807"), "{e}");

        let e = sum(
            "SUM(u) AS s",
            vec![Some(i64::MIN), Some(i64::MIN), Some(i64::MIN)],
            &[0, 0, 0],
        )
        .expect_err("three times 2^63 is beyond u64");
        let o = SumOverflow::of(&e).expect("an overflow");
        assert_eq!(o.type_name, "BIGINT UNSIGNED");

        let agg = aggregate("SUM(f) AS s");
        assert_eq!(agg.data_type(), DataType::Float64);
        let agg = aggregate("SUM(CAST(v AS DECIMAL(20, 0))) AS s");
        assert!(matches!(agg.data_type(), DataType::Decimal128(30, 0)));
    }

    #[test]
    fn the_row_wise_accumulator_is_checked_too() {
        let data_type = DataType::Int64;
        let mut acc = SumAcc::<Int64Type> {
            sum: None,
            data_type,
        };
        let v: ArrayRef = Arc::new(Int64Array::from(vec![Some(i64::MAX), None]));
        acc.update_batch(&[Arc::clone(&v)]).expect("fits");
        assert_eq!(
            acc.evaluate().expect("value"),
            ScalarValue::Int64(Some(i64::MAX))
        );
        let e = acc.merge_batch(&[v]).expect_err("overflows");
        assert!(SumOverflow::of(&e).is_some());
    }

    #[test]
    fn sum_keeps_datafusion_s_types() {
        assert_eq!(aggregate("SUM(v) AS s").data_type(), DataType::Int64);
        assert_eq!(
            aggregate("SUM(CAST(v AS INT)) AS s").data_type(),
            DataType::Int64
        );
        assert_eq!(aggregate("SUM(u) AS s").data_type(), DataType::UInt64);
        let f = crate::FunctionProvider::get();
        use datafusion_expr::planner::ContextProvider;
        assert_eq!(f.get_aggregate_meta("SUM").expect("sum").name(), "sum");
    }
}
