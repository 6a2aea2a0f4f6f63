//! Channels between tasks: bounded FIFO queues of sequenced messages.

use std::num::NonZeroU16;
use std::sync::Arc;

use anduin_graph::ranges::{BoundRanges, Ranges};
use anduin_operator_api::keys::KeyEncoder;
use anduin_types::Message;
use arrow::array::{ArrayRef, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::stats::Counters;

/// A message with its sequence number on the channel (1, 2, 3, …), so that a consumer can
/// later recognise a message it has already seen when a producer replays.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub seq: u64,
    pub msg: Message,
}

/// What the consumer's end of a resumable network edge tells its task besides messages, for
/// a task whose head goes on without an input (a stream selector over copies): the stream
/// pauses while its producer is restored, and goes on where it stopped once it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// The producer's connection broke (its worker died, or its part failed).
    ProducerLost,
    /// A restored producer connected again: its messages continue the stream.
    ProducerBack,
}

/// The sending end of a channel, numbering what it sends.
pub(crate) struct Outlet {
    tx: Sender<Envelope>,
    next_seq: u64,
    /// Where the time spent waiting for room on the full channel is counted.
    blocked: Option<Arc<Counters>>,
    /// The consumer is a replica that may fail while the run goes on: once it is gone, what
    /// is sent to it is dropped rather than an error.
    may_vanish: bool,
    /// The consumer went away (with `may_vanish`).
    gone: bool,
}

/// The consumer has gone away.
#[derive(Debug)]
pub(crate) struct Disconnected;

impl Outlet {
    /// Counts the time this outlet waits on a full channel into `counters`.
    pub(crate) fn charge_to(&mut self, counters: Arc<Counters>) {
        self.blocked = Some(counters);
    }

    /// Lets the consumer go away while the run goes on (a replica).
    pub(crate) fn may_vanish(&mut self) {
        self.may_vanish = true;
    }

    pub(crate) fn send(&mut self, msg: Message) -> Result<(), Disconnected> {
        if self.gone {
            return Ok(());
        }
        let sent = self.send_now(msg);
        if sent.is_err() && self.may_vanish {
            self.gone = true;
            return Ok(());
        }
        sent
    }

    fn send_now(&mut self, msg: Message) -> Result<(), Disconnected> {
        self.next_seq += 1;
        let envelope = Envelope {
            seq: self.next_seq,
            msg,
        };
        match self.tx.try_send(envelope) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(_)) => Err(Disconnected),
            Err(TrySendError::Full(envelope)) => {
                // Backpressure: the consumer is behind.
                let started = std::time::Instant::now();
                let sent = self.tx.send(envelope).map_err(|_| Disconnected);
                if let Some(c) = &self.blocked {
                    c.add_blocked(started.elapsed());
                }
                sent
            }
        }
    }
}

/// Where one output of one operator instance goes: one channel, or one channel per instance
/// of a parallel consumer, each row to the instance that owns its key.
pub(crate) enum Route {
    /// Everything to one channel.
    One(Outlet),
    /// Rows by key; everything else (watermarks, barriers, the end) to every channel.
    Hashed(HashRoute),
    /// Everything to every channel.
    All(Vec<Outlet>),
    /// Batches to each channel in turn; everything else to every channel.
    InTurn(InTurnRoute),
    /// Rows by the range their value of a column falls in; everything else to every channel.
    Ranged(RangeRoute),
}

impl Route {
    /// Counts the time the route waits on full channels into `counters`.
    pub(crate) fn charge_to(&mut self, counters: &Arc<Counters>) {
        match self {
            Route::One(o) => o.charge_to(Arc::clone(counters)),
            Route::Hashed(h) => {
                for o in &mut h.outlets {
                    o.charge_to(Arc::clone(counters));
                }
            }
            Route::All(outlets)
            | Route::InTurn(InTurnRoute { outlets, .. })
            | Route::Ranged(RangeRoute { outlets, .. }) => {
                for o in outlets {
                    o.charge_to(Arc::clone(counters));
                }
            }
        }
    }

