//! Leadership by a lease of etcd (`--leader-election etcd://HOST:PORT[,HOST:PORT…][/PREFIX]`),
//! spoken in JSON to etcd's gRPC gateway (`/v3/…`, etcd 3.4 and later) — the `etcd-client`
//! crate would need `protoc` to build.
//!
//! A coordinator campaigns by creating the key `PREFIX/leader` (default prefix `/anduin`)
//! under a lease of its own, in a transaction that succeeds only while the key does not exist
//! (its create revision is 0). The revision of that write orders the leaders: it is the
//! term (or one more than the last term in the shared state directory, if that is larger:
//! an etcd that lost its data counts from 1 again). The leader renews its lease every third of its time to live; the others read the
//! key now and then and campaign again once it is gone (its holder's lease expired, or was
//! revoked). A leader that cannot renew steps down — its process exits — before its lease
//! could have expired at etcd: the lease runs there from when etcd heard the last renewal,
//! which is after the leader sent it, so `sent + TTL` less a margin for the clocks' drift
//! ([`step_down_at`]) is still inside it.
//!
//! A leader paused past its lease is left by its workers (it pings them), and the next takes
//! the catalog over by term (`anduin_coordinator::catalog::terms`) without waiting for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};

use super::lease::{Lease, Renewal};
use super::Shared;

/// An etcd cluster's endpoints and the prefix of the election's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Etcd {
    endpoints: Vec<String>,
    prefix: String,
}

impl std::fmt::Display for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "etcd://{}{}", self.endpoints.join(","), self.prefix)
    }
}

impl Etcd {
    /// Parses what follows `etcd://`: `HOST:PORT[,HOST:PORT…][/PREFIX]`.
    pub fn parse(rest: &str) -> Result<Self, String> {
        let (hosts, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let prefix = if prefix.is_empty() { "/anduin" } else { prefix };
        let endpoints = super::hosts(hosts, "etcd's client port, 2379 by default", "etcd")?;
        Ok(Self {
            endpoints,
            prefix: prefix.to_string(),
        })
    }

    /// The prefix of the election's keys.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn leader_key(&self) -> String {
        format!("{}/leader", self.prefix)
    }

    /// The key in which the leader says what its standbys must share with it.
    pub fn shared_key(&self) -> String {
        format!("{}/shared", self.prefix)
    }

    /// Says what the leaders of this election share (the leader, once it has checked that
    /// no earlier one said otherwise).
    pub fn put_shared(&self, value: &str) -> Result<()> {
        Client::new(&self.endpoints, CALL_WITHIN).put(&self.shared_key(), value)
    }

    /// What the leaders of this election share, as the last one wrote it.
    pub fn shared(&self) -> Result<Option<String>> {
        let client = Client::new(&self.endpoints, CALL_WITHIN);
        Ok(client.get(&self.shared_key())?.map(|(value, _)| value))
    }

    /// Waits until this coordinator (`me`) holds the election key under a lease `ttl` long
    /// (whole seconds; etcd may lengthen it); `standing_by` is told once, with the leader's
    /// own words, if another holds it at first. The lease, renewed until the process ends
    /// (stepping down if it cannot be), and the term.
    pub(super) fn lead(
        &self,
        shared: &Shared,
        ttl: Duration,
        me: &str,
        standing_by: impl FnOnce(Option<String>),
    ) -> Result<(Lease, u64)> {
        let seconds = ttl.as_secs_f64().ceil().max(1.0) as i64;
        let client = Client::new(
            &self.endpoints,
            call_within(Duration::from_secs(seconds as u64)),
        );
        let poll = poll_every(Duration::from_secs(seconds as u64));
        let mut told = Some(standing_by);
        let mut unreachable = 0u32;
        let key = self.leader_key();
        loop {
            let attempt = (|| -> Result<Campaign> {
                if let Some((holder, _)) = client.get(&key)? {
                    return Ok(Campaign::Lost(Some(holder)));
                }
                let lease = client.grant(seconds)?;
                let sent = Instant::now();
                match client.campaign(&key, me, lease.id)? {
                    Ok(term) => Ok(Campaign::Won(term, lease, sent)),
                    Err(holder) => {
                        client.revoke(lease.id);
                        Ok(Campaign::Lost(holder))
                    }
                }
            })();
            match attempt {
                Ok(Campaign::Won(revision, lease, sent)) => {
                    // An etcd that lost its data counts revisions from 1 again: the term is
                    // also above the last one in the shared state directory.
                    let term = super::file::next_term_at_least(&shared.state_dir, revision)?;
                    let client = Arc::new(client);
                    let renewing = Arc::clone(&client);
                    let kept = Lease::keep(
                        self.to_string(),
                        sent,
                        lease.ttl,
                        move || {
                            Ok(match renewing.keep_alive(lease.id)? {
                                Some(ttl) => Renewal::For(ttl),
                                None => Renewal::Lost("etcd says its lease expired".into()),
                            })
                        },
                        move || client.revoke(lease.id),
                    );
                    return Ok((kept, term));
                }
                Ok(Campaign::Lost(holder)) => {
                    unreachable = 0;
                    if let Some(tell) = told.take() {
                        tell(holder);
                    }
                }
                Err(e) => {
                    unreachable += 1;
                    if unreachable == 1 || unreachable.is_multiple_of(60) {
                        eprintln!("anduin: coordinator cannot reach etcd ({e:#}); trying on");
                    }
                }
            }
            std::thread::sleep(poll);
        }
    }
}

