//! Spreading a pattern's partial matches over copies (paper §4.4, `overflow_instances = K`):
//! the query runs the pattern and its copies `NAME_replica_1` … `NAME_replica_{K-1}`, each as
//! one instance reading the pattern's whole input (the rewriting made them:
//! `anduin_graph::rewriting::overflow_spec`). Copy 0 starts matches; the others only extend
//! the partial matches handed to them. At a *handoff point* copy k takes what copy k − 1
//! handed it there, then, when it keeps more partial matches than `max_partial_matches`,
//! hands its oldest to copy k + 1 so that half the limit stay. So the oldest partial matches
//! drift along the chain.
//!
//! The handoff points are the same point of every copy's input, which is what makes a handoff
//! exact (the copies read one stream: the same batches, watermarks and barriers in the same
//! order):
//! - every checkpoint barrier, before the copy's snapshot, so that each snapshot holds
//!   exactly the partial matches its copy holds after the handoff: a restore from the
//!   checkpoint neither loses nor repeats one;
//! - between barriers, after the batch that brings the rows a copy has read since the last
//!   point to half `max_partial_matches` or more ([`rows_between`]): a copy's partial matches
//!   grow by at most one per row it matches, so this bounds them between checkpoints too
//!   (to the limit and about what one batch and one watermark's release start). Both copies
//!   count the same rows from the same point (a restore starts both from one checkpoint), so
//!   they agree on the points without telling each other.
//!
//! In one process only: the copies hand over through in-process channels (a cluster refuses
//! such a query before it runs).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_graph::LogicalGraph;
use anduin_operator_api::{Handed, Operator, OperatorError, SpreadRole};
use anduin_types::Epoch;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::rescale::Handoff;
use crate::topology::WorkerId;

/// Where in the copies' common input a handoff happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
    /// At the barrier of this checkpoint.
    Barrier(Epoch),
    /// The `n`-th point between barriers since the barrier of `after` (or the start).
    Rows { after: Epoch, n: u64 },
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Barrier(e) => write!(f, "the barrier of epoch {}", e.0),
            Point::Rows { after, n } => {
                write!(f, "handoff {n} after the barrier of epoch {}", after.0)
            }
        }
    }
}

/// How many rows a copy reads between two handoffs outside barriers, for a limit of `max`
/// partial matches: half of it (at least one).
pub(crate) fn rows_between(max: u64) -> u64 {
    (max / 2).max(1)
}

/// How many rows copy `op` reads between two handoffs outside barriers: by its limit of
/// partial matches, or after every batch when it hands on by age (`stage_age`).
pub(crate) fn rows_between_of(op: &dyn Operator) -> u64 {
    let figures = op.metrics();
    if figure(&figures, "stage_age_ms").is_some() {
        return 1;
    }
    figure(&figures, "max_partial_matches").map_or(1, rows_between)
}

/// What copy k hands copy k + 1 at one point (nothing, when it keeps all it has).
pub(crate) struct Handing {
    at: Point,
    handed: Option<Handed>,
}

/// What a copy does with its partial matches at a barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Within its limit: it keeps them all.
    Keep,
    /// Over it: hands on the oldest so that `keep` stay.
    Hand { keep: u64 },
    /// Over it with no copy after it to hand to: it keeps them, and says so.
    Hold,
}

/// What copy `partial_matches` over a limit of `max` does, `next` saying whether a copy
/// follows it.
pub(crate) fn decide(partial_matches: u64, max: u64, next: bool) -> Decision {
    match (partial_matches > max, next) {
        (false, _) => Decision::Keep,
        (true, true) => Decision::Hand { keep: max / 2 },
        (true, false) => Decision::Hold,
    }
}

/// Where a copy takes what the copy before it hands it.
enum Prev {
    /// From a copy in this process.
    Here(Receiver<Handing>),
    /// From a copy in another process (a cluster's worker), over the data plane into this
    /// copy's inbox ([`crate::net::handoff`]).
    Elsewhere(Receiver<Handoff>),
}

/// Where a copy hands on to the copy after it.
enum Next {
    Here(Sender<Handing>),
    Elsewhere(Box<crate::net::RemoteMate>),
}

