//! Leadership by Redlock (`--leader-election redlock://HOST:PORT,HOST:PORT,…[/PREFIX]`): a
//! lock held on a majority of N independent Redis servers, as Redis' documentation describes
//! the algorithm.
//!
//! - Acquire: on every server in turn, `SET PREFIX:leader TOKEN NX PX TTL`, each call given a
//!   short timeout (a server that is down costs little); the lock is held if a majority said
//!   yes and the time that took leaves it valid: `validity = TTL − elapsed − drift`, the
//!   drift being 1% of the TTL plus 2 ms. Otherwise it is released everywhere at once.
//! - The token is random (with the coordinator's address and PID, which a standby prints);
//!   release and extension are Lua scripts that act only while the key holds this token.
//! - The leader extends the lock every third of the TTL on every server; held on a majority,
//!   it is valid for `TTL − drift` from when the extension was sent. A leader that cannot
//!   extend steps down before that ends ([`super::lease`]).
//! - A standby tries to acquire again after a random delay of up to a tenth of the TTL.
//! - Terms: the winner increments `PREFIX:term` on every server it reaches and takes the
//!   largest answer — a majority of the servers it holds meets the majority of any earlier
//!   leader's — and, since Redis may forget (a server restarted without persistence), at
//!   least one more than the last term in the shared state directory.
//!
//! What Redlock cannot promise (a leader paused past its lock's validity) is handled as with
//! etcd: the next leader takes the catalog over by term, and the old one steps down before
//! it acts once it runs again (`super::lease::act_or_step_down`).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::lease::{Lease, Renewal};
use super::Shared;

/// Releases the lock if it holds this token.
const RELEASE: &str = r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end"#;

/// Extends the lock by ARGV[2] ms if it holds this token: 1, else 0.
const EXTEND: &str = r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end"#;

/// Redis servers and the prefix of the election's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redlock {
    servers: Vec<String>,
    prefix: String,
}

impl std::fmt::Display for Redlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redlock://{}/{}", self.servers.join(","), self.prefix)
    }
}

impl Redlock {
    /// The prefix of the election's keys.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Parses what follows `redlock://`: `HOST:PORT[,HOST:PORT…][/PREFIX]`.
    pub fn parse(rest: &str) -> Result<Self, String> {
        let (hosts, prefix) = match rest.split_once('/') {
            Some((hosts, prefix)) => (hosts, prefix.trim_matches('/')),
            None => (rest, ""),
        };
        let prefix = if prefix.is_empty() { "anduin" } else { prefix };
        let servers = super::hosts(hosts, "a Redis server's port", "Redis")?;
        Ok(Self {
            servers,
            prefix: prefix.to_string(),
        })
    }

    fn key(&self, what: &str) -> String {
        format!("{}:{what}", self.prefix)
    }

    /// The key in which the leader says what its standbys must share with it.
    pub fn shared_key(&self) -> String {
        self.key("shared")
    }

    /// Says what the leaders of this election share, on every server that answers (the
    /// leader, once it has checked that no earlier one said otherwise).
    pub fn put_shared(&self, value: &str) {
        Servers::new(&self.servers, Duration::from_secs(1)).set_all(&self.shared_key(), value);
    }

    /// What the leaders of this election share, as the last one wrote it: on any server
    /// that holds it (one restarted empty may not); refused when none answers.
    pub fn shared(&self) -> Result<Option<String>> {
        Servers::new(&self.servers, Duration::from_secs(1)).get_some(&self.shared_key())
    }