/// How long one call to etcd may take at most, outside a lease's renewal.
const CALL_WITHIN: Duration = Duration::from_secs(5);

/// How long a call to etcd may take under a lease of `ttl`: short enough that a renewal that
/// hangs leaves time for another before the leader must step down.
fn call_within(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_millis(200), CALL_WITHIN)
}

/// How often a standby looks whether the leader's key is gone, under leases of `ttl`.
fn poll_every(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(50), Duration::from_millis(500))
}

/// What a campaign came to.
enum Campaign {
    /// This coordinator leads, from this term, under this lease (its grant sent then).
    Won(u64, Granted, Instant),
    /// Another leads (in its own words, if it said).
    Lost(Option<String>),
}

/// A lease etcd granted.
#[derive(Debug, Clone, Copy)]
struct Granted {
    id: i64,
    ttl: Duration,
}

/// etcd's JSON gateway, at the first of its endpoints that answers.
#[derive(Debug)]
struct Client {
    agent: ureq::Agent,
    endpoints: Vec<String>,
    /// The endpoint that answered last.
    last: AtomicUsize,
}

impl Client {
    fn new(endpoints: &[String], within: Duration) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(within))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            endpoints: endpoints.to_vec(),
            last: AtomicUsize::new(0),
        }
    }

    /// The answer of `path` to `body`, from the first endpoint that answers.
    fn call(&self, path: &str, body: &Value) -> Result<Value> {
        let n = self.endpoints.len();
        let first = self.last.load(Ordering::Relaxed);
        let mut why = Vec::new();
        for k in 0..n {
            let i = (first + k) % n;
            let url = format!("http://{}{path}", self.endpoints[i]);
            let mut response = match self.agent.post(&url).send_json(body) {
                Ok(r) => r,
                Err(e) => {
                    why.push(format!("{}: {e}", self.endpoints[i]));
                    continue;
                }
            };
            self.last.store(i, Ordering::Relaxed);
            let status = response.status().as_u16();
            let text = response
                .body_mut()
                .read_to_string()
                .with_context(|| format!("an unreadable answer from etcd at {url}"))?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("etcd at {url} answered what is not JSON: {text}"))?;
            if status != 200 {
                let message = value
                    .get("message")
                    .or_else(|| value.get("error"))
                    .and_then(Value::as_str)
                    .unwrap_or(&text);
                bail!("etcd at {url} refused ({status}): {message}");
            }
            return Ok(value);
        }
        bail!("cannot reach etcd: {}", why.join("; "))
    }

    /// The value of `key` and its create revision, if it exists.
    fn get(&self, key: &str) -> Result<Option<(String, u64)>> {
        let answer = self.call("/v3/kv/range", &json!({ "key": BASE64.encode(key) }))?;
        Ok(first_kv(&answer))
    }

    fn put(&self, key: &str, value: &str) -> Result<()> {
        self.call(
            "/v3/kv/put",
            &json!({ "key": BASE64.encode(key), "value": BASE64.encode(value) }),
        )?;
        Ok(())
    }

    fn grant(&self, seconds: i64) -> Result<Granted> {
        let answer = self.call("/v3/lease/grant", &json!({ "TTL": seconds }))?;
        let id = int(&answer["ID"]).context("etcd granted a lease without an ID")?;
        let ttl = int(&answer["TTL"]).unwrap_or(seconds);
        Ok(Granted {
            id,
            ttl: Duration::from_secs(u64::try_from(ttl).unwrap_or(0)),
        })
    }

    /// Creates `key` holding `value` under `lease` if it does not exist: the revision of
    /// the write, or what the key holds.
    fn campaign(&self, key: &str, value: &str, lease: i64) -> Result<Result<u64, Option<String>>> {
        let key = BASE64.encode(key);
        let answer = self.call(
            "/v3/kv/txn",
            &json!({
                "compare": [{ "key": key, "target": "CREATE", "create_revision": "0" }],
                "success": [{ "request_put": {
                    "key": key, "value": BASE64.encode(value), "lease": lease.to_string()
                } }],
                "failure": [{ "request_range": { "key": key } }],
            }),
        )?;
        if answer["succeeded"].as_bool() == Some(true) {
            let revision = int(&answer["header"]["revision"])
                .and_then(|r| u64::try_from(r).ok())
                .context("etcd answered a campaign without its revision")?;
            return Ok(Ok(revision));
        }
        let holder = answer["responses"]
            .get(0)
            .and_then(|r| first_kv(&r["response_range"]))
            .map(|(value, _)| value);
        Ok(Err(holder))
    }

    /// Renews `lease`: its time to live now, `None` if it expired.
    fn keep_alive(&self, lease: i64) -> Result<Option<Duration>> {
        let answer = self.call("/v3/lease/keepalive", &json!({ "ID": lease.to_string() }))?;
        Ok(int(&answer["result"]["TTL"])
            .filter(|t| *t > 0)
            .map(|t| Duration::from_secs(t.unsigned_abs())))
    }

    /// Revokes `lease` (its keys go with it), if etcd can be reached.
    fn revoke(&self, lease: i64) {
        if let Err(e) = self.call("/v3/lease/revoke", &json!({ "ID": lease.to_string() })) {
            tracing::warn!(error = %e, lease, "cannot revoke a lease of etcd: it expires by itself");
        }
    }
}