/// One copy's ends of the chain of copies. With `parallelism`, instance i of every copy
/// reads the key groups of instance i of the others (one producer splits the input alike for
/// each copy), and the instances i form a chain of their own.
pub(crate) struct Spreader {
    /// Which copy this is (0: the one that starts matches), of `copies`, and its name.
    copy: usize,
    copies: usize,
    name: String,
    /// Which instance of the copy this is (the same in the copies before and after it).
    instance: usize,
    /// The names of the copies before and after it.
    prev: Option<String>,
    next: Option<String>,
    from: Option<Prev>,
    to: Option<Next>,
    /// How long to wait for a copy in another process before this one fails (its process
    /// may be gone without this one hearing of it); `None`: until the run fails.
    patience: Option<Duration>,
    abort: Arc<AtomicBool>,
    /// Whether it said it holds more than its limit with nowhere to hand them.
    held: bool,
    /// Rows read since the last handoff point, and how many make the next one.
    rows: u64,
    every: Option<u64>,
    /// The last barrier and the points between barriers since it.
    after: Epoch,
    n: u64,
}

impl Spreader {
    /// The role this copy's operator plays.
    pub(crate) fn role(&self) -> SpreadRole {
        if self.copy == 0 {
            SpreadRole::Start
        } else {
            SpreadRole::Extend
        }
    }

    /// The handoff point at the barrier of `epoch`: the rows between barriers count from it.
    pub(crate) fn at_barrier(&mut self, epoch: Epoch) -> Point {
        self.rows = 0;
        self.after = epoch;
        self.n = 0;
        Point::Barrier(epoch)
    }

    /// The copy has read `rows` more rows (a batch, now processed): the handoff point they
    /// make, if they do. `every` tells how many rows make one the first time
    /// ([`rows_between_of`]).
    pub(crate) fn read(&mut self, rows: usize, every: impl FnOnce() -> u64) -> Option<Point> {
        let every = *self.every.get_or_insert_with(every);
        self.rows += rows as u64;
        if self.rows < every {
            return None;
        }
        self.rows = 0;
        self.n += 1;
        Some(Point::Rows {
            after: self.after,
            n: self.n,
        })
    }

    /// What the copy before this one handed it at `point` (waits for it).
    pub(crate) fn take(
        &mut self,
        point: Point,
        name: &str,
    ) -> Result<Option<Handed>, OperatorError> {
        let Some(from) = &self.from else {
            return Ok(None);
        };
        let began = std::time::Instant::now();
        let fail = |message: String| Err(OperatorError::internal(name, message));
        loop {
            let got = match from {
                Prev::Here(rx) => rx.recv_timeout(Duration::from_millis(100)).map(Ok),
                Prev::Elsewhere(rx) => rx.recv_timeout(Duration::from_millis(100)).map(handing_of),
            };
            match got {
                Ok(Ok(h)) if h.at == point => {
                    if let (Prev::Elsewhere(_), Some(handed)) = (from, &h.handed) {
                        tracing::info!(
                            operator = name,
                            from = self.prev.as_deref().unwrap_or("?"),
                            partial_matches = handed.partial_matches,
                            %point,
                            "partial matches arrived from a copy on another worker"
                        );
                    }
                    return Ok(h.handed);
                }
                Ok(Ok(h)) => {
                    return fail(format!(
                        "copy {} handed partial matches at {} while this copy is at {point} (this is a bug: the copies read one stream)",
                        self.copy - 1,
                        h.at,
                    ))
                }
                Ok(Err(why)) => {
                    return fail(format!(
                        "copy {} handed partial matches this copy cannot read: {why}",
                        self.copy - 1
                    ))
                }
                Err(RecvTimeoutError::Timeout) if self.abort.load(Ordering::Relaxed) => {
                    return fail(
                        "the run failed while this copy waited for the partial matches of the copy before it".into(),
                    )
                }
                Err(RecvTimeoutError::Timeout)
                    if self.patience.is_some_and(|p| began.elapsed() > p) =>
                {
                    return fail(format!(
                        "copy {} ({}, on another worker) handed nothing at {point} for {} s: its process may be gone",
                        self.copy - 1,
                        self.prev.as_deref().unwrap_or("?"),
                        began.elapsed().as_secs()
                    ))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return fail(format!(
                        "copy {} stopped before it handed over its partial matches at {point}",
                        self.copy - 1,
                    ))
                }
            }
        }
    }

