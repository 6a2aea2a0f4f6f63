//! The engine events of the served queries, fanned out to `GET /api/v1/events` clients.
//!
//! An [`EventFeed`] is a [`Subscriber`] of one query's run: it puts each event on a tokio
//! broadcast channel and returns at once, whether anyone listens or not. Each client reads
//! the channel at its own pace; one that falls more than the channel's capacity behind
//! misses the oldest events and is told how many (an SSE event `lagged`), so a slow client
//! never holds back the query.

use std::sync::Arc;

use anduin_runtime::{EngineEvent, Subscriber};
use futures_util::Stream;
use serde::Serialize;
use tokio::sync::{broadcast, watch};

/// One engine event of one query, as `GET /api/v1/events` sends it (the event's fields and
/// `query`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedEvent {
    /// The query it happened in.
    pub query: String,
    /// What happened.
    #[serde(flatten)]
    pub event: EngineEvent,
}

/// Publishes a query's engine events to the API's event stream; hand it to the run as a
/// subscriber (`Events::with(Arc::new(feed))`). Made by [`crate::Registry::event_feed`].
#[derive(Clone)]
pub struct EventFeed {
    query: Arc<str>,
    tx: broadcast::Sender<Arc<FeedEvent>>,
}

impl std::fmt::Debug for EventFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventFeed")
            .field("query", &self.query)
            .field("listeners", &self.tx.receiver_count())
            .finish()
    }
}

impl EventFeed {
    /// A feed whose slowest reader may fall `capacity` events behind before it misses some.
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Self {
            query: Arc::from(""),
            tx,
        }
    }

    /// The same channel, tagging events with `query`.
    pub(crate) fn for_query(&self, query: &str) -> Self {
        Self {
            query: Arc::from(query),
            tx: self.tx.clone(),
        }
    }

    /// A new reader, from the next event on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<FeedEvent>> {
        self.tx.subscribe()
    }
}

impl Subscriber for EventFeed {
    fn event(&self, event: &EngineEvent) {
        if self.tx.receiver_count() == 0 {
            return; // nobody listens: no copy to make
        }
        // `send` never waits: with no reader it fails (nobody listens, nothing to do), and a
        // full channel drops its oldest event for the readers that have not seen it.
        let _ = self.tx.send(Arc::new(FeedEvent {
            query: self.query.to_string(),
            event: event.clone(),
        }));
    }
}

/// What a client of the event stream gets next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FeedItem {
    /// An event.
    Event(Arc<FeedEvent>),
    /// The client fell behind and missed this many events (of every query: a client of one
    /// query's events is told of the others' it missed too).
    Lagged(u64),
}

/// The events of `rx` (of query `only`, if given) until the feed closes or `shutdown` turns
/// true.
pub(crate) fn feed_items(
    rx: broadcast::Receiver<Arc<FeedEvent>>,
    only: Option<String>,
    shutdown: watch::Receiver<bool>,
) -> impl Stream<Item = FeedItem> + Send + 'static {
    futures_util::stream::unfold(
        (rx, only, shutdown),
        |(mut rx, only, mut shutdown)| async move {
            loop {
                if *shutdown.borrow() {
                    return None;
                }
                let next = tokio::select! {
                    r = rx.recv() => r,
                    _ = shutdown.changed() => return None,
                };
                let item = match next {
                    Ok(e) if only.as_deref().is_none_or(|q| q == e.query) => FeedItem::Event(e),
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(n)) => FeedItem::Lagged(n),
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                return Some((item, (rx, only, shutdown)));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn completed(epoch: u64) -> EngineEvent {
        EngineEvent::CheckpointCompleted {
            epoch,
            finished: false,
        }
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_told_how_many_events_it_missed_and_reads_on() {
        let feed = EventFeed::new(2);
        let sensors = feed.for_query("sensors");
        let (_stop, shutdown) = watch::channel(false);
        let items = feed_items(feed.subscribe(), None, shutdown);
        // The publisher never waits for the reader, which has not read anything yet.
        for epoch in 1..=5 {
            sensors.event(&completed(epoch));
        }
        drop((feed, sensors));
        let got: Vec<FeedItem> = items.collect().await;
        let event = |epoch| {
            FeedItem::Event(Arc::new(FeedEvent {
                query: "sensors".into(),
                event: completed(epoch),
            }))
        };
        assert_eq!(got, vec![FeedItem::Lagged(3), event(4), event(5)]);
    }

    #[tokio::test]
    async fn a_reader_of_one_query_sees_only_its_events_and_ends_at_shutdown() {
        let feed = EventFeed::new(16);
        let (stop, shutdown) = watch::channel(false);
        let mut items = Box::pin(feed_items(feed.subscribe(), Some("b".into()), shutdown));
        feed.for_query("a").event(&completed(1));
        feed.for_query("b").event(&completed(2));
        match items.next().await {
            Some(FeedItem::Event(e)) => {
                assert_eq!((e.query.as_str(), &e.event), ("b", &completed(2)))
            }
            other => panic!("expected b's event, got {other:?}"),
        }
        stop.send(true).expect("the reader holds the receiver");
        assert_eq!(items.next().await, None);
    }

    #[test]
    fn an_event_is_sent_as_its_fields_and_the_query() {
        let e = FeedEvent {
            query: "sensors".into(),
            event: completed(7),
        };
        assert_eq!(
            serde_json::to_value(&e).expect("serialisable"),
            serde_json::json!({"query": "sensors", "event": "checkpoint_completed", "epoch": 7, "finished": false})
        );
    }
}
