//! Spreading a pattern's partial matches over copies (paper §4.4, `overflow_instances = K`):
//! the query runs the pattern and its copies `NAME_replica_1` … `NAME_replica_{K-1}`, each as
//! one instance reading the pattern's whole input (the rewriting made them:
//! `anduin_graph::rewriting::overflow_spec`). Copy 0 starts matches; the others only extend
//! the partial matches handed to them. At every checkpoint barrier, before its snapshot, copy
//! k takes what copy k − 1 handed it at that barrier, then, when it keeps more partial matches
//! than `max_partial_matches`, hands its oldest to copy k + 1 so that half the limit stay. So
//! the oldest partial matches drift along the chain, and every copy's snapshot holds exactly
//! the partial matches it holds after the handoff: a restore from the checkpoint neither
//! loses nor repeats one. The copies see the same barriers at the same point of their input
//! (they read one stream), which is what makes the handoff exact.
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

/// What copy k hands copy k + 1 at one barrier (nothing, when it keeps all it has).
pub(crate) struct Handing {
    epoch: Epoch,
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

/// One copy's ends of the chain of copies.
pub(crate) struct Spreader {
    /// Which copy this is (0: the one that starts matches), of `copies`.
    copy: usize,
    copies: usize,
    from: Option<Receiver<Handing>>,
    to: Option<Sender<Handing>>,
    abort: Arc<AtomicBool>,
    /// Whether it said it holds more than its limit with nowhere to hand them.
    held: bool,
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

    /// What the copy before this one handed it at the barrier of `epoch` (waits for it).
    pub(crate) fn take(
        &mut self,
        epoch: Epoch,
        name: &str,
    ) -> Result<Option<Handed>, OperatorError> {
        let Some(from) = &self.from else {
            return Ok(None);
        };
        loop {
            match from.recv_timeout(Duration::from_millis(100)) {
                Ok(h) if h.epoch == epoch => return Ok(h.handed),
                Ok(h) => {
                    return Err(OperatorError::internal(
                        name,
                        format!(
                            "copy {} handed partial matches at the barrier of epoch {} while this copy is at epoch {} (this is a bug: the copies read one stream)",
                            self.copy - 1,
                            h.epoch.0,
                            epoch.0
                        ),
                    ))
                }
                Err(RecvTimeoutError::Timeout) if !self.abort.load(Ordering::Relaxed) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(OperatorError::internal(
                        name,
                        "the run failed while this copy waited for the partial matches of the copy before it",
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(OperatorError::internal(
                        name,
                        format!(
                            "copy {} stopped before it handed over its partial matches at epoch {}",
                            self.copy - 1,
                            epoch.0
                        ),
                    ))
                }
            }
        }
    }

    /// Hands `op`'s oldest partial matches to the next copy at the barrier of `epoch` when it
    /// keeps more than its limit (an empty handing otherwise: the next copy waits for one).
    pub(crate) fn give(
        &mut self,
        epoch: Epoch,
        name: &str,
        op: &mut dyn Operator,
    ) -> Result<(), OperatorError> {
        let figures = op.metrics();
        let figure = |key: &str| figures.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let (Some(partial), Some(max)) = (figure("partial_matches"), figure("max_partial_matches"))
        else {
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
        if let Some(to) = &self.to {
            to.send(Handing { epoch, handed }).map_err(|_| {
                OperatorError::internal(
                    name,
                    format!(
                        "copy {} stopped before it took this copy's partial matches",
                        self.copy + 1
                    ),
                )
            })?;
        }
        Ok(())
    }
}

/// The spreaders of every copy of every pattern of `graph` that spreads its partial matches,
/// by the copy's name: copy k of a pattern `NAME` that asks for K copies is `NAME` (k = 0) or
/// `NAME_replica_k`.
pub(crate) fn spreaders<B>(
    graph: &LogicalGraph<B>,
    abort: &Arc<AtomicBool>,
) -> BTreeMap<String, Spreader> {
    let mut out = BTreeMap::new();
    for node in &graph.nodes {
        let Some(copies) = node.def.spread_copies() else {
            continue;
        };
        let base = node.name();
        let names: Vec<String> = std::iter::once(base.to_string())
            .chain((1..copies).map(|k| format!("{base}_replica_{k}")))
            .collect();
        // A copy is no base of its own: its base, a spreading pattern, is in the graph (the
        // names copies take are refused for anything else when the query is loaded).
        let is_copy = base.rsplit_once("_replica_").is_some_and(|(of, _)| {
            graph
                .nodes
                .iter()
                .any(|n| n.name() == of && n.def.spread_copies().is_some())
        });
        let all_there = names
            .iter()
            .all(|n| graph.nodes.iter().any(|g| g.name() == n));
        if is_copy || !all_there {
            continue;
        }
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (1..copies).map(|_| crossbeam_channel::unbounded()).unzip();
        let mut senders = senders.into_iter().map(Some).collect::<Vec<_>>();
        let mut receivers = receivers.into_iter().map(Some).collect::<Vec<_>>();
        for (k, name) in names.into_iter().enumerate() {
            let from = k.checked_sub(1).and_then(|j| receivers[j].take());
            let to = senders.get_mut(k).and_then(Option::take);
            out.insert(
                name,
                Spreader {
                    copy: k,
                    copies,
                    from,
                    to,
                    abort: Arc::clone(abort),
                    held: false,
                },
            );
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
        let mut s = Spreader {
            copy: 1,
            copies: 2,
            from: Some(rx),
            to: None,
            abort: Arc::new(AtomicBool::new(false)),
            held: false,
        };
        tx.send(Handing {
            epoch: Epoch(3),
            handed: None,
        })
        .expect("sent");
        assert_eq!(s.take(Epoch(3), "p").expect("its epoch"), None);
        tx.send(Handing {
            epoch: Epoch(5),
            handed: None,
        })
        .expect("sent");
        let err = s
            .take(Epoch(4), "p")
            .expect_err("another epoch")
            .to_string();
        assert!(
            err.contains("epoch 5 while this copy is at epoch 4"),
            "{err}"
        );
        drop(tx);
        let err = s.take(Epoch(6), "p").expect_err("gone").to_string();
        assert!(err.contains("copy 0 stopped"), "{err}");
    }
}