    /// Sends `msg` along the route.
    pub(crate) fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        match self {
            Route::One(o) => o.send(msg.clone()).map_err(|_| SendError::Disconnected),
            Route::Hashed(h) => h.send(msg),
            Route::InTurn(r) => r.send(msg),
            Route::Ranged(r) => r.send(msg),
            Route::All(outlets) => {
                for o in outlets {
                    o.send(msg.clone()).map_err(|_| SendError::Disconnected)?;
                }
                Ok(())
            }
        }
    }
}

/// What a route is without its channels: what an instance added while the query runs
/// copies from instance 0's (`crate::grow`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RouteShape {
    One,
    All(usize),
    InTurn(usize),
    Ranged(Ranges, usize),
    Hashed {
        keys: Vec<usize>,
        consumers: usize,
        active: usize,
        consumer: String,
    },
}

impl Route {
    /// Its shape: the exchange and the consumer instances it reaches now.
    pub(crate) fn shape(&self) -> RouteShape {
        match self {
            Route::One(_) => RouteShape::One,
            Route::All(o) => RouteShape::All(o.len()),
            Route::InTurn(r) => RouteShape::InTurn(r.outlets.len()),
            Route::Ranged(r) => RouteShape::Ranged(r.ranges.clone(), r.outlets.len()),
            Route::Hashed(h) => RouteShape::Hashed {
                keys: h.keys.clone(),
                consumers: h.outlets.len(),
                active: h.active,
                consumer: h.consumer.clone(),
            },
        }
    }
}

impl RouteShape {
    /// How many consumer instances it reaches.
    pub(crate) fn consumers(&self) -> usize {
        match self {
            RouteShape::One => 1,
            RouteShape::All(n) | RouteShape::InTurn(n) | RouteShape::Ranged(_, n) => *n,
            RouteShape::Hashed { consumers, .. } => *consumers,
        }
    }

    /// A route of this shape over `outlets` (one per consumer instance, in order); a hashed
    /// one opens channels to instances added to its consumer through `hook`.
    pub(crate) fn build(
        &self,
        mut outlets: Vec<Outlet>,
        hook: Option<crate::grow::GrowHook>,
    ) -> Route {
        match self {
            RouteShape::One if outlets.len() == 1 => {
                Route::One(outlets.pop().expect("one outlet, checked"))
            }
            RouteShape::One | RouteShape::All(_) => Route::All(outlets),
            RouteShape::InTurn(_) => Route::InTurn(InTurnRoute::new(outlets)),
            RouteShape::Ranged(r, _) => Route::Ranged(RangeRoute::new(r.clone(), outlets)),
            RouteShape::Hashed {
                keys,
                active,
                consumer,
                ..
            } => Route::Hashed(
                HashRoute::new(keys.clone(), outlets, *active, consumer.clone()).growing(hook),
            ),
        }
    }
}

/// Why a send failed.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The consumer has gone away.
    Disconnected,
    /// The rows could not be split by key.
    Partition(String),
    /// Channels to instances added to the consumer could not be opened.
    Grow(String),
}

/// Splits batches by the key group of their key columns, encoded as the keyed operators
/// encode the keys they store state under ([`KeyEncoder`]).
pub(crate) struct HashRoute {
    keys: Vec<usize>,
    outlets: Vec<Outlet>,
    encoder: Option<KeyEncoder>,
    /// How many of the consumer's instances own key groups (the first ones): rows go only
    /// to them; the others, spare instances of a rescalable operator, get everything else.
    active: usize,
    /// The consumer's head operator: a barrier rescaling it switches `active` once it has
    /// gone out (rows after it go by the new assignment).
    consumer: String,
    /// Where channels to instances added to the consumer while the query runs are opened (an
    /// embedded run's consumer that can grow, `crate::grow`).
    grows: Option<Box<Growing>>,
}

/// A hashed route to a consumer that can grow.
struct Growing {
    hook: crate::grow::GrowHook,
    /// The last watermark sent, whether the last idleness sent said idle, and whether the
    /// producer's input is exhausted: a channel opened later starts with them.
    last_watermark: Option<anduin_types::Watermark>,
    idle: bool,
    exhausted: bool,
}

