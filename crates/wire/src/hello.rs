//! The handshake that opens an edge: each side says which protocol version it speaks and which
//! edge of which query (and which attempt of the consumer's task) it means; a side that gets a
//! `Hello` it cannot accept refuses the edge, saying why. Pure: [`check_hello`] takes what was
//! said and what was expected.

/// The version of the frames this build speaks (8: `GaveUp`, a producer that gave up the end
/// of its input after a stop; 7: a channel's handshake names an instance added while the
/// query runs by its number in the run, not by its index among its task's).
pub const PROTOCOL_VERSION: u16 = 8;

/// What opens an edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The protocol version the sender speaks.
    pub version: u16,
    /// The query's name.
    pub query: String,
    /// The edge: the plan's channel between the two tasks.
    pub edge: u32,
    /// The producer instance: its index among its task's instances, or for an instance added
    /// while the query runs, its number in the run (from 2^24 on, never taken again: its
    /// index is taken again by an instance added after it retired). For a handoff of key
    /// groups, the giving instance's index among the operator's.
    pub from_instance: u32,
    /// The consumer instance, named alike (for a handoff, the taking instance's index).
    pub to_instance: u32,
    /// The attempt of the consumer's task the edge is for (a restored task is a new attempt:
    /// frames of an earlier attempt are stale).
    pub attempt: u64,
    /// Where the sender's side of the stream starts: after the barrier of this checkpoint
    /// epoch (0: from the beginning). A producer says where its output starts (the checkpoint
    /// its task was restored from, or the oldest barrier it can still replay from); the
    /// consumer answers where it wants the stream to start (the checkpoint it was restored
    /// from, or the producer's own start when it can recognise what it has already seen).
    pub from_epoch: u64,
    /// How many times the producer's instance was restored in another process within this
    /// attempt (0: never). A consumer that has accepted a newer incarnation refuses an older
    /// one: a producer that was paused or cut off while its instance was restored elsewhere
    /// cannot take the edge back.
    pub incarnation: u64,
}

/// What the receiving side expects of a `Hello`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The queries it runs tasks of.
    pub queries: &'a [String],
    /// The edges of that query it has an end of, by plan channel.
    pub edges: &'a [u32],
    /// The current attempt of the consumer's task.
    pub attempt: u64,
}

/// Why an edge is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The peer speaks another version of the protocol.
    #[error("the peer speaks protocol version {got}, this anduin speaks {ours}: run the same anduin version on every process of the cluster")]
    Version {
        /// The peer's version.
        got: u16,
        /// Ours.
        ours: u16,
    },
    /// No such query runs here.
    #[error("no query \"{query}\" runs on this process")]
    UnknownQuery {
        /// The query named.
        query: String,
    },
    /// The query has no such edge here.
    #[error("query \"{query}\" has no edge {edge} on this process")]
    UnknownEdge {
        /// The query.
        query: String,
        /// The edge named.
        edge: u32,
    },
    /// The frames are for an attempt of the task that is over.
    #[error("edge {edge} of query \"{query}\" is for attempt {got} of its task, which is now at attempt {current}: the frames are stale")]
    StaleAttempt {
        /// The query.
        query: String,
        /// The edge.
        edge: u32,
        /// The attempt named.
        got: u64,
        /// The current one.
        current: u64,
    },
    /// The producer's instance has been restored since in another process, which has the
    /// edge now.
    #[error("edge {edge} of query \"{query}\" has a newer producer (incarnation {current}) than this one (incarnation {got}): this producer is stale and must stop")]
    StaleProducer {
        /// The query.
        query: String,
        /// The edge.
        edge: u32,
        /// The producer's incarnation.
        got: u64,
        /// The newest one accepted.
        current: u64,
    },
}

/// Whether `hello` opens an edge this side can accept.
pub fn check_hello(hello: &Hello, expected: &Expected<'_>) -> Result<(), Refusal> {
    if hello.version != PROTOCOL_VERSION {
        return Err(Refusal::Version {
            got: hello.version,
            ours: PROTOCOL_VERSION,
        });
    }
    if !expected.queries.contains(&hello.query) {
        return Err(Refusal::UnknownQuery {
            query: hello.query.clone(),
        });
    }
    if !expected.edges.contains(&hello.edge) {
        return Err(Refusal::UnknownEdge {
            query: hello.query.clone(),
            edge: hello.edge,
        });
    }
    if hello.attempt != expected.attempt {
        return Err(Refusal::StaleAttempt {
            query: hello.query.clone(),
            edge: hello.edge,
            got: hello.attempt,
            current: expected.attempt,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            query: "q2".into(),
            edge: 3,
            from_instance: 0,
            to_instance: 1,
            attempt: 2,
            from_epoch: 0,
            incarnation: 0,
        }
    }

    #[test]
    fn a_hello_for_a_known_edge_of_the_current_attempt_is_accepted_and_others_say_why() {
        let queries = vec!["q2".to_string()];
        let expected = Expected {
            queries: &queries,
            edges: &[3, 4],
            attempt: 2,
        };
        assert_eq!(check_hello(&hello(), &expected), Ok(()));
        let refused = |h: Hello| check_hello(&h, &expected).expect_err("refused").to_string();
        assert!(refused(Hello {
            version: 9,
            ..hello()
        })
        .contains(&format!(
            "protocol version 9, this anduin speaks {PROTOCOL_VERSION}"
        )));
        assert!(refused(Hello {
            query: "q9".into(),
            ..hello()
        })
        .contains("no query \"q9\""));
        assert!(refused(Hello { edge: 5, ..hello() }).contains("no edge 5"));
        assert!(refused(Hello {
            attempt: 1,
            ..hello()
        })
        .contains("attempt 1 of its task, which is now at attempt 2"));
    }
}
