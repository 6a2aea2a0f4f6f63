//! The coordinators a worker, an executor or a client may reach (`--coordinator
//! a:7400,b:7400`): one leads and answers; the others stand by and refuse every connection,
//! saying so ([`STANDING_BY`]). A connection goes to the first that answers, beginning with
//! the one that answered last.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::proto;

/// How a coordinator that does not lead begins its refusal of a connection.
pub const STANDING_BY: &str = "standing by";

/// How the error begins when none of several coordinators answered as the leader.
pub const NO_LEADER: &str = "no coordinator leads";

/// Whether `e` is the refusal of a coordinator that does not lead (another may).
pub fn standing_by(e: &anyhow::Error) -> bool {
    e.to_string()
        .starts_with(&format!("{} {STANDING_BY}", proto::REFUSED))
}

/// The addresses of a cluster's coordinators, in the order given: `IP:PORT` or `NAME:PORT`, a
/// name looked up again at every connection (a Kubernetes Service's, a DNS name that moves).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Coordinators {
    addresses: Vec<String>,
    /// The one that answered last (where the next connection begins).
    #[serde(skip)]
    last: Arc<AtomicUsize>,
    /// How long a coordinator may take to answer a new connection, in ms (0: the default,
    /// [`proto::ANSWER_WITHIN`]); shorter once the coordinators say how long they may be
    /// silent, so that a paused one in the list costs little.
    #[serde(skip)]
    answer_within_ms: Arc<AtomicU64>,
    /// The latest leader's term heard from any of them (0: none).
    #[serde(skip)]
    newest_term: Arc<AtomicU64>,
}

impl PartialEq for Coordinators {
    fn eq(&self, other: &Self) -> bool {
        self.addresses == other.addresses
    }
}

impl Coordinators {
    /// How many coordinators the list names (more than one: an election among them).
    pub fn count(&self) -> usize {
        self.addresses.len()
    }

    /// One coordinator.
    pub fn one(address: SocketAddr) -> Self {
        Self {
            addresses: vec![address.to_string()],
            last: Arc::default(),
            answer_within_ms: Arc::default(),
            newest_term: Arc::default(),
        }
    }

    /// Whether an answer of a leader of `term` (`None`: not elected) may be taken: not when
    /// a later leader has answered before — the one that answered was superseded, and the
    /// next connection begins with the next coordinator.
    pub fn heard_term(&self, term: Option<u64>) -> Result<(), u64> {
        let Some(term) = term else {
            return Ok(());
        };
        let newest = self.newest_term.fetch_max(term, Ordering::SeqCst);
        if newest > term {
            self.pass_over();
            return Err(newest);
        }
        Ok(())
    }

    /// A coordinator that does not answer a new connection within `within` is given up (the
    /// coordinators' `silent_after`: one that leads answers at once).
    pub fn answer_within(&self, within: Duration) {
        let ms = u64::try_from(within.as_millis()).unwrap_or(u64::MAX).max(1);
        self.answer_within_ms.store(ms, Ordering::Relaxed);
    }

    /// The next connection begins with the coordinator after the one that answered last (it
    /// fell silent: paused or cut off, it would hold the next try for a whole answer time).
    pub fn pass_over(&self) {
        let n = self.addresses.len().max(1);
        let next = (self.last.load(Ordering::Relaxed) + 1) % n;
        self.last.store(next, Ordering::Relaxed);
    }

