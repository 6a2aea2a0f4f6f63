-- Views refused where they are created: over an unknown table, over a view created after
-- them, with a query anduin refuses, twice the same name; an INSERT that reads a refused view
-- points at it; a view is not written.
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP)
WITH (connector = 'nexmark', events = '1000', event_time = 'dateTime', watermark = '4 seconds');
CREATE TABLE out WITH (connector = 'discard');
CREATE VIEW lost AS SELECT auction FROM bids;
CREATE VIEW early AS SELECT auction FROM late;
CREATE VIEW late AS SELECT auction FROM bid;
CREATE VIEW distinct_bidders AS SELECT DISTINCT bidder FROM bid;
CREATE VIEW late AS SELECT bidder FROM bid;
CREATE VIEW p AS SELECT *, PROCTIME() AS p_time FROM bid;
INSERT INTO out SELECT bidder FROM distinct_bidders;
INSERT INTO late SELECT auction FROM bid;
INSERT INTO out SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(SESSION(TABLE p, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