/// The first key's value and create revision in a range answer.
fn first_kv(answer: &Value) -> Option<(String, u64)> {
    let kv = answer["kvs"].get(0)?;
    let value = kv["value"]
        .as_str()
        .and_then(|v| BASE64.decode(v).ok())
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    let revision = int(&kv["create_revision"]).and_then(|r| u64::try_from(r).ok())?;
    Some((value, revision))
}

/// A 64-bit integer as the gateway writes it (a string) or as a number.
fn int(v: &Value) -> Option<i64> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_i64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_a_prefix_are_read_and_bad_ones_refused() {
        let e = Etcd::parse("a:2379,10.0.0.2:2380/anduin/prod/").expect("parses");
        assert_eq!(e.to_string(), "etcd://a:2379,10.0.0.2:2380/anduin/prod");
        assert_eq!(e.leader_key(), "/anduin/prod/leader");
        let e = Etcd::parse("127.0.0.1:2379").expect("parses");
        assert_eq!(e.leader_key(), "/anduin/leader");
        assert!(Etcd::parse("a:2379,b")
            .expect_err("no port")
            .contains("`b`"));
        assert!(Etcd::parse(":2379").is_err());
        assert!(Etcd::parse("a:99999").is_err());
    }

    #[test]
    fn a_hung_renewal_leaves_time_for_another() {
        use super::super::lease::step_down_at;
        let t = Instant::now();
        // Renewals come every third of the lease, a hung one is given up after a quarter
        // and the next sent at once: after a renewal, the next may hang and the one after
        // still lands before the leader must go.
        for ttl in [2, 5, 10, 60].map(Duration::from_secs) {
            let two_tries = ttl / 3 + call_within(ttl) * 2;
            assert!(t + two_tries < step_down_at(t, ttl), "{ttl:?}");
        }
    }

    #[test]
    fn a_range_answer_is_read_as_the_gateway_writes_it() {
        let answer = json!({
            "header": { "revision": "2" },
            "kvs": [{ "key": "L2FuZHVpbi9sZWFkZXI=", "create_revision": "2", "value": "bWU=" }],
            "count": "1"
        });
        assert_eq!(first_kv(&answer), Some(("me".to_string(), 2)));
        assert_eq!(first_kv(&json!({ "header": {} })), None);
    }
}