impl HashRoute {
    /// A route to `outlets.len()` instances of `consumer`, of which the first `active` own
    /// key groups.
    pub(crate) fn new(
        keys: Vec<usize>,
        outlets: Vec<Outlet>,
        active: usize,
        consumer: String,
    ) -> Self {
        Self {
            keys,
            active: active.clamp(1, outlets.len().max(1)),
            outlets,
            encoder: None,
            consumer,
            grows: None,
        }
    }

    /// Opens channels to the instances added to the consumer while the query runs through
    /// `hook`.
    pub(crate) fn growing(mut self, hook: Option<crate::grow::GrowHook>) -> Self {
        self.grows = hook.map(|hook| {
            Box::new(Growing {
                hook,
                last_watermark: None,
                idle: false,
                exhausted: false,
            })
        });
        self
    }

    fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        let Message::Data(batch) = msg else {
            // A rescale beyond the consumer's instances: channels to the new ones, opened
            // before the barrier goes out (the consumer's instance 0 builds the new instances
            // once the barrier has come on all its inputs), which never carry the barrier.
            let mut added = Vec::new();
            if let (Message::Barrier(b), Some(g)) = (msg, &self.grows) {
                // Every rescale, in barrier order, numbers and places what it adds alike.
                g.hook.growth.apply(b);
                let to = crate::rescale::rescaled_to(b, &self.consumer);
                if let Some(to) = to.filter(|to| *to > self.outlets.len()) {
                    added = g
                        .hook
                        .open(self.outlets.len()..to, b.epoch)
                        .map_err(SendError::Grow)?;
                }
            }
            for o in &mut self.outlets {
                o.send(msg.clone()).map_err(|_| SendError::Disconnected)?;
            }
            // A scale-down below the instances added while running: the barrier was their
            // last message but the end; they retire (`crate::grow`).
            let keep = match (msg, &self.grows) {
                (Message::Barrier(b), Some(g)) => crate::rescale::rescaled_to(b, &self.consumer)
                    .and_then(|to| g.hook.growth.kept(g.hook.to_task, to)),
                _ => None,
            };
            if let Some(keep) = keep.filter(|k| *k < self.outlets.len()) {
                for mut o in self.outlets.drain(keep..) {
                    o.send(Message::End).map_err(|_| SendError::Disconnected)?;
                }
            }
            if let Some(g) = self.grows.as_mut() {
                match msg {
                    Message::Watermark(w) => g.last_watermark = Some(*w),
                    Message::Idle(idle) => g.idle = *idle,
                    Message::Exhausted => g.exhausted = true,
                    _ => {}
                }
            }
            let blocked = (!added.is_empty())
                .then(|| self.outlets.first().and_then(|o| o.blocked.clone()))
                .flatten();
            for mut o in added {
                if let Some(c) = &blocked {
                    o.charge_to(Arc::clone(c));
                }
                let g = self
                    .grows
                    .as_ref()
                    .expect("channels are added only where it grows");
                if let Some(w) = g.last_watermark {
                    o.send(Message::Watermark(w))
                        .map_err(|_| SendError::Disconnected)?;
                }
                if g.idle {
                    o.send(Message::Idle(true))
                        .map_err(|_| SendError::Disconnected)?;
                }
                if g.exhausted {
                    o.send(Message::Exhausted)
                        .map_err(|_| SendError::Disconnected)?;
                }
                self.outlets.push(o);
            }
            if let Message::Barrier(b) = msg {
                if let Some(active) = crate::rescale::rescaled_to(b, &self.consumer) {
                    self.active = active.clamp(1, self.outlets.len().max(1));
                }
            }
            return Ok(());
        };
        let parts = self
            .split(batch)
            .map_err(|e| SendError::Partition(e.to_string()))?;
        send_parts(&mut self.outlets, parts)
    }

    /// One batch per consumer instance (or none, when no row goes there).
    fn split(
        &mut self,
        batch: &RecordBatch,
    ) -> Result<Vec<Option<RecordBatch>>, arrow::error::ArrowError> {
        let n = self.outlets.len();
        let active = self.active;
        if self.keys.is_empty() {
            // No key (a global operator): everything to the first instance.
            let mut out = vec![None; n];
            if let Some(first) = out.first_mut() {
                *first = Some(batch.clone());
            }
            return Ok(out);
        }
        let columns: Vec<ArrayRef> = self
            .keys
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        if self.encoder.is_none() {
            let types = columns.iter().map(|c| c.data_type().clone());
            self.encoder = Some(KeyEncoder::new(types)?);
        }
        let encoder = self.encoder.as_ref().expect("created just above");
        let rows = encoder.encode(&columns)?;
        let parallelism = NonZeroU16::new(u16::try_from(active).unwrap_or(u16::MAX))
            .expect("at least one instance");
        let mut indices: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, row) in rows.iter().enumerate() {
            let instance = KeyEncoder::instance(row.as_ref(), parallelism);
            if let Some(list) = indices.get_mut(instance) {
                list.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        parts_of(batch, indices)
    }
}

