-- User operators with keyed state (Flink's process table functions): per auction, the first
-- bid by event time, emitted once the watermark passes it (keep-first deduplication) — in
-- JavaScript, its body a module exporting process, timer and on_timer — and every 2nd bid of
-- a bidder with the running count and total, from a WebAssembly module
-- (examples/udfs/operators.wat). The states are anduin's, kept per key in the operator's
-- keyed state and its checkpoints; the output starts with the PARTITION BY columns.
--   anduin run examples/user_operators.sql --var INPUT=data/bids.csv --var OUTPUT=/tmp/first.csv --var OUTPUT2=/tmp/every.csv
CREATE FUNCTION first_bid(ts BIGINT, bidder BIGINT, price BIGINT)
RETURNS TABLE (ts BIGINT, bidder BIGINT, price BIGINT) LANGUAGE javascript AS $$
export function process(held, ts, bidder, price) {
  if (held === null) return { ts, bidder, price, emitted: false };
  if (!held.emitted && ts < held.ts) return { ts, bidder, price, emitted: false };
  return held;
}
// The key's timer: the held bid's time, until it is emitted.
export function timer(held) { return held.emitted ? null : held.ts; }
export function on_timer(held, watermark) {
  emit(held.ts, held.bidder, held.price);
  held.emitted = true;
  return held;
}
$$;
CREATE FUNCTION every_second(value BIGINT) RETURNS TABLE (n BIGINT, total BIGINT)
LANGUAGE wasm AS 'udfs/operators.wat';
CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE VIEW bid_values AS SELECT bidder, price AS value FROM bids;
CREATE TABLE first_bids WITH (connector = 'file', path = '${OUTPUT}');
CREATE TABLE running WITH (connector = 'file', path = '${OUTPUT2}');
INSERT INTO first_bids
SELECT * FROM first_bid(input => TABLE bids PARTITION BY auction);
INSERT INTO running
SELECT bidder, n, total FROM every_second(input => TABLE bid_values PARTITION BY bidder);
