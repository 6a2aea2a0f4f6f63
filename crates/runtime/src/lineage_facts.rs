//! The operators' facts for the run's lineage ([`anduin_operator_api::LineageFacts`]), kept
//! beside the lineage in the run's checkpoint store
//! ([`anduin_checkpoint::Store::keep_lineage_fact`]).

use std::sync::Arc;

use anduin_checkpoint::{FactCheck, Store};
use anduin_operator_api::{KeptFact, LineageFacts};

use crate::config::Checkpointing;

/// Facts kept in a checkpoint store for one lineage.
#[derive(Debug)]
pub(crate) struct StoreFacts {
    store: Store,
    lineage: String,
}

impl StoreFacts {
    /// The facts of lineage `lineage` in the store of `checkpointing` (its object store, or
    /// its directory); `None` when the run keeps no lineage, or the directory cannot be
    /// opened (the checkpoints then fail and say why).
    pub(crate) fn of(
        checkpointing: Option<&Checkpointing>,
        lineage: Option<&str>,
    ) -> Option<Arc<dyn LineageFacts>> {
        let (c, lineage) = (checkpointing?, lineage?);
        let store = match &c.settings.store {
            Some(s) => s.clone(),
            None => Store::open(&c.settings.dir).ok()?,
        };
        Some(Arc::new(StoreFacts {
            store,
            lineage: lineage.to_string(),
        }))
    }
}

impl LineageFacts for StoreFacts {
    fn keep(&self, operator: &str, fact: &str, value: &str) -> Result<KeptFact, String> {
        match self
            .store
            .keep_lineage_fact(&self.lineage, operator, fact, value)
        {
            Ok(FactCheck::New) => Ok(KeptFact::New),
            Ok(FactCheck::Same) => Ok(KeptFact::Same),
            Ok(FactCheck::Differs { kept }) => Ok(KeptFact::Differs { kept }),
            Ok(other) => Err(format!("an unknown answer from the store: {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}
