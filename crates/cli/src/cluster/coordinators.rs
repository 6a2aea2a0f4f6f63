//! The coordinators a worker, an executor or a client may reach (`--coordinator
//! a:7400,b:7400`): one leads and answers; the others stand by and refuse every connection,
//! saying so ([`STANDING_BY`]). A connection goes to the first that answers, beginning with
//! the one that answered last.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

/// The addresses of a cluster's coordinators, in the order given.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Coordinators {
    addresses: Vec<SocketAddr>,
    /// The one that answered last (where the next connection begins).
    #[serde(skip)]
    last: Arc<AtomicUsize>,
}

impl PartialEq for Coordinators {
    fn eq(&self, other: &Self) -> bool {
        self.addresses == other.addresses
    }
}

impl Coordinators {
    /// One coordinator.
    pub fn one(address: SocketAddr) -> Self {
        Self {
            addresses: vec![address],
            last: Arc::default(),
        }
    }

    /// A connection to the coordinator that leads, and its address: the first that answers,
    /// tried in turn from the one that answered last. A refusal other than standing by (a
    /// wrong secret, another protocol) is that coordinator's answer, and returned as it is.
    pub fn connect(&self, secret: Option<&[u8]>) -> Result<(proto::Sender, proto::Receiver)> {
        let n = self.addresses.len();
        let first = self.last.load(Ordering::Relaxed) % n.max(1);
        let mut why: Vec<(SocketAddr, anyhow::Error)> = Vec::new();
        for k in 0..n {
            let i = (first + k) % n;
            let at = self.addresses[i];
            match proto::connect(at, secret) {
                Ok(c) => {
                    self.last.store(i, Ordering::Relaxed);
                    return Ok(c);
                }
                Err(e) if standing_by(&e) || !e.to_string().starts_with(proto::REFUSED) => {
                    why.push((at, e));
                }
                Err(e) => return Err(e),
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
            let a: SocketAddr = part
                .parse()
                .map_err(|_| format!("`{part}` is not HOST:PORT (give `a:7400,b:7400`)"))?;
            if addresses.contains(&a) {
                return Err(format!("{a} is given twice"));
            }
            addresses.push(a);
        }
        Ok(Self {
            addresses,
            last: Arc::default(),
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
        assert!("127.0.0.1:7400,x".parse::<Coordinators>().is_err());
        assert!("127.0.0.1:1,127.0.0.1:1"
            .parse::<Coordinators>()
            .expect_err("refused")
            .contains("twice"));
    }

    #[test]
    fn a_standby_refusal_is_told_from_another() {
        let standby = anyhow::anyhow!("{} {STANDING_BY}: pid 7 leads", proto::REFUSED);
        let other = anyhow::anyhow!("{} the secret differs", proto::REFUSED);
        assert!(standing_by(&standby));
        assert!(!standing_by(&other));
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