/// Sends part i to outlet i (none where there is no part).
fn send_parts(outlets: &mut [Outlet], parts: Vec<Option<RecordBatch>>) -> Result<(), SendError> {
    for (o, part) in outlets.iter_mut().zip(parts) {
        if let Some(part) = part {
            o.send(Message::Data(part))
                .map_err(|_| SendError::Disconnected)?;
        }
    }
    Ok(())
}

/// `batch` cut into one part per consumer instance: `rows[i]` the rows instance i takes (no
/// part where it takes none, the batch itself where it takes all).
fn parts_of(
    batch: &RecordBatch,
    rows: Vec<Vec<u32>>,
) -> Result<Vec<Option<RecordBatch>>, arrow::error::ArrowError> {
    rows.into_iter()
        .map(|idx| {
            if idx.is_empty() {
                Ok(None)
            } else if idx.len() == batch.num_rows() {
                Ok(Some(batch.clone()))
            } else {
                take_record_batch(batch, &UInt32Array::from(idx)).map(Some)
            }
        })
        .collect()
}

/// Deals batches to the channels in turn (a stateless consumer's instances: any may take any
/// row), from the first again after every barrier, so that a producer restored from a
/// checkpoint deals what it sends again as it dealt it before. Everything that is not rows
/// goes to every channel.
pub(crate) struct InTurnRoute {
    outlets: Vec<Outlet>,
    next: usize,
}

impl InTurnRoute {
    pub(crate) fn new(outlets: Vec<Outlet>) -> Self {
        Self { outlets, next: 0 }
    }

    /// The channel the next batch goes to, and the one after.
    fn deal(&mut self) -> usize {
        let n = self.outlets.len().max(1);
        let this = self.next % n;
        self.next = (this + 1) % n;
        this
    }

    fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        if let Message::Data(_) = msg {
            let i = self.deal();
            return match self.outlets.get_mut(i) {
                Some(o) => o.send(msg.clone()).map_err(|_| SendError::Disconnected),
                None => Ok(()),
            };
        }
        for o in &mut self.outlets {
            o.send(msg.clone()).map_err(|_| SendError::Disconnected)?;
        }
        if let Message::Barrier(_) = msg {
            self.next = 0;
        }
        Ok(())
    }
}

/// Sends each row to the channel whose range holds its value of a column (a stateless
/// consumer's instances split by `ranges`). Everything that is not rows goes to every channel.
pub(crate) struct RangeRoute {
    ranges: Ranges,
    outlets: Vec<Outlet>,
    /// The ranges bound to the stream's schema at the first batch (boxed: a row converter is
    /// large, and routes are moved about).
    bound: Option<Box<BoundRanges>>,
}

impl RangeRoute {
    pub(crate) fn new(ranges: Ranges, outlets: Vec<Outlet>) -> Self {
        Self {
            ranges,
            outlets,
            bound: None,
        }
    }

