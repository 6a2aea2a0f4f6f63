CREATE TABLE Ticker (symbol VARCHAR, tstamp TIMESTAMP, price BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'tstamp');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT *
FROM Ticker MATCH_RECOGNIZE (
     PARTITION BY symbol
     ORDER BY tstamp
     MEASURES  STRT.tstamp AS start_tstamp,
               LAST(DOWN.tstamp) AS bottom_tstamp,
               LAST(UP.tstamp) AS end_tstamp
     ONE ROW PER MATCH
     AFTER MATCH SKIP TO LAST UP
     PATTERN (STRT DOWN+ UP+)
     DEFINE
        DOWN AS DOWN.price < PREV(DOWN.price),
        UP AS UP.price > PREV(UP.price)
     ) MR
ORDER BY MR.symbol, MR.start_tstamp;