    /// A connection to the coordinator that leads, and its address: the first that answers,
    /// tried in turn from the one that answered last. A refusal other than standing by (a
    /// wrong secret, another protocol) is that coordinator's answer, and returned as it is.
    pub fn connect(&self, secret: Option<&[u8]>) -> Result<(proto::Sender, proto::Receiver)> {
        let n = self.addresses.len();
        let first = self.last.load(Ordering::Relaxed) % n.max(1);
        let mut why: Vec<(&str, anyhow::Error)> = Vec::new();
        for k in 0..n {
            let i = (first + k) % n;
            let name = self.addresses[i].as_str();
            let found = match name.to_socket_addrs() {
                Ok(found) => found.collect::<Vec<SocketAddr>>(),
                Err(e) => {
                    why.push((name, anyhow::anyhow!("cannot look `{name}` up: {e}")));
                    continue;
                }
            };
            for at in found {
                let within = match self.answer_within_ms.load(Ordering::Relaxed) {
                    0 => proto::ANSWER_WITHIN,
                    ms => Duration::from_millis(ms),
                };
                match proto::connect_within(at, secret, within) {
                    Ok(c) => {
                        self.last.store(i, Ordering::Relaxed);
                        return Ok(c);
                    }
                    Err(e) if standing_by(&e) || !e.to_string().starts_with(proto::REFUSED) => {
                        why.push((name, e));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        if why.len() == 1 {
            return Err(why.remove(0).1);
        }
        let each: Vec<String> = why.iter().map(|(at, e)| format!("{at}: {e:#}")).collect();
        bail!("{NO_LEADER} now: {}", each.join("; "))
    }
}

impl FromStr for Coordinators {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut addresses = Vec::new();
        for part in s.split(',').map(str::trim) {
            let well_formed = part.parse::<SocketAddr>().is_ok()
                || part.rsplit_once(':').is_some_and(|(host, port)| {
                    !host.is_empty()
                        && !host.contains([':', '/', ' '])
                        && port.parse::<u16>().is_ok()
                });
            if !well_formed {
                return Err(format!(
                    "`{part}` is not HOST:PORT (give `a:7400,b:7400`, an address or a name)"
                ));
            }
            if addresses.iter().any(|a| a == part) {
                return Err(format!("{part} is given twice"));
            }
            addresses.push(part.to_string());
        }
        Ok(Self {
            addresses,
            last: Arc::default(),
            answer_within_ms: Arc::default(),
            newest_term: Arc::default(),
        })
    }
}

impl fmt::Display for Coordinators {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all: Vec<String> = self.addresses.iter().map(ToString::to_string).collect();
        f.write_str(&all.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_parsed_in_order_and_printed_back() {
        let c: Coordinators = "127.0.0.1:7400, 127.0.0.1:7401".parse().expect("two");
        assert_eq!(c.to_string(), "127.0.0.1:7400,127.0.0.1:7401");
        let named: Coordinators = "anduin-coordinator:7400,[::1]:7401".parse().expect("names");
        assert_eq!(named.to_string(), "anduin-coordinator:7400,[::1]:7401");
        assert!("127.0.0.1:7400,x".parse::<Coordinators>().is_err());
        assert!("host:99999".parse::<Coordinators>().is_err());
        assert!("http://host:7400".parse::<Coordinators>().is_err());
        assert!("127.0.0.1:1,127.0.0.1:1"
            .parse::<Coordinators>()
            .expect_err("refused")
            .contains("twice"));
    }

    #[test]
    fn an_answer_of_a_term_older_than_one_heard_is_passed_over() {
        let c: Coordinators = "127.0.0.1:7400,127.0.0.1:7401".parse().expect("two");
        assert_eq!(c.heard_term(None), Ok(()), "a coordinator not elected");
        assert_eq!(c.heard_term(Some(2)), Ok(()));
        assert_eq!(c.last.load(Ordering::Relaxed), 0);
        assert_eq!(c.heard_term(Some(5)), Ok(()), "a later leader");
        assert_eq!(c.heard_term(Some(2)), Err(5), "the superseded one");
        assert_eq!(c.last.load(Ordering::Relaxed), 1, "the next is asked first");
        assert_eq!(c.heard_term(Some(5)), Ok(()));
        // Clones (the threads of one client) share what they heard.
        assert_eq!(c.clone().heard_term(Some(3)), Err(5));
    }

    #[test]
    fn a_standby_refusal_is_told_from_another() {
        let standby = anyhow::anyhow!("{} {STANDING_BY}: pid 7 leads", proto::REFUSED);
        let other = anyhow::anyhow!("{} the secret differs", proto::REFUSED);
        assert!(standing_by(&standby));
        assert!(!standing_by(&other));
    }

    #[test]
    fn a_coordinator_is_reached_by_its_name() {
        // A standby on loopback, named `localhost`: its refusal is what the name reaches.
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = l.local_addr().expect("its address").port();
        let standby = std::thread::spawn(move || {
            let (stream, _) = l.accept().expect("a peer");
            let (to, _from) = proto::split(stream).expect("halves");
            to.refuse(&format!("{STANDING_BY}: a test"));
        });
        let c: Coordinators = format!("localhost:{port}").parse().expect("a name");
        let Err(e) = c.connect(None) else {
            panic!("a standby answers")
        };
        standby.join().expect("no panic");
        // (`localhost` may also name ::1, where nothing listens: then both are told.)
        assert!(format!("{e:#}").contains(STANDING_BY), "{e:#}");
    }

    #[test]
    fn with_every_coordinator_away_the_error_names_each() {
        // Ports the system gave and took back: nothing listens there.
        let free = |_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a port")
        };
        let (a, b) = (free(0), free(1));
        let c: Coordinators = format!("{a},{b}").parse().expect("two");
        let Err(e) = c.connect(None) else {
            panic!("nothing listens at {a} or {b}")
        };
        let e = e.to_string();
        assert!(
            e.contains("no coordinator leads") && e.contains(&a.to_string()),
            "{e}"
        );
    }
}
