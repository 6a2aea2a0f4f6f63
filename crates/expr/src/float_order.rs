//! `MIN` and `MAX` of floats in the order SQL engines sort them: `-∞ < … < -0 < +0 < … < +∞ <
//! NaN`, every NaN equal to every other (Java's `Double.compare`, which Flink's `MIN`/`MAX`
//! use; PostgreSQL also puts NaN above every number). The result then depends neither on the
//! order of the rows nor on how they were split into batches, panes or sessions and merged.
//!
//! DataFusion 55.2's grouped `MIN`/`MAX` accumulators for floats compare with `partial_cmp`: a
//! NaN replaces whatever came before it and is replaced by whatever comes after it, `-0` and
//! `+0` keep whichever came first, and `MAX` starts from the largest negative finite value
//! (so that `MAX` of `-∞` alone is `-1.8e308`) — apache/datafusion#24432, fixed upstream after
//! 55.2. This module gives the same accumulator (DataFusion's `PrimitiveGroupsAccumulator`,
//! with the same one-column state) a comparison in that order and the order's extreme as its
//! starting value. A NaN result is the canonical quiet NaN, whatever NaN the rows held.

use std::cmp::Ordering;

use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};
use datafusion_expr::GroupsAccumulator;
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;
use half::f16;

/// A float type compared in SQL's order.
pub trait SqlFloat: Copy + Send + Sync + 'static {
    /// The canonical NaN, the largest value.
    const NAN: Self;
    /// The smallest value.
    const NEG_INFINITY: Self;
    /// `self` compared with `other`: `-∞ < … < -0 < +0 < … < +∞ < NaN`, NaNs equal.
    fn sql_cmp(self, other: Self) -> Ordering;
    /// `self`, with any NaN made the canonical one.
    fn canonical(self) -> Self;
}

macro_rules! sql_float {
    ($t:ty) => {
        impl SqlFloat for $t {
            const NAN: Self = <$t>::NAN;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            fn sql_cmp(self, other: Self) -> Ordering {
                match (self.is_nan(), other.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    (false, false) => self.total_cmp(&other),
                }
            }
            fn canonical(self) -> Self {
                if self.is_nan() {
                    Self::NAN
                } else {
                    self
                }
            }
        }
    };
}

sql_float!(f16);
sql_float!(f32);
sql_float!(f64);

/// A grouped accumulator for the aggregate function `function` (DataFusion's name, `min` or
/// `max`) over `data_type` if it is a float; `None` for any other function or type.
pub(crate) fn min_max_accumulator(
    function: &str,
    data_type: &DataType,
) -> Option<Box<dyn GroupsAccumulator>> {
    let min = match function {
        "min" => true,
        "max" => false,
        _ => return None,
    };
    match data_type {
        DataType::Float16 => Some(accumulator::<Float16Type>(min, data_type)),
        DataType::Float32 => Some(accumulator::<Float32Type>(min, data_type)),
        DataType::Float64 => Some(accumulator::<Float64Type>(min, data_type)),
        _ => None,
    }
}

fn accumulator<T>(min: bool, data_type: &DataType) -> Box<dyn GroupsAccumulator>
where
    T: ArrowPrimitiveType + Send,
    T::Native: SqlFloat,
{
    if min {
        // NaN, the largest value, gives way to any other.
        Box::new(
            PrimitiveGroupsAccumulator::<T, _>::new(data_type, |cur: &mut T::Native, new| {
                if new.sql_cmp(*cur) == Ordering::Less {
                    *cur = new;
                }
            })
            .with_starting_value(T::Native::NAN),
        )
    } else {
        Box::new(
            PrimitiveGroupsAccumulator::<T, _>::new(data_type, |cur: &mut T::Native, new| {
                if new.sql_cmp(*cur) == Ordering::Greater {
                    *cur = new.canonical();
                }
            })
            .with_starting_value(T::Native::NEG_INFINITY),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_above_infinity_and_minus_zero_below_zero() {
        let sorted = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NAN,
        ];
        for (i, a) in sorted.iter().enumerate() {
            for (j, b) in sorted.iter().enumerate() {
                assert_eq!(a.sql_cmp(*b), i.cmp(&j), "{a} vs {b}");
            }
        }
        // A NaN with the sign bit set or another payload is the same NaN.
        let odd = f64::from_bits(0xfff8_0000_0000_0001);
        assert!(odd.is_nan());
        assert_eq!(odd.sql_cmp(f64::NAN), Ordering::Equal);
        assert_eq!(odd.sql_cmp(f64::INFINITY), Ordering::Greater);
        assert_eq!(odd.canonical().to_bits(), f64::NAN.to_bits());
        assert_eq!((-0.0f32).sql_cmp(0.0), Ordering::Less);
        assert_eq!(f16::NAN.sql_cmp(f16::INFINITY), Ordering::Greater);
    }

    #[test]
    fn only_float_min_and_max_are_wrapped() {
        assert!(min_max_accumulator("min", &DataType::Float64).is_some());
        assert!(min_max_accumulator("max", &DataType::Float32).is_some());
        assert!(min_max_accumulator("max", &DataType::Float16).is_some());
        assert!(min_max_accumulator("max", &DataType::Int64).is_none());
        assert!(min_max_accumulator("sum", &DataType::Float64).is_none());
    }
}
