//! The params of the `kafka` connector, read once into typed options, and the librdkafka
//! client settings they make.

use std::time::Duration;

use anduin_operator_api::Params;
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use rdkafka::ClientConfig;

/// The prefix of params handed to librdkafka as they are.
pub(crate) const PROPERTIES: &str = "properties.";

/// What every Kafka client of an operator is made with.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    /// `properties.bootstrap.servers`.
    pub servers: String,
    /// Every `properties.*` param, without the prefix.
    pub properties: Vec<(String, String)>,
    /// How long the start waits for the brokers.
    pub connect_timeout: Duration,
}

/// The `connect.timeout` param of `p` (10 s when absent), refused below `least_ms` with a
/// message that says `least` is the least.
pub(crate) fn connect_timeout(
    p: &Params<'_>,
    least_ms: u64,
    least: &str,
) -> Result<Duration, Diagnostics> {
    let ms = p.duration_ms_or("connect.timeout", 10_000);
    if ms < least_ms {
        return Err(p
            .error(
                "connect.timeout",
                format!("a connect.timeout of {ms} ms is too short: at least {least}"),
            )
            .into());
    }
    Ok(Duration::from_millis(ms))
}

impl Client {
    /// Reads the client params of `op`.
    pub(crate) fn from_params(op: &OperatorDef, p: &Params<'_>) -> Result<Self, Diagnostics> {
        let servers = p.required("properties.bootstrap.servers").to_string();
        if servers.trim().is_empty() {
            return Err(p
                .error(
                    "properties.bootstrap.servers",
                    "no broker given: `host:port[,host:port…]`",
                )
                .into());
        }
        let properties = op
            .params
            .iter()
            .filter_map(|param| {
                let key = param.name.as_str().strip_prefix(PROPERTIES)?;
                Some((key.to_string(), param.value.as_text().to_string()))
            })
            .collect();
        // librdkafka takes no connection setup timeout under a second.
        let connect_timeout = connect_timeout(
            p,
            1_000,
            "1s, the least the Kafka client (librdkafka) waits for a broker",
        )?;
        Ok(Self {
            servers,
            properties,
            connect_timeout,
        })
    }

    /// A librdkafka configuration: anduin's `defaults` first, then the user's properties
    /// (which win).
    pub(crate) fn config(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut c = ClientConfig::new();
        // A broker that cannot be reached fails the first call within the connect timeout.
        let timeout = self.connect_timeout.as_millis().to_string();
        c.set("socket.connection.setup.timeout.ms", &timeout);
        // Topics are never made by reading their metadata.
        c.set("allow.auto.create.topics", "false");
        for (k, v) in defaults {
            c.set(*k, *v);
        }
        for (k, v) in &self.properties {
            c.set(k, v);
        }
        c
    }
}

/// Where a source starts when it does not resume from a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Startup {
    /// The first offset kept in each partition.
    Earliest,
    /// The end of each partition as of the start: only records written later.
    Latest,
    /// The first record at or after this timestamp (epoch ms).
    Timestamp(i64),
}

impl Startup {
    /// Reads `scan.startup.mode` and `scan.startup.timestamp-millis`.
    pub(crate) fn from_params(p: &Params<'_>) -> Result<Self, Diagnostics> {
        let mode = p.str_or("scan.startup.mode", "earliest-offset");
        let ts = p.int("scan.startup.timestamp-millis");
        match (mode.as_str(), ts) {
            ("timestamp", Some(ts)) => Ok(Startup::Timestamp(ts)),
            ("timestamp", None) => Err(p
                .error(
                    "scan.startup.mode",
                    "`timestamp` needs `scan.startup.timestamp-millis` (epoch milliseconds)",
                )
                .into()),
            (_, Some(_)) => Err(p
                .error(
                    "scan.startup.timestamp-millis",
                    "it is read only with `scan.startup.mode = 'timestamp'`",
                )
                .into()),
            ("latest-offset", None) => Ok(Startup::Latest),
            _ => Ok(Startup::Earliest),
        }
    }
}

/// How a sink delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Each checkpoint epoch's rows in one Kafka transaction, committed when the checkpoint
    /// completes (needs checkpoints).
    ExactlyOnce,
    /// Rows are produced as they come and flushed at each checkpoint: a restore may write
    /// some again.
    AtLeastOnce,
}

impl Delivery {
    /// Reads `sink.delivery-guarantee`: exactly-once by default with checkpoints,
    /// at-least-once without; exactly-once without checkpoints is refused when the run
    /// starts.
    pub(crate) fn from_params(p: &Params<'_>) -> Option<Self> {
        match p.text("sink.delivery-guarantee")?.as_str() {
            "at-least-once" => Some(Delivery::AtLeastOnce),
            _ => Some(Delivery::ExactlyOnce),
        }
    }
}

/// What a source reads: the topics named, or every topic whose whole name matches a pattern
/// (Flink's `topic-pattern`), found when the source starts.
#[derive(Debug, Clone)]
pub(crate) enum Topics {
    /// `topic`: these, in this order.
    Named(Vec<String>),
    /// `topic-pattern`: the topics of the cluster it matches, in name order.
    Pattern(regex::Regex),
}

impl Topics {
    /// `topic` or `topic-pattern`, exactly one of them.
    pub(crate) fn from_params(p: &Params<'_>) -> Result<Self, Diagnostics> {
        match (p.text("topic"), p.text("topic-pattern")) {
            (Some(_), Some(_)) => Err(p
                .error(
                    "topic-pattern",
                    "give `topic` (the topics read) or `topic-pattern` (a pattern of their names), not both",
                )
                .into()),
            (None, None) => Err(p
                .error(
                    "topic",
                    "a source needs `topic` (the topics read, comma-separated) or `topic-pattern` (a pattern of their names)",
                )
                .into()),
            (Some(t), None) => {
                let topics = topics(t.as_str());
                if topics.is_empty() {
                    return Err(p.error("topic", "no topic given").into());
                }
                Ok(Topics::Named(topics))
            }
            (None, Some(pattern)) => {
                // The whole name must match, as in Flink (Java's `Pattern.matches`).
                regex::Regex::new(&format!("^(?:{})$", pattern.as_str()))
                    .map(Topics::Pattern)
                    .map_err(|e| {
                        p.error(
                            "topic-pattern",
                            format!("not a regular expression: {e}"),
                        )
                        .into()
                    })
            }
        }
    }
}

/// Whether `pattern` (a `topic-pattern`) picks topic `name`: it matches the whole name, and
/// the topic is not one of Kafka's own (`__consumer_offsets`, `__transaction_state`: names
/// that start with `__`).
pub(crate) fn pattern_picks(pattern: &regex::Regex, name: &str) -> bool {
    !name.starts_with("__") && pattern.is_match(name)
}

/// The topics of a source's `topic` param: a comma-separated list.
pub(crate) fn topics(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_list_is_split_at_commas_and_trimmed() {
        assert_eq!(topics(" a, b ,,c"), ["a", "b", "c"]);
        assert!(topics(" ").is_empty());
    }

    #[test]
    fn a_topic_pattern_picks_whole_names_and_never_kafkas_own_topics() {
        let r = regex::Regex::new("^(?:events-.*|audit)$").expect("a pattern");
        assert!(pattern_picks(&r, "events-eu"));
        assert!(pattern_picks(&r, "audit"));
        assert!(!pattern_picks(&r, "audit-old"), "the whole name");
        assert!(!pattern_picks(&r, "old-events-eu"), "the whole name");
        let all = regex::Regex::new("^(?:.*)$").expect("a pattern");
        assert!(!pattern_picks(&all, "__consumer_offsets"));
    }
}