    /// Waits until this coordinator (`me`) holds the lock with a TTL of `ttl`; `standing_by`
    /// is told once, with the holder's own words, if another holds it at first. The lock,
    /// extended until the process ends (stepping down if it cannot be), and the term.
    pub(super) fn lead(
        &self,
        shared: &Shared,
        ttl: Duration,
        me: &str,
        standing_by: impl FnOnce(Option<String>),
    ) -> Result<(Lease, u64)> {
        let ttl = ttl.max(Duration::from_secs(1));
        let servers = Arc::new(Servers::new(&self.servers, op_within(ttl)));
        let token = format!("{me} {:016x}", random());
        let leader = self.key("leader");
        let mut told = Some(standing_by);
        let mut unreachable = 0u32;
        loop {
            match servers.acquire(&leader, &token, ttl) {
                Ok(true) => break,
                Ok(false) => {
                    unreachable = 0;
                    if let Some(tell) = told.take() {
                        // The holder's token: its address and PID, then a random part.
                        let holder = servers.get_some(&leader).ok().flatten();
                        tell(holder.map(|t| match t.rsplit_once(' ') {
                            Some((who, _)) => who.to_string(),
                            None => t,
                        }));
                    }
                }
                Err(e) => {
                    unreachable += 1;
                    if unreachable == 1 || unreachable.is_multiple_of(60) {
                        eprintln!("anduin: coordinator cannot reach a majority of the Redis servers of {self} ({e:#}); trying on");
                    }
                }
            }
            // Half a tenth of the TTL and a random part of another half: standbys that failed
            // together do not try again together.
            let half = (ttl / 20).as_millis() as u64;
            std::thread::sleep(Duration::from_millis(half + random() % (half + 1)));
        }
        let sent = Instant::now();
        let counted = servers.incr_all(&self.key("term"));
        let term = super::file::next_term_at_least(&shared.state_dir, counted)?;
        let valid = ttl.saturating_sub(drift(ttl));
        let (renewing, releasing) = (Arc::clone(&servers), Arc::clone(&servers));
        let (key, token2, key2, token3) = (leader.clone(), token.clone(), leader, token);
        let lease = Lease::keep(
            self.to_string(),
            sent,
            valid,
            move || renewing.extend(&key, &token2, ttl),
            move || releasing.release(&key2, &token3),
        );
        Ok((lease, term))
    }
}

/// A random number: the process's random hasher keys, hashed with the time.
pub(super) fn random() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// The clocks' drift allowed for a lock of `ttl`: 1% of it, and 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// How long one call to one Redis server may take under a TTL of `ttl`: small beside it, so
/// that servers that are down cost little of the lock's validity.
fn op_within(ttl: Duration) -> Duration {
    (ttl / 50).clamp(Duration::from_millis(20), Duration::from_millis(500))
}

/// Whether `yes` of `n` servers is a majority.
pub fn majority(yes: usize, n: usize) -> bool {
    yes > n / 2
}

/// Connections to each server, opened again after an error.
struct Servers {
    addresses: Vec<String>,
    connections: Vec<Mutex<Option<redis::Connection>>>,
    within: Duration,
}

impl Servers {
    fn new(addresses: &[String], within: Duration) -> Self {
        Self {
            addresses: addresses.to_vec(),
            connections: addresses.iter().map(|_| Mutex::new(None)).collect(),
            within,
        }
    }

