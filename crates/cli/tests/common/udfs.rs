//! What the scenarios of user-defined functions share: the example modules of
//! examples/udfs, and queries over data/orders.csv that call them.

use std::path::Path;

use super::repo;

/// The example modules of examples/udfs, compiled from their text into `dir/udfs/`
/// (`add_one.wasm`: `add_one`, `half`; `shout.wasm`: `shout`).
pub fn example_modules(dir: &Path) {
    std::fs::create_dir_all(dir.join("udfs")).expect("udfs folder");
    for name in ["add_one", "shout"] {
        let wasm =
            wat::parse_file(repo().join(format!("examples/udfs/{name}.wat"))).expect("valid text");
        std::fs::write(dir.join(format!("udfs/{name}.wasm")), wasm).expect("module");
    }
}

/// The SQL tables of data/orders.csv (`${INPUT}`) and of the output (`${OUTPUT}`).
pub const ORDERS: &str = "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
";

/// A `.flow` query over data/orders.csv (`${INPUT}`) calling `add_one` and `half`, keeping
/// the rows whose `add_one(amount)` is over 40, into `${OUTPUT}` (`next,h,customer`: data
/// rows start with a digit, as `output_rows` takes them); `udf`: the path of a `udf` block
/// loading their module, if any.
pub fn orders_flow(udf: Option<&str>) -> String {
    let block = udf.map_or_else(String::new, |p| format!("udf path = \"{p}\"\n"));
    format!(
        r#"{block}type name = "Order" {{
  column name = "ts", type = "timestamp"
  column name = "customer", type = "string"
  column name = "amount", type = "int"
}}
operator name = "src", type = "reader" {{
  param path = "${{INPUT}}"
  output name = "orders", type = "Order"
}}
operator name = "m", type = "map" {{
  input name = "orders"
  param columns = "add_one(amount) AS next, half(CAST(amount AS DOUBLE)) AS h, customer"
  output name = "next"
}}
operator name = "f", type = "filter" {{
  input name = "next"
  param condition = "next > 40"
  output name = "big"
}}
operator name = "out", type = "writer" {{
  input name = "big"
  param path = "${{OUTPUT}}"
}}
"#
    )
}
