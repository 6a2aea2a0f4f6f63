-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 3: Local Item Suggestion
-- -------------------------------------------------------------------------------------------------
-- Who is selling in OR, ID or CA in category 10, and for what auction ids? A join of
-- auctions with their sellers.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q3.sql.
--
-- NOT SUPPORTED YET: a regular join (no time condition: every auction and person kept forever, results
-- updated as rows arrive).
-- `anduin run` and `anduin bench` refuse it with the position of what is missing; see
-- docs/benchmarks.md (Nexmark) for the capability each unsupported query waits for.
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default /dev/null).
-- -------------------------------------------------------------------------------------------------

CREATE TABLE auction (
  id  BIGINT,
  itemName  VARCHAR,
  description  VARCHAR,
  initialBid  BIGINT,
  reserve  BIGINT,
  dateTime  TIMESTAMP,
  expires  TIMESTAMP,
  seller  BIGINT,
  category  BIGINT,
  extra  VARCHAR
) WITH (
  connector = 'nexmark',
  events = '${EVENTS:-10000000}',
  rate = '${RATE:-10000000}',
  seed = '${SEED:-42}',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

CREATE TABLE person (
  id  BIGINT,
  name  VARCHAR,
  emailAddress  VARCHAR,
  creditCard  VARCHAR,
  city  VARCHAR,
  state  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'nexmark',
  events = '${EVENTS:-10000000}',
  rate = '${RATE:-10000000}',
  seed = '${SEED:-42}',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

CREATE TABLE nexmark_q3 (
  name  VARCHAR,
  city  VARCHAR,
  state  VARCHAR,
  id  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q3
SELECT
    P.name, P.city, P.state, A.id
FROM
    auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE
    A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
