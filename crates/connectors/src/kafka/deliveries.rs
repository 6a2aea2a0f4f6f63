//! What librdkafka reports of each record a sink sent: the failures, counted.

use std::sync::Mutex;

use rdkafka::producer::{DeliveryResult, ProducerContext};
use rdkafka::ClientContext;

/// Counts the records librdkafka could not deliver, keeping the first reason.
#[derive(Default)]
pub(crate) struct Deliveries {
    failed: Mutex<(u64, Option<String>)>,
}

impl ClientContext for Deliveries {}

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