    /// Sends `handing` to the next copy, wherever it runs.
    fn send(&self, handing: Handing, name: &str) -> Result<(), OperatorError> {
        let sent = match &self.to {
            None => return Ok(()),
            Some(Next::Here(tx)) => tx.send(handing).map_err(|_| "it has stopped".to_string()),
            Some(Next::Elsewhere(mate)) => mate
                .hand(handoff_of(handing, self.instance))
                .map_err(|e| format!("on worker {}: {e}", mate.worker())),
        };
        sent.map_err(|why| {
            OperatorError::internal(
                name,
                format!(
                    "copy {} ({}) could not take this copy's partial matches: {why}",
                    self.copy + 1,
                    self.next.as_deref().unwrap_or("?")
                ),
            )
        })
    }

    /// Hands `op`'s oldest partial matches to the next copy at `point` when it keeps more
    /// than its limit, or, handing on by age, those older than its stage (an empty handing
    /// otherwise: the next copy waits for one).
    pub(crate) fn give(
        &mut self,
        point: Point,
        name: &str,
        op: &mut dyn Operator,
    ) -> Result<(), OperatorError> {
        let figures = op.metrics();
        if let Some(age) = figure(&figures, "stage_age_ms") {
            if self.to.is_none() {
                return Ok(());
            }
            let handed = op.spread_older(stage_limit(self.copy, age))?;
            let handed = (handed.partial_matches > 0).then_some(handed);
            return self.send(Handing { at: point, handed }, name);
        }
        let (Some(partial), Some(max)) = (
            figure(&figures, "partial_matches"),
            figure(&figures, "max_partial_matches"),
        ) else {
            return Err(OperatorError::internal(
                name,
                "a copy that spreads partial matches does not report `partial_matches` and `max_partial_matches`",
            ));
        };
        let handed = match decide(partial, max, self.to.is_some()) {
            Decision::Keep => None,
            Decision::Hand { keep } => Some(op.spread(keep)?),
            Decision::Hold => {
                if !self.held {
                    self.held = true;
                    tracing::warn!(
                        operator = name,
                        partial_matches = partial,
                        max_partial_matches = max,
                        copies = self.copies,
                        "the last copy keeps more partial matches than its limit and has no copy to hand them to: give the pattern a larger overflow_instances (or more memory)"
                    );
                }
                None
            }
        };
        self.send(Handing { at: point, handed }, name)
    }

    /// Reaches the copies before and after this one that run in another process than this
    /// one (`here`), over `net`: `worker_of(name)` says where a copy's instance of this
    /// instance's number runs. The copies still
    /// hand over at the same points, each handing a round trip over the data plane.
    pub(crate) fn across(
        &mut self,
        net: &crate::net::NetWiring,
        worker_of: &dyn Fn(&str) -> Option<WorkerId>,
        patience: Option<Duration>,
    ) {
        let elsewhere = |name: &Option<String>| {
            let name = name.as_deref()?;
            let worker = worker_of(name)?;
            (!net.runs(worker)).then(|| (name.to_string(), worker))
        };
        let i = self.instance;
        if let Some((next, worker)) = elsewhere(&self.next) {
            self.to = Some(Next::Elsewhere(Box::new(
                net.handoff_to(&next, i, i, worker),
            )));
        }
        if elsewhere(&self.prev).is_some() {
            let (tx, rx) = crossbeam_channel::unbounded();
            net.expect_handoffs(&self.name, i, tx);
            self.from = Some(Prev::Elsewhere(rx));
            self.patience = patience;
        }
    }
}

