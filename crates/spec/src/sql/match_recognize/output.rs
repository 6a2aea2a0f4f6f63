//! The columns of a `MATCH_RECOGNIZE`'s output, the row pattern output table, in the
//! standard's order (ISO/IEC 9075-2:2016, and Trino's and Oracle's):
//!
//! - `ONE ROW PER MATCH`: the `PARTITION BY` columns, then the measures;
//! - `ALL ROWS PER MATCH` (with any of its options): the `PARTITION BY` columns, the
//!   `ORDER BY` columns, the measures, then the input's other columns in the input's order.
//!
//! The `pattern` operator keeps its own order for all rows per match, the input's columns
//! then the measures, which `.flow` scripts name; the SQL lowering spells out a `SELECT *`
//! in the standard's order where the two differ ([`Output::reordered`]).

/// The output columns of one `MATCH_RECOGNIZE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    /// The columns in the standard's order.
    pub columns: Vec<String>,
    /// Whether the pattern operator outputs them in another order, so that `*` over it must
    /// be spelled out to give the standard's.
    pub reordered: bool,
}

/// The output columns of a match over an input with columns `input`, partitioned by `keys`,
/// ordered by `order` (the event time, then the tie-breakers), with the measures `measures`;
/// `all_rows` for all rows per match.
pub(crate) fn output(
    all_rows: bool,
    input: &[String],
    keys: &[String],
    order: &[String],
    measures: &[String],
) -> Output {
    let operator: Vec<String> = if all_rows { input } else { keys }
        .iter()
        .chain(measures)
        .cloned()
        .collect();
    if !all_rows {
        return Output {
            columns: operator,
            reordered: false,
        };
    }
    let mut columns: Vec<String> = Vec::with_capacity(operator.len());
    for c in keys.iter().chain(order) {
        if !columns.contains(c) {
            columns.push(c.clone());
        }
    }
    let ordered = columns.len();
    columns.extend(measures.iter().cloned());
    for c in input {
        if !columns[..ordered].contains(c) {
            columns.push(c.clone());
        }
    }
    Output {
        reordered: columns != operator,
        columns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn all_rows_per_match_gives_partition_then_order_then_measures_then_the_rest() {
        let out = output(
            true,
            &names("value ts site sensor seq"),
            &names("sensor site"),
            &names("ts seq"),
            &names("b_ts n"),
        );
        assert_eq!(out.columns, names("sensor site ts seq b_ts n value"));
        assert!(out.reordered);
    }

    #[test]
    fn one_row_per_match_gives_the_partition_columns_then_the_measures_as_the_operator_does() {
        let out = output(
            false,
            &names("ts sensor value"),
            &names("sensor"),
            &names("ts"),
            &names("b_ts"),
        );
        assert_eq!(out.columns, names("sensor b_ts"));
        assert!(!out.reordered);
    }

    #[test]
    fn an_input_already_in_the_standard_s_order_needs_no_reordering() {
        // No measures: the partition and order columns lead the input already.
        let out = output(
            true,
            &names("sensor ts value"),
            &names("sensor"),
            &names("ts"),
            &[],
        );
        assert_eq!(out.columns, names("sensor ts value"));
        assert!(!out.reordered);
    }

    #[test]
    fn a_column_both_partitioned_and_ordered_by_is_output_once() {
        let out = output(
            true,
            &names("ts k v"),
            &names("k"),
            &names("ts k"),
            &names("m"),
        );
        assert_eq!(out.columns, names("k ts m v"));
    }
}
