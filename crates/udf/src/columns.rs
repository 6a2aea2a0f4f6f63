//! A function of a declaration evaluated on whole Arrow columns, one call per row: the
//! argument columns read by the declared types, the result column built, NULLs passed
//! through without a call. Shared by the WebAssembly and the JavaScript functions.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow::datatypes::{Float64Type, Int64Type};

use crate::call::{Arg, Out};
use crate::{Declaration, SqlType, UdfError};

/// `call` on each of `rows` rows whose arguments are the columns `args` (of the declared
/// types, in order): NULL where an argument is NULL (without a call) or where `call` gives
/// `None`. The first call that fails fails the whole evaluation.
pub(crate) fn each_row(
    declaration: &Declaration,
    args: &[ArrayRef],
    rows: usize,
    mut call: impl FnMut(&[Arg<'_>]) -> Result<Option<Out>, UdfError>,
) -> Result<ArrayRef, UdfError> {
    let name = &declaration.name;
    if args.len() != declaration.args.len() {
        return Err(UdfError::Abi {
            function: name.clone(),
            message: format!(
                "called with {} arguments, declared with {}",
                args.len(),
                declaration.args.len()
            ),
        });
    }
    let cols = args
        .iter()
        .zip(&declaration.args)
        .map(|(a, t)| Column::of(a, *t, name))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Builder::new(declaration.result, rows);
    let mut row_args = Vec::with_capacity(cols.len());
    for row in 0..rows {
        row_args.clear();
        for c in &cols {
            match c.get(row) {
                Some(a) => row_args.push(a),
                None => break,
            }
        }
        if row_args.len() < cols.len() {
            out.append_null();
            continue;
        }
        match call(&row_args)? {
            Some(value) => out.append(value),
            None => out.append_null(),
        }
    }
    Ok(out.finish())
}

/// An argument column, typed.
pub(crate) enum Column<'a> {
    I64(&'a arrow::array::PrimitiveArray<Int64Type>),
    F64(&'a arrow::array::PrimitiveArray<Float64Type>),
    Bool(&'a arrow::array::BooleanArray),
    Str(&'a arrow::array::StringArray),
}

impl<'a> Column<'a> {
    pub(crate) fn of(a: &'a ArrayRef, t: SqlType, name: &str) -> Result<Self, UdfError> {
        let col = match t {
            SqlType::Bigint => a.as_primitive_opt::<Int64Type>().map(Column::I64),
            SqlType::Double => a.as_primitive_opt::<Float64Type>().map(Column::F64),
            SqlType::Boolean => a.as_boolean_opt().map(Column::Bool),
            SqlType::Varchar => a.as_string_opt::<i32>().map(Column::Str),
        };
        col.ok_or_else(|| UdfError::Abi {
            function: name.to_string(),
            message: format!(
                "an argument of type {} where {t} was declared",
                a.data_type()
            ),
        })
    }

    pub(crate) fn get(&self, row: usize) -> Option<Arg<'a>> {
        match self {
            Column::I64(a) => a.is_valid(row).then(|| Arg::I64(a.value(row))),
            Column::F64(a) => a.is_valid(row).then(|| Arg::F64(a.value(row))),
            Column::Bool(a) => a.is_valid(row).then(|| Arg::Bool(a.value(row))),
            Column::Str(a) => a.is_valid(row).then(|| Arg::Str(a.value(row))),
        }
    }
}

/// The result column being built.
pub(crate) enum Builder {
    I64(Int64Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl Builder {
    pub(crate) fn new(t: SqlType, rows: usize) -> Self {
        match t {
            SqlType::Bigint => Builder::I64(Int64Builder::with_capacity(rows)),
            SqlType::Double => Builder::F64(Float64Builder::with_capacity(rows)),
            SqlType::Boolean => Builder::Bool(BooleanBuilder::with_capacity(rows)),
            SqlType::Varchar => Builder::Str(StringBuilder::with_capacity(rows, rows * 8)),
        }
    }

    pub(crate) fn append_null(&mut self) {
        match self {
            Builder::I64(b) => b.append_null(),
            Builder::F64(b) => b.append_null(),
            Builder::Bool(b) => b.append_null(),
            Builder::Str(b) => b.append_null(),
        }
    }

    /// Appends `v`, which is of the builder's type (the runner returns the declared type).
    pub(crate) fn append(&mut self, v: Out) {
        match (self, v) {
            (Builder::I64(b), Out::I64(v)) => b.append_value(v),
            (Builder::F64(b), Out::F64(v)) => b.append_value(v),
            (Builder::Bool(b), Out::Bool(v)) => b.append_value(v),
            (Builder::Str(b), Out::Str(v)) => b.append_value(v),
            (b, _) => b.append_null(),
        }
    }

    pub(crate) fn finish(self) -> ArrayRef {
        match self {
            Builder::I64(mut b) => Arc::new(b.finish()),
            Builder::F64(mut b) => Arc::new(b.finish()),
            Builder::Bool(mut b) => Arc::new(b.finish()),
            Builder::Str(mut b) => Arc::new(b.finish()),
        }
    }
}