    fn send(&mut self, msg: &Message) -> Result<(), SendError> {
        let Message::Data(batch) = msg else {
            for o in &mut self.outlets {
                o.send(msg.clone()).map_err(|_| SendError::Disconnected)?;
            }
            return Ok(());
        };
        if self.bound.is_none() {
            let bound = self
                .ranges
                .bind(&batch.schema())
                .map_err(|e| SendError::Partition(e.to_string()))?;
            self.bound = Some(Box::new(bound));
        }
        let bound = self.bound.as_ref().expect("bound just above");
        let rows = bound
            .split(batch.column(bound.index))
            .map_err(|e| SendError::Partition(e.to_string()))?;
        if rows.len() != self.outlets.len() {
            return Err(SendError::Partition(format!(
                "`ranges` on column \"{}\" make {} instances, and the operator runs {}",
                self.ranges.column,
                rows.len(),
                self.outlets.len()
            )));
        }
        let parts = parts_of(batch, rows).map_err(|e| SendError::Partition(e.to_string()))?;
        send_parts(&mut self.outlets, parts)
    }
}

/// A new bounded channel.
pub(crate) fn channel(capacity: usize) -> (Outlet, Receiver<Envelope>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
    (
        Outlet {
            tx,
            next_seq: 0,
            blocked: None,
            may_vanish: false,
            gone: false,
        },
        rx,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::{Barrier, Epoch};
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    fn batch(v: i64) -> Message {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        Message::Data(
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![v]))])
                .expect("a batch"),
        )
    }

    /// What each channel received: `b` for a barrier, the value of a one-row batch otherwise.
    fn received(rx: &Receiver<Envelope>) -> Vec<String> {
        rx.try_iter()
            .map(|e| match e.msg {
                Message::Data(b) => b
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .map_or("?".into(), |a| a.value(0).to_string()),
                Message::Barrier(_) => "b".into(),
                _ => "other".into(),
            })
            .collect()
    }

    #[test]
    fn batches_are_dealt_in_turn_from_the_first_again_after_every_barrier() {
        let (o1, r1) = channel(64);
        let (o2, r2) = channel(64);
        let (o3, r3) = channel(64);
        let mut route = Route::InTurn(InTurnRoute::new(vec![o1, o2, o3]));
        for v in 1..=4 {
            route.send(&batch(v)).expect("sent");
        }
        let epoch = Epoch(1);
        route
            .send(&Message::Barrier(Barrier::checkpoint(epoch, false)))
            .expect("sent");
        for v in 5..=6 {
            route.send(&batch(v)).expect("sent");
        }
        // A producer restored from the barrier deals 5 and 6 as it dealt them: the first
        // instance again, whatever came before the barrier.
        assert_eq!(received(&r1), ["1", "4", "b", "5"]);
        assert_eq!(received(&r2), ["2", "b", "6"]);
        assert_eq!(received(&r3), ["3", "b"]);
    }

    #[test]
    fn rows_go_to_the_instance_whose_range_holds_their_value_and_barriers_to_all() {
        let (o1, r1) = channel(64);
        let (o2, r2) = channel(64);
        let ranges = Ranges::parse("v: 0, 10").expect("well formed");
        let mut route = Route::Ranged(RangeRoute::new(ranges.clone(), vec![o1, o2]));
        // Two channels for three ranges: refused rather than dropping the third range's rows.
        assert!(matches!(
            route.send(&batch(1)),
            Err(SendError::Partition(_))
        ));
        let (o1, r1b) = channel(64);
        let (o2, r2b) = channel(64);
        let (o3, r3b) = channel(64);
        let mut route = Route::Ranged(RangeRoute::new(ranges, vec![o1, o2, o3]));
        for v in [-1, 0, 9, 10, 11] {
            route.send(&batch(v)).expect("sent");
        }
        route
            .send(&Message::Barrier(Barrier::checkpoint(Epoch(1), false)))
            .expect("sent");
        assert_eq!(received(&r1b), ["-1", "b"]);
        assert_eq!(received(&r2b), ["0", "9", "b"]);
        assert_eq!(received(&r3b), ["10", "11", "b"]);
        drop((r1, r2));
    }
}