    /// `f` on server `i`'s connection (opened if need be; dropped after an error).
    fn on<T>(
        &self,
        i: usize,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        let mut slot = self.connections[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let address = &self.addresses[i];
        if slot.is_none() {
            let open = || -> redis::RedisResult<redis::Connection> {
                let client = redis::Client::open(format!("redis://{address}/"))?;
                let c = client.get_connection_with_timeout(self.within)?;
                c.set_read_timeout(Some(self.within))?;
                c.set_write_timeout(Some(self.within))?;
                Ok(c)
            };
            *slot = Some(open().map_err(|e| format!("{address}: {e}"))?);
        }
        let Some(c) = slot.as_mut() else {
            return Err(format!("{address}: no connection"));
        };
        f(c).map_err(|e| {
            *slot = None;
            format!("{address}: {e}")
        })
    }

    /// Takes `key` with `token` on a majority within the lock's validity: `Ok(true)`; held
    /// by another or too slow: `Ok(false)` (released where it was taken); a majority
    /// unreachable: an error naming them.
    fn acquire(&self, key: &str, token: &str, ttl: Duration) -> Result<bool> {
        let start = Instant::now();
        let ms = ttl.as_millis() as u64;
        let (mut yes, mut down) = (0, Vec::new());
        for i in 0..self.addresses.len() {
            match self.on(i, |c| {
                redis::cmd("SET")
                    .arg(key)
                    .arg(token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ms)
                    .query::<Option<String>>(c)
            }) {
                Ok(Some(_)) => yes += 1,
                Ok(None) => {}
                Err(e) => down.push(e),
            }
        }
        let n = self.addresses.len();
        if majority(yes, n) && start.elapsed() + drift(ttl) < ttl {
            return Ok(true);
        }
        self.release(key, token);
        if !majority(n - down.len(), n) {
            bail!("{}", down.join("; "));
        }
        Ok(false)
    }

    /// Extends `key` held with `token` to `ttl` on a majority.
    fn extend(&self, key: &str, token: &str, ttl: Duration) -> Result<Renewal> {
        let start = Instant::now();
        let ms = ttl.as_millis() as u64;
        let (mut yes, mut no, mut down) = (0, 0, Vec::new());
        for i in 0..self.addresses.len() {
            match self.on(i, |c| {
                redis::Script::new(EXTEND)
                    .key(key)
                    .arg(token)
                    .arg(ms)
                    .invoke::<i64>(c)
            }) {
                Ok(1) => yes += 1,
                Ok(_) => no += 1,
                Err(e) => down.push(e),
            }
        }
        let n = self.addresses.len();
        if majority(yes, n) && start.elapsed() + drift(ttl) < ttl {
            return Ok(Renewal::For(ttl.saturating_sub(drift(ttl))));
        }
        if majority(no, n) {
            return Ok(Renewal::Lost(format!(
                "its lock expired on {no} of the {n} Redis servers"
            )));
        }
        bail!(
            "extended on {yes} of {n} Redis servers{}",
            if down.is_empty() {
                String::new()
            } else {
                format!(" ({})", down.join("; "))
            }
        )
    }

    /// Releases `key` where it holds `token`.
    fn release(&self, key: &str, token: &str) {
        for i in 0..self.addresses.len() {
            let _ = self.on(i, |c| {
                redis::Script::new(RELEASE)
                    .key(key)
                    .arg(token)
                    .invoke::<i64>(c)
            });
        }
    }

    /// The value of `key` on the first server that holds it; `None` if the servers that
    /// answer hold none; an error when none answers.
    fn get_some(&self, key: &str) -> Result<Option<String>> {
        let mut why = Vec::new();
        for i in 0..self.addresses.len() {
            match self.on(i, |c| redis::cmd("GET").arg(key).query::<Option<String>>(c)) {
                Ok(Some(v)) => return Ok(Some(v)),
                Ok(None) => {}
                Err(e) => why.push(e),
            }
        }
        if why.len() == self.addresses.len() {
            bail!("cannot reach any Redis server: {}", why.join("; "));
        }
        Ok(None)
    }

    /// Increments `key` on every server that answers: the largest value.
    fn incr_all(&self, key: &str) -> u64 {
        (0..self.addresses.len())
            .filter_map(|i| {
                self.on(i, |c| redis::cmd("INCR").arg(key).query::<u64>(c))
                    .ok()
            })
            .max()
            .unwrap_or(0)
    }

    /// Sets `key` on every server that answers.
    fn set_all(&self, key: &str, value: &str) {
        for i in 0..self.addresses.len() {
            let _ = self.on(i, |c| redis::cmd("SET").arg(key).arg(value).query::<()>(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_and_a_prefix_are_read_and_bad_ones_refused() {
        let r = Redlock::parse("a:6379,b:6379,c:6380/prod").expect("parses");
        assert_eq!(r.to_string(), "redlock://a:6379,b:6379,c:6380/prod");
        assert_eq!(r.key("leader"), "prod:leader");
        let r = Redlock::parse("127.0.0.1:6379").expect("parses");
        assert_eq!(r.key("term"), "anduin:term");
        assert!(Redlock::parse("a:6379,b")
            .expect_err("no port")
            .contains("`b`"));
        assert!(Redlock::parse("a:6379,a:6379,b:6379")
            .expect_err("twice")
            .contains("given twice"));
    }

    #[test]
    fn a_lock_needs_a_strict_majority() {
        assert!(majority(2, 3));
        assert!(!majority(1, 3));
        assert!(majority(3, 5));
        assert!(!majority(2, 4));
        assert!(majority(1, 1));
    }

    #[test]
    fn the_drift_is_a_hundredth_and_two_milliseconds() {
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert!(op_within(Duration::from_secs(2)) * 3 < Duration::from_secs(2) / 10);
    }
}
