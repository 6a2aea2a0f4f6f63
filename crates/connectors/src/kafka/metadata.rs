//! The first call every Kafka operator makes: the partitions of its topics, which also tells
//! a broker that cannot be reached (within the connect timeout) and a topic that does not
//! exist apart from everything else; and, for a `topic-pattern`, the topics it matches.

use std::net::ToSocketAddrs;
use std::time::Duration;

use rdkafka::client::{Client, ClientContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::types::RDKafkaRespErr;

use super::error::KafkaError;

/// Fails when no host of `servers` (`properties.bootstrap.servers`) resolves, before a
/// client waits its whole connect timeout for brokers it cannot reach (probe41: an
/// unresolvable host took the full timeout, and was called a broker that did not answer).
pub(crate) fn resolvable(servers: &str) -> Result<(), KafkaError> {
    let mut first_failure = None;
    for address in crate::addresses::normalized(servers, "9092") {
        match address.to_socket_addrs().map(|mut found| found.next()) {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => {
                first_failure.get_or_insert_with(|| format!("{address}: no address"));
            }
            Err(e) => {
                first_failure.get_or_insert_with(|| format!("{address}: {e}"));
            }
        }
    }
    match first_failure {
        None => Ok(()),
        Some(cause) => Err(KafkaError::UnknownHosts {
            servers: servers.to_string(),
            cause,
        }),
    }
}

/// The topics of the cluster at `servers` that `pattern` (a `topic-pattern`) picks, in name
/// order ([`super::options::pattern_picks`]); none is an error that names the pattern.
pub(crate) fn matching<C: ClientContext>(
    client: &Client<C>,
    pattern: &regex::Regex,
    shown: &str,
    servers: &str,
    timeout: Duration,
) -> Result<Vec<String>, KafkaError> {
    resolvable(servers)?;
    let metadata = client
        .fetch_metadata(None, timeout)
        .map_err(|e| KafkaError::Unreachable {
            servers: servers.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            cause: e.to_string(),
        })?;
    let mut topics: Vec<String> = metadata
        .topics()
        .iter()
        .filter(|t| t.error().is_none() && super::options::pattern_picks(pattern, t.name()))
        .map(|t| t.name().to_string())
        .collect();
    topics.sort_unstable();
    if topics.is_empty() {
        return Err(KafkaError::NoTopicMatches {
            pattern: shown.to_string(),
            servers: servers.to_string(),
        });
    }
    Ok(topics)
}

/// The partitions of `topic`, in order, as the cluster at `servers` reports them within
/// `timeout`.
pub(crate) fn partitions<C: ClientContext>(
    client: &Client<C>,
    topic: &str,
    servers: &str,
    timeout: Duration,
) -> Result<Vec<i32>, KafkaError> {
    resolvable(servers)?;
    let unreachable = |cause: String| KafkaError::Unreachable {
        servers: servers.to_string(),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        cause,
    };
    let metadata =
        client
            .fetch_metadata(Some(topic), timeout)
            .map_err(|e| match e.rdkafka_error_code() {
                Some(
                    RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic,
                ) => KafkaError::NoTopic {
                    topic: topic.to_string(),
                    servers: servers.to_string(),
                },
                _ => unreachable(e.to_string()),
            })?;
    let Some(t) = metadata.topics().iter().find(|t| t.name() == topic) else {
        return Err(KafkaError::NoTopic {
            topic: topic.to_string(),
            servers: servers.to_string(),
        });
    };
    match t.error() {
        None => {}
        Some(RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) => {
            return Err(KafkaError::NoTopic {
                topic: topic.to_string(),
                servers: servers.to_string(),
            })
        }
        Some(e) => {
            return Err(KafkaError::client(
                format!("reading the metadata of topic `{topic}`"),
                format!("{e:?}"),
            ))
        }
    }
    let mut partitions: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
    if partitions.is_empty() {
        return Err(KafkaError::NoTopic {
            topic: topic.to_string(),
            servers: servers.to_string(),
        });
    }
    partitions.sort_unstable();
    Ok(partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_none_of_which_resolves_are_said_so() {
        let e = resolvable("no-such-host.invalid:9092").expect_err("does not resolve");
        let said = e.to_string();
        assert!(
            said.starts_with("no host of `properties.bootstrap.servers` (no-such-host.invalid:9092) resolves (no-such-host.invalid:9092: "),
            "{said}"
        );
        assert!(said.ends_with("check the host names"), "{said}");
    }

    #[test]
    fn one_host_that_resolves_is_enough_and_a_port_is_not_needed() {
        assert!(resolvable("no-such-host.invalid:9092,127.0.0.1:1").is_ok());
        assert!(resolvable("localhost").is_ok());
        assert!(resolvable("PLAINTEXT://127.0.0.1:9092").is_ok());
    }
}
