//! What librdkafka reports of each record a sink sent: the failures, counted.

use std::sync::Mutex;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;
use rdkafka::producer::{DeliveryResult, ProducerContext};
use rdkafka::ClientContext;

/// Counts the records librdkafka could not deliver, keeping the first reason.
#[derive(Default)]
pub(crate) struct Deliveries {
    failed: Mutex<(u64, Option<String>)>,
}

/// librdkafka's own reports: a broker it cannot reach, which it tries again on its own, at
/// WARN (it logged them at ERROR, dozens in an outage the sink waits out: probe43); what
/// fails the query, the sink says itself.
impl ClientContext for Deliveries {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical => {
                tracing::error!(target: "librdkafka", facility = fac, "{log_message}")
            }
            RDKafkaLogLevel::Error | RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", facility = fac, "{log_message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility = fac, "{log_message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", facility = fac, "{log_message}")
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(target: "librdkafka", %error, "{reason}");
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            if let Ok(mut f) = self.failed.lock() {
                f.0 += 1;
                f.1.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

impl Deliveries {
    /// Records that failed since the last call, with the first reason.
    pub(crate) fn take_failures(&self) -> Option<(u64, String)> {
        let mut f = self.failed.lock().ok()?;
        let (n, why) = std::mem::take(&mut *f);
        (n > 0).then(|| (n, why.unwrap_or_default()))
    }
}
