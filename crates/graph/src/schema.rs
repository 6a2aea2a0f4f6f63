//! Comparing and describing stream schemas as the language sees them.

use anduin_types::ColumnType;
use arrow::datatypes::Schema;

/// Why `actual` cannot be carried by a stream of type `declared`, if it cannot: column names
/// and language types (int, double, …) must match in order.
pub fn schema_mismatch(declared: &Schema, actual: &Schema) -> Option<String> {
    if declared.fields().len() != actual.fields().len() {
        return Some(format!(
            "{} columns declared, {} produced",
            declared.fields().len(),
            actual.fields().len()
        ));
    }
    for (d, a) in declared.fields().iter().zip(actual.fields()) {
        if d.name() != a.name() {
            return Some(format!(
                "column `{}` is declared where `{}` is produced",
                d.name(),
                a.name()
            ));
        }
        let dt = ColumnType::from_arrow(d.data_type());
        let at = ColumnType::from_arrow(a.data_type());
        if dt != at {
            return Some(format!(
                "column `{}` is declared {} but produced as {}",
                d.name(),
                dt.map(|t| t.name().to_string())
                    .unwrap_or_else(|| d.data_type().to_string()),
                at.map(|t| t.name().to_string())
                    .unwrap_or_else(|| a.data_type().to_string())
            ));
        }
    }
    None
}

/// A schema as the language writes it: `(ts timestamp, sensor int)` (without the change kind
/// of an updating stream's rows, which is not a column a query names).
pub fn describe_schema(s: &Schema) -> String {
    let columns = s.fields().len() - usize::from(anduin_types::is_updating(s));
    let cols: Vec<String> = s
        .fields()
        .iter()
        .take(columns)
        .map(|f| {
            format!(
                "{} {}",
                f.name(),
                ColumnType::from_arrow(f.data_type())
                    .map(|t| t.name().to_string())
                    .unwrap_or_else(|| f.data_type().to_string())
            )
        })
        .collect();
    format!("({})", cols.join(", "))
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::{DataType, Field};

    use super::*;

    #[test]
    fn a_declared_type_must_match_names_and_types_in_order() {
        let a = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
        let b = Schema::new(vec![Field::new("x", DataType::Int32, true)]);
        let c = Schema::new(vec![Field::new("y", DataType::Int64, true)]);
        assert_eq!(
            schema_mismatch(&a, &b),
            None,
            "both are ints to the language"
        );
        assert_eq!(
            schema_mismatch(&a, &c).as_deref(),
            Some("column `x` is declared where `y` is produced")
        );
        assert_eq!(describe_schema(&a), "(x int)");
    }
}
