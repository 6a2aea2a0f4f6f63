-- User-defined aggregates: a weighted average written inline in JavaScript (RisingWave's
-- CREATE AGGREGATE, its body a module exporting create_state, accumulate, merge, finish)
-- and an exact integer average from a WebAssembly module (examples/udfs/int_avg.wat, its
-- state a 16-byte struct), per customer over ten-minute windows. Their states go into the
-- window's checkpoints like a built-in aggregate's.
--   anduin run examples/udaf.sql --var INPUT=data/orders.csv --var OUTPUT=/tmp/udaf.csv
CREATE AGGREGATE weighted_avg(value BIGINT, weight BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$
export function create_state() {
  return { sum: 0, weight: 0 };
}
export function accumulate(state, value, weight) {
  state.sum += value * weight;
  state.weight += weight;
  return state;
}
export function merge(a, b) {
  return { sum: a.sum + b.sum, weight: a.weight + b.weight };
}
export function finish(state) {
  return state.weight == 0 ? null : state.sum / state.weight;
}
$$;
CREATE AGGREGATE int_avg(x BIGINT) RETURNS DOUBLE LANGUAGE wasm AS 'udfs/int_avg.wat';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out
SELECT window_start, customer, weighted_avg(amount, 2) AS wavg, int_avg(amount) AS mean
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, customer;