/// A handing as a key-group handoff crosses processes, from instance `instance` of a copy:
/// the point and the handed figures in its inline part, the partial matches' bytes as its
/// state.
fn handoff_of(h: Handing, instance: usize) -> Handoff {
    let (kind, epoch, n) = match h.at {
        Point::Barrier(e) => ("barrier", e, 0),
        Point::Rows { after, n } => ("rows", after, n),
    };
    let handed = h.handed.as_ref().map(
        |x| serde_json::json!({"partial_matches": x.partial_matches, "partitions": x.partitions}),
    );
    Handoff {
        epoch,
        from: instance,
        range: anduin_state::KeyGroupRange::new(0, 0),
        bytes: h.handed.map(|x| x.bytes).unwrap_or_default(),
        inline: Some(serde_json::json!({"point": kind, "n": n, "handed": handed})),
    }
}

/// [`handoff_of`] back.
fn handing_of(h: Handoff) -> Result<Handing, String> {
    let inline = h.inline.ok_or("no point")?;
    let n = inline
        .get("n")
        .and_then(serde_json::Value::as_u64)
        .ok_or("no n")?;
    let at = match inline.get("point").and_then(serde_json::Value::as_str) {
        Some("barrier") => Point::Barrier(h.epoch),
        Some("rows") => Point::Rows { after: h.epoch, n },
        other => return Err(format!("an unknown point {other:?}")),
    };
    let handed = match inline.get("handed") {
        None | Some(serde_json::Value::Null) => None,
        Some(x) => {
            let figure = |k: &str| x.get(k).and_then(serde_json::Value::as_u64);
            Some(Handed {
                partial_matches: figure("partial_matches").ok_or("no partial_matches")?,
                partitions: figure("partitions").ok_or("no partitions")?,
                bytes: h.bytes,
            })
        }
    };
    Ok(Handing { at, handed })
}

