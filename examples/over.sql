-- OVER windows: each bid with the average and highest price of its auction's bids up to it
-- (the bid and the two before it, in event time). Each bid is written once the watermark
-- passes its time, in event-time order per auction; a bid earlier than one its auction
-- already wrote comes late and is left out. The output is append-only.
CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE bid_stats
WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO bid_stats
SELECT ts, auction, bidder, price,
  AVG(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS avg3,
  MAX(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS max3
FROM bids;
