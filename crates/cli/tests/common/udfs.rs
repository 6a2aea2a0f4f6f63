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

/// User aggregates with a `retract`, for GROUP BYs without a window: `js_sum` (JavaScript,
/// its state a number), `js_max` (JavaScript, its state a multiset of values, so that any
/// value can be taken out) and `int_avg` (WebAssembly, `int_avg.wat` beside the query: copy
/// it with [`int_avg_module`]); they give what `SUM`, `MAX` and `AVG` give.
pub const RETRACTING_AGGREGATES: &str = r#"
CREATE AGGREGATE js_sum(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { return s + x; }
export function retract(s, x) { return s - x; }
$$;
CREATE AGGREGATE js_max(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return {}; }
export function accumulate(s, x) { s[x] = (s[x] || 0) + 1; return s; }
export function retract(s, x) { if (s[x] > 1) { s[x] -= 1; } else { delete s[x]; } return s; }
export function finish(s) {
  const held = Object.keys(s).map(Number);
  return held.length == 0 ? null : Math.max(...held);
}
$$;
CREATE AGGREGATE int_avg(x BIGINT) RETURNS DOUBLE LANGUAGE wasm AS 'int_avg.wat';
"#;

/// Copies examples/udfs/int_avg.wat (`int_avg`, with its `retract`) into `dir`.
pub fn int_avg_module(dir: &Path) {
    std::fs::copy(
        repo().join("examples/udfs/int_avg.wat"),
        dir.join("int_avg.wat"),
    )
    .expect("the example module");
}