/// The figure `key` among an operator's metrics.
fn figure(figures: &[(&'static str, u64)], key: &str) -> Option<u64> {
    figures.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// How old the attempts copy `copy` hands on are when the copies hand on by age `age`
/// milliseconds a stage: older than `(copy + 1) × age`.
pub(crate) fn stage_limit(copy: usize, age: u64) -> u64 {
    age.saturating_mul((copy as u64).saturating_add(1))
}

/// Every copy's spreaders, by the copy's name and the instance.
pub(crate) type Spreaders = BTreeMap<(String, usize), Spreader>;

/// The spreaders of every instance of every copy of every pattern of `graph` that spreads
/// its partial matches, by the copy's name and the instance (see
/// [`anduin_graph::rewriting::spread_chains`]): instance i of each copy chained to instance
/// i of the next by in-process channels, `instances(name)` instances of each;
/// [`Spreader::across`] reaches a neighbour in another process.
pub(crate) fn spreaders<B>(
    graph: &LogicalGraph<B>,
    instances: &dyn Fn(&str) -> usize,
    abort: &Arc<AtomicBool>,
) -> Spreaders {
    let mut out = BTreeMap::new();
    for names in anduin_graph::rewriting::spread_chains(graph) {
        let copies = names.len();
        let parallelism = names.first().map_or(1, |n| instances(n));
        for i in 0..parallelism {
            let (senders, receivers): (Vec<_>, Vec<_>) =
                (1..copies).map(|_| crossbeam_channel::unbounded()).unzip();
            let mut senders = senders.into_iter().map(Some).collect::<Vec<_>>();
            let mut receivers = receivers.into_iter().map(Some).collect::<Vec<_>>();
            for (k, name) in names.iter().enumerate() {
                let from = k.checked_sub(1).and_then(|j| receivers[j].take());
                let to = senders.get_mut(k).and_then(Option::take);
                out.insert(
                    (name.clone(), i),
                    Spreader {
                        copy: k,
                        copies,
                        name: name.clone(),
                        instance: i,
                        prev: k.checked_sub(1).map(|j| names[j].clone()),
                        next: names.get(k + 1).cloned(),
                        from: from.map(Prev::Here),
                        to: to.map(Next::Here),
                        patience: None,
                        abort: Arc::clone(abort),
                        held: false,
                        rows: 0,
                        every: None,
                        after: Epoch(0),
                        n: 0,
                    },
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_hands_on_only_over_its_limit_and_the_last_holds() {
        assert_eq!(decide(10, 10, true), Decision::Keep);
        assert_eq!(decide(11, 10, true), Decision::Hand { keep: 5 });
        assert_eq!(decide(11, 10, false), Decision::Hold);
        assert_eq!(decide(0, 1, false), Decision::Keep);
        assert_eq!(decide(2, 1, true), Decision::Hand { keep: 0 });
    }

    #[test]
    fn a_handing_of_the_wrong_epoch_or_a_gone_copy_fails_the_copy_waiting_for_it() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut s = spreader(1, Some(rx));
        tx.send(Handing {
            at: Point::Barrier(Epoch(3)),
            handed: None,
        })
        .expect("sent");
        assert_eq!(
            s.take(Point::Barrier(Epoch(3)), "p").expect("its epoch"),
            None
        );
        tx.send(Handing {
            at: Point::Barrier(Epoch(5)),
            handed: None,
        })
        .expect("sent");
        let err = s
            .take(Point::Barrier(Epoch(4)), "p")
            .expect_err("another epoch")
            .to_string();
        assert!(
            err.contains("at the barrier of epoch 5 while this copy is at the barrier of epoch 4"),
            "{err}"
        );
        tx.send(Handing {
            at: Point::Rows {
                after: Epoch(5),
                n: 2,
            },
            handed: None,
        })
        .expect("sent");
        let err = s
            .take(
                Point::Rows {
                    after: Epoch(5),
                    n: 1,
                },
                "p",
            )
            .expect_err("another point")
            .to_string();
        assert!(
            err.contains(
                "at handoff 2 after the barrier of epoch 5 while this copy is at handoff 1"
            ),
            "{err}"
        );
        drop(tx);
        let err = s
            .take(Point::Barrier(Epoch(6)), "p")
            .expect_err("gone")
            .to_string();
        assert!(err.contains("copy 0 stopped"), "{err}");
    }

    fn spreader(copy: usize, from: Option<Receiver<Handing>>) -> Spreader {
        Spreader {
            copy,
            copies: 2,
            name: format!("p_replica_{copy}"),
            instance: 0,
            prev: None,
            next: None,
            from: from.map(Prev::Here),
            to: None,
            patience: None,
            abort: Arc::new(AtomicBool::new(false)),
            held: false,
            rows: 0,
            every: None,
            after: Epoch(0),
            n: 0,
        }
    }

    #[test]
    fn copies_handing_on_by_age_hand_older_attempts_the_later_they_are() {
        assert_eq!(stage_limit(0, 5000), 5000);
        assert_eq!(stage_limit(2, 5000), 15000);
        assert_eq!(stage_limit(usize::MAX, u64::MAX / 2), u64::MAX);
    }

    #[test]
    fn copies_counting_the_same_rows_agree_on_the_points_between_barriers() {
        assert_eq!(rows_between(200), 100);
        assert_eq!(rows_between(1), 1);
        // Two copies, the same batches: the same points, whatever each one's limit says
        // after the first time it is asked.
        let mut a = spreader(0, None);
        let mut b = spreader(1, None);
        let batches = [30, 50, 40, 1, 200, 0, 99, 1];
        let points = |s: &mut Spreader| -> Vec<Option<Point>> {
            let mut asked = 0;
            let mut out: Vec<_> = batches
                .iter()
                .map(|&n| {
                    s.read(n, || {
                        asked += 1;
                        rows_between(200)
                    })
                })
                .collect();
            assert_eq!(asked, 1, "the limit is asked once");
            out.push(Some(s.at_barrier(Epoch(4))));
            out.extend(batches.iter().map(|&n| s.read(n, || 1)));
            out
        };
        let pa = points(&mut a);
        assert_eq!(pa, points(&mut b));
        let rows = |after, n| {
            Some(Point::Rows {
                after: Epoch(after),
                n,
            })
        };
        assert_eq!(
            pa,
            vec![
                None,
                None,
                rows(0, 1),
                None,
                rows(0, 2),
                None,
                None,
                rows(0, 3),
                Some(Point::Barrier(Epoch(4))),
                None,
                None,
                rows(4, 1),
                None,
                rows(4, 2),
                None,
                None,
                rows(4, 3),
            ]
        );
    }
}
