-- Top-N: each auction's two highest bids (of equal prices, the earlier), an updating result.
-- A bid that enters an auction's top two is inserted, one that leaves it deleted; `rn` is
-- read, so it is a column, and a bid whose rank changes is updated (-U, +U) at its rank.
-- Without `rn` in the select list the output holds the bids alone (+I, -D).
CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE best_bids
WITH (connector = 'file', path = '${OUTPUT}', mode = 'changelog');
INSERT INTO best_bids
SELECT auction, bidder, price, rn
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn
  FROM bids
)
WHERE rn <= 2;
