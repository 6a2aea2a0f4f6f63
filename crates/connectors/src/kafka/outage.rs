//! A broker lost while a sink writes: which failures are worth trying again, and the wait
//! between tries.
//!
//! librdkafka reconnects on its own. The sink keeps what it writes (the records of a
//! transaction; those an at-least-once flush waits for stay in librdkafka's queue) and tries
//! again, with backoff, until the broker answers: the query stalls (its inputs wait behind
//! the sink) and loses nothing. A stop asked meanwhile ends the wait with
//! [`KafkaError::Stopped`]: what was not written is in the last complete checkpoint, and a
//! resumed run writes it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use anduin_operator_api::StopRequest;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};

use super::error::KafkaError;

/// The first pause between two tries; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// The longest pause between two tries.
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// How often a pause looks whether the run was asked to stop.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Whether `e` is what a lost, slow or moving broker says: the same call may work later.
pub(crate) fn transient(e: &RdError) -> bool {
    if let RdError::Transaction(t) = e {
        if t.is_fatal() {
            return false;
        }
        if t.is_retriable() {
            return true;
        }
    }
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::OperationTimedOut
                | RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::MessageTimedOut
                | RDKafkaErrorCode::TimedOutQueue
                | RDKafkaErrorCode::RequestTimedOut
                | RDKafkaErrorCode::NetworkException
                | RDKafkaErrorCode::NotCoordinator
                | RDKafkaErrorCode::CoordinatorNotAvailable
                | RDKafkaErrorCode::CoordinatorLoadInProgress
                | RDKafkaErrorCode::LeaderNotAvailable
                | RDKafkaErrorCode::NotLeaderForPartition
                | RDKafkaErrorCode::NotEnoughReplicas
                | RDKafkaErrorCode::NotEnoughReplicasAfterAppend
                | RDKafkaErrorCode::ConcurrentTransactions
        )
    )
}

/// The tries of one piece of a sink's work (a transaction, a flush) while its broker is lost.
pub(crate) struct Outage<'a> {
    operator: &'a str,
    servers: &'a str,
    stop: &'a StopRequest,
    /// Since when the sink's calls to the broker fail (kept by the sink across its work:
    /// `None` once one succeeds).
    lost_since: &'a Cell<Option<Instant>>,
    tries: u32,
}

impl<'a> Outage<'a> {
    /// No failure of this work yet, for sink `operator` writing to the brokers `servers`,
    /// whose calls fail since `lost_since`, if they do.
    pub(crate) fn new(
        operator: &'a str,
        servers: &'a str,
        stop: &'a StopRequest,
        lost_since: &'a Cell<Option<Instant>>,
    ) -> Self {
        Self {
            operator,
            servers,
            stop,
            lost_since,
            tries: 0,
        }
    }

    /// `what` failed with `e`: waits before the next try when `e` is transient and the run
    /// was not asked to stop (`Ok`: try again); else the error to fail the work with.
    pub(crate) fn wait(&mut self, what: &str, e: &RdError) -> Result<(), KafkaError> {
        if !transient(e) {
            return Err(KafkaError::client(what, e));
        }
        let since = self.lost_since.get().unwrap_or_else(Instant::now);
        self.lost_since.set(Some(since));
        if self.stop.asked() {
            return Err(self.stopped(what, &e.to_string()));
        }
        self.tries += 1;
        let pause = FIRST_PAUSE
            .saturating_mul(1 << self.tries.min(8).saturating_sub(1))
            .min(MAX_PAUSE);
        tracing::warn!(
            operator = %self.operator,
            servers = %self.servers,
            failed_for_s = since.elapsed().as_secs(),
            tries = self.tries,
            error = %e,
            "{what} failed: the Kafka broker is lost or busy; the sink tries again (the query waits; a stop ends the wait)"
        );
        let until = Instant::now() + pause;
        while Instant::now() < until {
            if self.stop.asked() {
                return Ok(());
            }
            std::thread::sleep(STOP_POLL.min(until.saturating_duration_since(Instant::now())));
        }
        Ok(())
    }

    /// The error of `what`, given up (failing with `cause`) because the run was asked to
    /// stop while the broker is lost.
    pub(crate) fn stopped(&self, what: &str, cause: &str) -> KafkaError {
        KafkaError::Stopped {
            what: what.to_string(),
            cause: cause.to_string(),
            servers: self.servers.to_string(),
            lost: match self.lost_since.get().map(|s| s.elapsed().as_secs_f64()) {
                Some(s) if s >= 0.1 => format!("for {s:.1} s"),
                _ => "its last call".to_string(),
            },
        }
    }

    /// The work succeeded: the broker answers; says so when it had not.
    pub(crate) fn over(&self, what: &str) {
        if let Some(since) = self.lost_since.take() {
            tracing::warn!(operator = %self.operator, servers = %self.servers, failed_for_s = since.elapsed().as_secs(), tries = self.tries, "{what} succeeded: the Kafka broker answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_lost_broker_is_transient_and_a_refusal_is_not() {
        let timed_out = RdError::Flush(RDKafkaErrorCode::OperationTimedOut);
        assert!(transient(&timed_out));
        let down = RdError::MessageProduction(RDKafkaErrorCode::AllBrokersDown);
        assert!(transient(&down));
        let too_large = RdError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge);
        assert!(!transient(&too_large));
        let refused =
            RdError::MessageProduction(RDKafkaErrorCode::TransactionalIdAuthorizationFailed);
        assert!(!transient(&refused));
    }

    #[test]
    fn a_stop_ends_the_wait_with_an_error_that_says_what_stays_in_the_checkpoint() {
        let flag = Arc::new(AtomicBool::new(false));
        let stop = StopRequest::new(Arc::clone(&flag));
        let lost = Cell::new(None);
        let mut outage = Outage::new("out", "127.0.0.1:9", &stop, &lost);
        let e = RdError::Flush(RDKafkaErrorCode::OperationTimedOut);
        assert!(outage.wait("flushing", &e).is_ok(), "a first failure waits");
        assert_eq!(outage.tries, 1);
        assert!(lost.get().is_some(), "the sink knows its broker is lost");
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        let e = outage
            .wait("flushing", &e)
            .expect_err("a stop ends the wait");
        assert!(matches!(e, KafkaError::Stopped { .. }), "{e}");
        let said = e.to_string();
        assert!(said.contains("127.0.0.1:9"), "{said}");
        assert!(said.contains("last complete checkpoint"), "{said}");
        outage.over("flushing");
        assert!(lost.get().is_none(), "answered again");
    }

    #[test]
    fn a_failure_that_is_not_transient_is_not_waited_out() {
        let stop = StopRequest::default();
        let lost = Cell::new(None);
        let mut outage = Outage::new("out", "127.0.0.1:9", &stop, &lost);
        let e = RdError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge);
        let said = outage
            .wait("producing", &e)
            .expect_err("no wait")
            .to_string();
        assert!(said.starts_with("producing: "), "{said}");
        assert_eq!((lost.get(), outage.tries), (None, 0));
    }
}
