//! What can go wrong talking to Kafka, classified by what the user can do about it.

use anduin_operator_api::OperatorError;

/// A Kafka connector's failure. Each names the operator when it becomes an
/// [`OperatorError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaError {
    /// The client could not be made from the settings given (`properties.*`).
    #[error("the Kafka client settings are not valid: {0}")]
    Settings(String),
    /// No broker answered in time: the address is wrong or the cluster is down.
    #[error("no Kafka broker at {servers} answered within {timeout_ms} ms ({cause}): check `properties.bootstrap.servers`, or raise `connect.timeout`")]
    Unreachable {
        /// `properties.bootstrap.servers`.
        servers: String,
        /// How long it waited.
        timeout_ms: u64,
        /// What librdkafka said.
        cause: String,
    },
    /// No host of `properties.bootstrap.servers` resolves: librdkafka would wait the whole
    /// connect timeout for a broker it can never reach.
    #[error("no host of `properties.bootstrap.servers` ({servers}) resolves ({cause}): check the host names")]
    UnknownHosts {
        /// `properties.bootstrap.servers`.
        servers: String,
        /// What the resolver said of the first.
        cause: String,
    },
    /// The topic does not exist on the cluster.
    #[error("topic `{topic}` does not exist on the Kafka cluster at {servers}: create it first (anduin does not create topics)")]
    NoTopic {
        /// The topic.
        topic: String,
        /// `properties.bootstrap.servers`.
        servers: String,
    },
    /// No topic of the cluster matches the source's `topic-pattern`.
    #[error("no topic on the Kafka cluster at {servers} matches `topic-pattern` `{pattern}` (the whole name must match; topics whose names start with `__` are Kafka's own and never match): create one first, or fix the pattern")]
    NoTopicMatches {
        /// The pattern.
        pattern: String,
        /// `properties.bootstrap.servers`.
        servers: String,
    },
    /// A call to the cluster failed while running.
    #[error("{what}: {cause}")]
    Client {
        /// What was being done.
        what: String,
        /// What librdkafka said.
        cause: String,
    },
    /// The run was asked to stop while a sink waited for its lost broker.
    #[error("{what}: {cause}; the Kafka broker at {servers} has not answered {lost} and the run was asked to stop: what is not written stays in the last complete checkpoint, and running the query again resumes from it and writes it")]
    Stopped {
        /// What was being done.
        what: String,
        /// What librdkafka said last.
        cause: String,
        /// `properties.bootstrap.servers`.
        servers: String,
        /// How long the broker has not answered (`for 12.5 s`, or `its last call`).
        lost: String,
    },
    /// The checkpoint does not fit this run (its topic, its partitions).
    #[error("the checkpoint does not fit: {0}; start over with --from-scratch")]
    Checkpoint(String),
}

impl KafkaError {
    /// A failed call to the cluster while doing `what`.
    pub(crate) fn client(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        KafkaError::Client {
            what: what.into(),
            cause: e.to_string(),
        }
    }

    /// This error as operator `operator`'s: a configuration problem when it is the user's
    /// to fix before starting, an execution error otherwise.
    pub(crate) fn for_operator(self, operator: &str) -> OperatorError {
        match self {
            KafkaError::Client { .. } | KafkaError::Stopped { .. } => OperatorError::Execution {
                operator: operator.to_string(),
                message: self.to_string(),
            },
            _ => OperatorError::Config {
                operator: operator.to_string(),
                message: self.to_string(),
            },
        }
    }
}
