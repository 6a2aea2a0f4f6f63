//! The cluster's control protocol: the messages between the coordinator, workers, executors
//! and clients, each a JSON document in a `message` frame of the wire format (checksummed,
//! bounded), over one TCP connection per peer.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anduin_wire::{write_frame, Frame, FrameError, FrameReader};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What opens a connection to the coordinator, and what follows on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ToCoordinator {
    /// A worker offers its slots (opens a worker's connection).
    Worker {
        /// Its name, for status and logs.
        name: String,
        /// How many task instances it runs at once.
        slots: u32,
        /// The number it had before it lost the coordinator (a restarted coordinator gives it
        /// back, so that the parts it still runs stay its own).
        previous: Option<u32>,
    },
    /// A worker is alive.
    Heartbeat,
    /// An executor of one attempt of a query starts (opens an executor's connection).
    Executor {
        query: String,
        attempt: u64,
        worker: u32,
        /// Where it listens for channels from other workers.
        data: SocketAddr,
        /// Its part's incarnation ([`Deployment::incarnation`]).
        #[serde(default)]
        incarnation: u64,
        /// It has been told to start ([`ToExecutor::Start`]): it reports again after losing
        /// its coordinator. Not yet: a coordinator that takes over sends it `Start`.
        #[serde(default)]
        started: bool,
    },
    /// Checkpoint events of an executor's tasks.
    Event(anduin_runtime::Event),
    /// The live figures of an executor's instances and its dead letters (every second).
    Figures(Box<anduin_runtime::control::QueryMetrics>),
    /// An executor whose instances have no figures yet (it restores a checkpoint) is alive
    /// (every second, until its figures come instead).
    Alive,
    /// An executor's tasks have reached the end of their input: may they end it (which
    /// commits what their sinks hold)? Answered with [`ToExecutor::EndAllowed`] when the
    /// executor still runs its part, by closing the connection when it does not.
    MayEnd,
    /// An executor whose part has ended, holding acknowledgements of checkpoints up to
    /// `acked` that it does not know complete: may it end its process (and forget them)?
    /// Answered with [`ToExecutor::EndAllowed`] once checkpoint `acked` (or a later one) has
    /// completed or been given up, not when the coordinator has merely read them: a
    /// coordinator that dies before the manifest is written leaves them to be told again to
    /// the next, which completes the checkpoint from them.
    MayExit {
        /// The newest checkpoint the executor's tasks acknowledged.
        acked: u64,
    },
    /// An executor's process has ended (sent by its worker, to every coordinator it
    /// registers with until one answers [`ToWorker::EndNoted`]).
    PartEnded {
        query: String,
        attempt: u64,
        /// Whose instances it ran (its deployment's worker: another one's when they were
        /// restored here).
        #[serde(default)]
        part: Option<u32>,
        /// The part's incarnation it ran ([`Deployment::incarnation`]): the end of an older
        /// one than the coordinator's is stale.
        #[serde(default)]
        incarnation: u64,
        /// `None`: it finished its part; otherwise why not.
        error: Option<String>,
    },
    /// A client submits a query (opens a client's connection, answered with a [`Reply`]).
    Submit(Submission),
    /// A client asks for the state of one query or of all.
    Status { query: Option<String> },
    /// A client cancels a query.
    Cancel { query: String },
}

/// A query as a client submits it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// The query's name (unique among the coordinator's queries).
    pub name: String,
    /// The query file's name (its extension says .flow, .sql or .json).
    pub file_name: String,
    /// The query file as the user gave it to `anduin submit` (`queries/q.sql`), for the
    /// places the query's errors name: not the copy the coordinator and the executors load.
    /// `None` from an older client (the name is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_file: Option<String>,
    /// The query file's text.
    pub source: String,
    /// The WebAssembly modules the query loads, read by `anduin submit` (see
    /// [`super::modules`]).
    #[serde(default)]
    pub modules: Vec<anduin_coordinator::catalog::ModuleFile>,
    /// The flags of `anduin run` that concern the query (`--var`, `--parallelism`,
    /// `--checkpoint-interval`…).
    pub args: Vec<String>,
    /// The client's working directory: relative paths in the query are resolved there.
    pub cwd: PathBuf,
    /// The rule file applied while the query runs (`--rules FILE`): its name and text.
    #[serde(default)]
    pub rules: Option<RuleFile>,
    /// Resume from the last complete checkpoint that a query of this name, now over, left
    /// (`--resume`), rather than start from the beginning.
    #[serde(default)]
    pub resume: bool,
}

impl Submission {
    /// The query file as the user named it, for the places in errors.
    pub fn shown_file(&self) -> &str {
        self.given_file.as_deref().unwrap_or(&self.file_name)
    }
}

/// A rule file sent with a submission (`--rules FILE`, docs/rewriting.md "Rules at run
/// time").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleFile {
    /// Its name, as the user named it (in the rules' FILE:LINE:COL).
    pub name: String,
    pub text: String,
    /// `--rules-interval`, as given (the executors never see the rules' flags).
    #[serde(default)]
    pub interval: Option<String>,
}

/// From the coordinator to a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ToWorker {
    /// Registered as this worker.
    Welcome {
        worker: u32,
        /// The coordinator's `--heartbeat-timeout`: the worker's heartbeats must come more
        /// often than every half of it.
        #[serde(default)]
        heartbeat_timeout_ms: Option<u64>,
        /// The term of the coordinator, when it was elected leader among several: a worker
        /// refuses a coordinator of an older term than one it has seen.
        #[serde(default)]
        term: Option<u64>,
        /// When the coordinator was elected by a lease: it pings at least four times this
        /// often, and a worker (and its executors) that hears nothing from it for this long
        /// leaves it for the next coordinator of its list — a paused or cut-off leader is left
        /// before its lease could expire and another lead.
        #[serde(default)]
        silent_after_ms: Option<u64>,
    },
    /// Nothing to do: the coordinator is there (see `Welcome::silent_after_ms`).
    Ping,
    /// Start an executor for part of a query.
    Deploy(Box<Deployment>),
    /// Stop (kill) the executor of this attempt, if it runs.
    Cancel { query: String, attempt: u64 },
    /// Stop (kill) the executor of one part of this attempt, at this incarnation or an
    /// older one, if it runs (it is stuck: its part is restored).
    CancelPart {
        query: String,
        attempt: u64,
        part: u32,
        incarnation: u64,
    },
    /// The coordinator has read the worker's [`ToCoordinator::PartEnded`] of this part: the
    /// worker may forget it. Until then the worker tells every coordinator it registers with
    /// again (one killed before it read a report took the report with it).
    EndNoted {
        query: String,
        attempt: u64,
        part: u32,
        incarnation: u64,
    },
}

/// One worker's part of one attempt of a query.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Deployment {
    pub query: String,
    pub attempt: u64,
    /// The worker that runs this part.
    pub worker: u32,
    pub submission: Submission,
    /// The worker of every task instance, by its number in the run.
    pub placement: Vec<u32>,
    /// The name of every task instance of the coordinator's plan, by its number in the run:
    /// the executor's plan of the query must be the same.
    #[serde(default)]
    pub instances: Vec<String>,
    /// The query's checkpoint directory (shared by every worker and the coordinator), when
    /// its checkpoints go to a directory.
    pub checkpoint_dir: PathBuf,
    /// The query's checkpoints in an object store (`s3://bucket/prefix/QUERY`), when they go
    /// to one: then `checkpoint_dir` is the coordinator's and unused on the workers; each
    /// executor stages its tasks' files in a directory of its own and uploads them, reaching
    /// the store with the credentials in its own environment (`super::store`).
    #[serde(default)]
    pub checkpoint_store: Option<String>,
    /// The checkpoint to resume from.
    pub restore: Option<u64>,
    /// `restore` says every input ended: the executor restores its instances from it, so
    /// that its sinks commit what it holds (their last commit may not have happened: a part
    /// failed or was lost in between), and runs nothing
    /// (`anduin_runtime::Checkpointing::commit_only`).
    #[serde(default)]
    pub commit_only: bool,
    /// The lineage of the query's checkpoints, which the coordinator keeps in their store
    /// (`anduin_checkpoint::Store::lineage`): the same for every executor and every attempt
    /// until the query is submitted anew. `None` from a coordinator that keeps none.
    #[serde(default)]
    pub lineage: Option<String>,
    /// The digest of the query as it runs (`anduin_operator_api::BuildContext::query_digest`):
    /// a sink restored from a checkpoint another query took names its rows anew. `None` from
    /// a coordinator that does not say.
    #[serde(default)]
    pub query_digest: Option<String>,
    /// The param changes the coordinator's catalog recorded after that checkpoint (a whole
    /// rollback): applied after the restored state, with the changes its manifest recorded
    /// at its own epoch.
    #[serde(default)]
    pub controls: Vec<anduin_checkpoint::ChangeRecord>,
    /// Where the executor reaches the coordinator.
    pub coordinator: SocketAddr,
    /// Every coordinator the executor may report to, when its worker has several (set by
    /// the worker from its `--coordinator` list): the one that leads answers.
    #[serde(default)]
    pub coordinators: Option<super::coordinators::Coordinators>,
    /// How many times this part was restored on another worker in this attempt (0: it runs
    /// where it was deployed). Its executor says so to the coordinator and in every
    /// handshake of its channels, and whoever knows of a newer one turns it away: a worker
    /// that was paused or cut off, and whose part was restored elsewhere meanwhile, cannot
    /// take it back.
    #[serde(default)]
    pub incarnation: u64,
    /// The executor leaves a coordinator it has not heard from for this long (set by the
    /// worker from its `Welcome`).
    #[serde(default)]
    pub silent_after_ms: Option<u64>,
    /// The term of the leader that deployed it (or a later one its worker registered with),
    /// when the coordinators are elected by a lease: the executor refuses a coordinator of an
    /// older term ([`ToExecutor::Leader`]).
    #[serde(default)]
    pub term: Option<u64>,
    /// The part runs none of the planned instances: it was started while the query runs, for
    /// those a rescale places on its worker ([`ToExecutor::Barriers`]).
    #[serde(default)]
    pub alone: bool,
}

/// From the coordinator to an executor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ToExecutor {
    /// Every executor of the attempt listens: where. Start running.
    Start {
        addresses: BTreeMap<u32, SocketAddr>,
    },
    /// A checkpoint command for one of its task instances.
    Command {
        task: usize,
        command: anduin_runtime::Command,
    },
    /// The instances of `worker` were restored in another executor, which listens at
    /// `address`: channels to them go there now.
    Redirect { worker: u32, address: SocketAddr },
    /// The executor still runs its part: its tasks may end their input (answering
    /// [`ToCoordinator::MayEnd`]); or its part's last acknowledgements are settled: it may end
    /// (answering [`ToCoordinator::MayExit`]).
    EndAllowed,
    /// `anduin ctl stop`: the part's sources stop and take a last checkpoint (not the end of
    /// their input), and the part ends once it has finished what it holds.
    Drain,
    /// Nothing to do: the coordinator is there (see `Deployment::silent_after_ms`).
    Ping,
    /// The barriers with changes the coordinator sent since it last said (each: its epoch
    /// and its changes, in order; all of the attempt's at first), and whether the query's
    /// last barrier was sent: told to the parts that run only instances added while running
    /// (where nothing aligns them), which build those placed on them as they hear them.
    Barriers {
        barriers: Vec<(u64, Vec<anduin_types::ControlUpdate>)>,
        last: bool,
    },
    /// The first message on an executor's connection to a coordinator elected by a lease: its
    /// term. An executor that has followed a later leader refuses it ([`SUPERSEDED`]) before
    /// it takes any of its commands: a superseded leader that still runs (paused past its
    /// lease, then let run again) cannot trigger or commit a checkpoint.
    Leader { term: u64 },
}

/// How the refusal of a worker or an executor that has followed a later leader than the
/// coordinator it reached begins: the coordinator, superseded, steps down when it reads it.
pub const SUPERSEDED: &str = "superseded by a later leader:";

/// Refuses the coordinator of a connection as superseded ([`SUPERSEDED`]), saying `why`, and
/// reads on until it closes the connection (it steps down as it reads the refusal) or for 2 s
/// at most: closing at once, with a ping of it unread, would reset the connection and could
/// throw the refusal away before the coordinator read it.
pub fn refuse_superseded(to: &Sender, from: &mut Receiver, why: &str) {
    to.refuse(&format!("{SUPERSEDED} {why}"));
    to.finish();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        if !matches!(from.recv_within::<serde_json::Value>(left), Ok(Some(_))) {
            break;
        }
    }
    to.close();
}

/// Whether `e`, read from a worker's or an executor's connection, is its refusal of this
/// coordinator as superseded ([`SUPERSEDED`]): why, if so.
pub fn refused_as_superseded(e: &anyhow::Error) -> Option<String> {
    let text = e.to_string();
    let reason = text.strip_prefix(REFUSED)?.trim_start();
    reason.starts_with(SUPERSEDED).then(|| reason.to_string())
}

/// The coordinator's answer to a client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Reply {
    /// The query was accepted under this name.
    Submitted { query: String },
    /// The workers, and the queries asked for.
    Status {
        workers: Vec<WorkerStatus>,
        queries: Vec<QueryStatus>,
        /// The answering coordinator's term, when it was elected leader among several: a
        /// client that has heard a later term passes over it (a superseded leader that has
        /// not stepped down yet answers with what it last knew).
        #[serde(default)]
        term: Option<u64>,
    },
    /// The query is being cancelled.
    Cancelling,
    /// The request was refused: why.
    Refused(String),
}

/// What `anduin status` shows of a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub id: u32,
    pub name: String,
    pub slots: u32,
    /// Whether it is alive (heard from within the heartbeat timeout).
    pub alive: bool,
}

/// What `anduin status` shows of a query.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueryStatus {
    pub name: String,
    /// submitted, scheduling, running, recovering, finished, failed, cancelled.
    pub state: String,
    pub attempt: u64,
    /// Task instances per worker (name), in the current attempt.
    pub placement: BTreeMap<String, usize>,
    /// The worker (name) each task instance (by its name) runs on, in the current attempt.
    #[serde(default)]
    pub instances: BTreeMap<String, String>,
    /// The last complete checkpoint.
    pub last_checkpoint: Option<u64>,
    /// Why it failed, or the last attempt's failure it recovered from.
    pub error: Option<String>,
    /// Each operator's rows and rate, from the figures its executors sent last (empty
    /// before they have sent any, and once the attempt is over).
    #[serde(default)]
    pub operators: Vec<OperatorFigures>,
    /// Its attempts that failed in a row with no checkpoint completed (`anduin coordinator
    /// --restart-attempts`: it is given up at `restart_attempts`).
    #[serde(default)]
    pub failures_in_a_row: u32,
    /// `anduin coordinator --restart-attempts` (0 from a coordinator older than this field).
    #[serde(default)]
    pub restart_attempts: u32,
    /// While it waits for its next attempt after a failure: in how many milliseconds that
    /// starts, as of the answer.
    #[serde(default)]
    pub next_attempt_in_ms: Option<u64>,
}

/// One operator's figures in `anduin status`, over all its instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorFigures {
    pub operator: String,
    /// Rows received.
    pub rows_in: u64,
    /// Rows emitted (a sink: rows written).
    pub rows_out: u64,
    /// Rows emitted per second between the executors' last two reports (`None` before the
    /// second).
    pub rows_out_per_s: Option<f64>,
}

impl QueryStatus {
    /// Whether the query will not change any more.
    pub fn is_over(&self) -> bool {
        matches!(self.state.as_str(), "finished" | "failed" | "cancelled")
    }
}

/// The writing half of a connection, shared by the threads that send on it.
#[derive(Clone)]
pub struct Sender {
    inner: Arc<Mutex<BufWriter<TcpStream>>>,
}

impl Sender {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            inner: Arc::new(Mutex::new(BufWriter::new(stream))),
        }
    }

    /// Sends `msg` now.
    pub fn send<T: Serialize>(&self, msg: &T) -> Result<()> {
        let body = serde_json::to_vec(msg).context("encoding a cluster message")?;
        let mut w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        write_frame(&mut *w, &Frame::Message { body })?;
        w.flush()?;
        Ok(())
    }

    /// Refuses the connection, saying why (the peer's next read fails with it).
    pub fn refuse(&self, reason: &str) {
        let mut w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let _ = write_frame(
            &mut *w,
            &Frame::Refused {
                reason: reason.to_string(),
            },
        );
        let _ = w.flush();
    }

    /// Closes the writing direction (the peer's reads end; it may still write).
    pub fn finish(&self) {
        let w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.get_ref().shutdown(std::net::Shutdown::Write);
    }

    /// Closes both directions (the peer's reads end).
    pub fn close(&self) {
        let w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// The reading half of a connection.
pub struct Receiver {
    inner: FrameReader<TcpStream>,
}

impl Receiver {
    pub fn new(stream: TcpStream) -> Self {
        let mut inner = FrameReader::new(stream);
        inner.set_limit(MESSAGE_LIMIT);
        Self { inner }
    }

    /// Takes no message larger than `limit` bytes.
    pub fn set_limit(&mut self, limit: usize) {
        self.inner.set_limit(limit);
    }

    /// The next message, waited for `within` at most (an error after that; the connection is
    /// then to be dropped: part of a message may have been read).
    pub fn recv_within<T: DeserializeOwned>(&mut self, within: Duration) -> Result<Option<T>> {
        self.inner.get_ref().set_read_timeout(Some(within))?;
        let got = self.recv();
        self.inner.get_ref().set_read_timeout(None)?;
        got.with_context(|| format!("no answer within {within:?}"))
    }

    /// The next message, waited for `within` at most if given.
    pub fn recv_until<T: DeserializeOwned>(
        &mut self,
        within: Option<Duration>,
    ) -> Result<Option<T>> {
        match within {
            Some(within) => self.recv_within(within),
            None => self.recv(),
        }
    }

    /// The next message; `None` when the peer closed the connection.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>> {
        match self.inner.read_frame()? {
            None => Ok(None),
            Some(Frame::Message { body }) => Ok(Some(
                serde_json::from_slice(&body).context("a malformed cluster message")?,
            )),
            Some(Frame::Refused { reason }) => bail!("{REFUSED} {reason}"),
            Some(_) => bail!("a frame of the data plane on a control connection"),
        }
    }
}

/// Whether `e` is a read that timed out (no message within a `recv_within`).
pub fn timed_out(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .or_else(|| match c.downcast_ref::<FrameError>() {
                Some(FrameError::Io(io)) => Some(io),
                _ => None,
            })
            .is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            })
    })
}

/// How the refusal of a worker begins whose name a worker of the catalog of a restarted
/// coordinator holds until it is back or declared dead: the worker tries again meanwhile (it
/// may be that worker, restarted).
pub const NAME_HELD: &str = "the name is held:";

/// How a refusal by the coordinator reads, as an error.
pub const REFUSED: &str = "the coordinator refused:";

/// The largest control message (a submitted query's file included): 16 MiB.
pub const MESSAGE_LIMIT: usize = 16 << 20;

/// The version of this control protocol. Both ends of a connection must speak the same one:
/// the coordinator says its version in its [`Challenge`], the peer its own in its [`Proof`],
/// and each refuses another. (Before versions were sent, both said none: 0.)
pub const CONTROL_PROTOCOL: u32 = 2;

/// The coordinator's first message on every connection: prove the cluster's secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Challenge {
    pub nonce: Vec<u8>,
    /// The coordinator's [`CONTROL_PROTOCOL`].
    #[serde(default)]
    pub version: u32,
}

/// The answer to a [`Challenge`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proof {
    pub proof: Vec<u8>,
    /// The peer's [`CONTROL_PROTOCOL`].
    #[serde(default)]
    pub version: u32,
}

/// Whether the coordinator takes a peer that answered its [`Challenge`].
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    /// Refused, and why (the peer is told).
    Refuse(String),
}

/// How long a connection to a coordinator may take to open, and its first word to come: a
/// coordinator that does not answer by then (its process stopped, its host gone) is given up,
/// and the next one a peer knows is tried.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// Both halves of a new connection to the coordinator at `addr`, once this process has proved
/// it knows `secret`; a coordinator that does not answer `within` ([`ANSWER_WITHIN`] unless
/// the coordinators said how long they may be silent) is given up.
pub fn connect_within(
    addr: SocketAddr,
    secret: Option<&[u8]>,
    within: Duration,
) -> Result<(Sender, Receiver)> {
    let stream = TcpStream::connect_timeout(&addr, within)
        .with_context(|| format!("cannot reach the coordinator at {addr}"))?;
    // The challenge comes at once from a coordinator that runs (a stopped one's kernel
    // still accepts the connection): waited for so long only.
    stream.set_read_timeout(Some(within))?;
    let (to, mut from) = split(stream.try_clone().context("cloning a socket")?)?;
    let challenge = from.recv::<Challenge>().map_err(|e| {
        let kind = e.chain().find_map(|c| {
            c.downcast_ref::<std::io::Error>()
                .or_else(|| match c.downcast_ref::<FrameError>() {
                    Some(FrameError::Io(io)) => Some(io),
                    _ => None,
                })
                .map(std::io::Error::kind)
        });
        match kind {
            Some(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => anyhow::anyhow!(
                "the coordinator at {addr} did not answer within {within:?} (its process \
                 stopped?)"
            ),
            _ => e,
        }
    })?;
    stream.set_read_timeout(None)?;
    let Some(Challenge { nonce, version }) = challenge else {
        bail!("the coordinator at {addr} closed the connection at once");
    };
    if version != CONTROL_PROTOCOL {
        bail!(
            "{}",
            other_version(&format!("the coordinator at {addr}"), version)
        );
    }
    to.send(&Proof {
        proof: anduin_wire::auth::proof(secret, &nonce),
        version: CONTROL_PROTOCOL,
    })?;
    Ok((to, from))
}

/// Why a peer speaking control protocol `version` is refused.
fn other_version(peer: &str, version: u32) -> String {
    format!(
        "{peer} speaks control protocol {version}, this anduin speaks {CONTROL_PROTOCOL}: run \
         the same anduin version on every machine of the cluster"
    )
}

/// The accepting side of [`connect`]: challenges the peer, which must know `secret` and
/// speak this [`CONTROL_PROTOCOL`].
pub fn challenge(to: &Sender, from: &mut Receiver, secret: Option<&[u8]>) -> Result<Verdict> {
    let mut nonce = [0u8; anduin_wire::auth::NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|e| anyhow::anyhow!("cannot draw a challenge: {e}"))?;
    to.send(&Challenge {
        nonce: nonce.to_vec(),
        version: CONTROL_PROTOCOL,
    })?;
    // An unauthenticated peer's answer is a few bytes: nothing larger is read.
    from.set_limit(4 << 10);
    let Some(Proof { proof, version }) = from.recv::<Proof>()? else {
        return Ok(Verdict::Refuse("the peer closed the connection".into()));
    };
    from.set_limit(MESSAGE_LIMIT);
    if version != CONTROL_PROTOCOL {
        return Ok(Verdict::Refuse(other_version("the peer", version)));
    }
    if !anduin_wire::auth::verify(secret, &nonce, &proof) {
        return Ok(Verdict::Refuse(
            "the peer does not know the cluster's secret: give every process the same \
             --cluster-secret-file"
                .into(),
        ));
    }
    Ok(Verdict::Admit)
}

/// Both halves of `stream`.
pub fn split(stream: TcpStream) -> Result<(Sender, Receiver)> {
    let _ = stream.set_nodelay(true);
    let read = stream.try_clone().context("cloning a socket")?;
    Ok((Sender::new(stream), Receiver::new(read)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A listener on a loopback port and its address.
    fn listener() -> (TcpListener, SocketAddr) {
        let l = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = l.local_addr().expect("its address");
        (l, addr)
    }

    #[test]
    fn a_coordinator_that_accepts_but_never_answers_is_given_up() {
        // A stopped process's kernel accepts connections into the backlog; nothing answers.
        let (_l, addr) = listener();
        let Err(e) = connect_within(addr, None, Duration::from_millis(50)) else {
            panic!("nothing answers at {addr}")
        };
        assert!(e.to_string().contains("did not answer within"), "{e:#}");
    }

    #[test]
    fn an_answer_that_never_comes_is_given_up_and_the_connection_waits_again_after() {
        let (l, addr) = listener();
        let (_to, mut from) = split(TcpStream::connect(addr).expect("connects")).expect("halves");
        let (peer, _) = l.accept().expect("the peer");
        let e = from
            .recv_within::<Challenge>(Duration::from_millis(50))
            .expect_err("nothing was sent");
        assert!(format!("{e:#}").contains("no answer within"), "{e:#}");
        // The timeout is the call's only: a message sent after is read by a plain recv.
        let (to, _) = split(peer).expect("halves");
        to.send(&Challenge {
            nonce: vec![1],
            version: CONTROL_PROTOCOL,
        })
        .expect("sent");
        let c = from
            .recv::<Challenge>()
            .expect("a frame")
            .expect("a challenge");
        assert_eq!(c.nonce, vec![1]);
    }

    #[test]
    fn a_peer_of_another_control_protocol_is_refused_saying_both_versions() {
        let (l, addr) = listener();
        let coordinator = std::thread::spawn(move || {
            let (stream, _) = l.accept().expect("a peer");
            let (to, mut from) = split(stream).expect("halves");
            challenge(&to, &mut from, None).expect("the exchange")
        });
        // An older peer: its proof says no version.
        let (to, mut from) = split(TcpStream::connect(addr).expect("connects")).expect("halves");
        let c = from
            .recv::<Challenge>()
            .expect("a frame")
            .expect("a challenge");
        assert_eq!(c.version, CONTROL_PROTOCOL);
        let old = serde_json::json!({ "proof": anduin_wire::auth::proof(None, &c.nonce) });
        to.send(&old).expect("sent");
        let verdict = coordinator.join().expect("no panic");
        let Verdict::Refuse(why) = verdict else {
            panic!("an older peer was admitted")
        };
        assert!(
            why.contains("control protocol 0, this anduin speaks 2"),
            "{why}"
        );
    }

    #[test]
    fn a_coordinator_of_another_control_protocol_is_left_saying_both_versions() {
        let (l, addr) = listener();
        let coordinator = std::thread::spawn(move || {
            let (stream, _) = l.accept().expect("a peer");
            let (to, _from) = split(stream).expect("halves");
            let newer = serde_json::json!({ "nonce": [1, 2, 3], "version": 9 });
            to.send(&newer).expect("sent");
        });
        let e = connect_within(addr, None, ANSWER_WITHIN)
            .err()
            .expect("refused");
        coordinator.join().expect("no panic");
        let why = e.to_string();
        assert!(
            why.contains("speaks control protocol 9, this anduin speaks 2"),
            "{why}"
        );
    }

    #[test]
    fn a_refusal_as_superseded_reaches_the_coordinator_past_the_pings_left_unread() {
        let (l, addr) = listener();
        let (to, mut from) = split(TcpStream::connect(addr).expect("connects")).expect("halves");
        let (stream, _) = l.accept().expect("the peer");
        let (c_to, mut c_from) = split(stream).expect("halves");
        // The coordinator says its term and pings; the peer reads only the term.
        c_to.send(&ToExecutor::Leader { term: 3 }).expect("sent");
        for _ in 0..100 {
            c_to.send(&ToExecutor::Ping).expect("sent");
        }
        assert!(matches!(
            from.recv::<ToExecutor>(),
            Ok(Some(ToExecutor::Leader { term: 3 }))
        ));
        let peer = std::thread::spawn(move || {
            refuse_superseded(&to, &mut from, "this executor follows the leader of term 4");
        });
        let e = c_from
            .recv::<ToCoordinator>()
            .expect_err("the refusal, read as an error");
        let why = refused_as_superseded(&e).expect("a refusal as superseded");
        assert!(why.contains("term 4"), "{why}");
        // Any other refusal is not one.
        assert_eq!(
            refused_as_superseded(&anyhow::anyhow!("{REFUSED} the attempt is over")),
            None
        );
        // The coordinator steps down: its connection closes, and the peer is done.
        drop((c_to, c_from));
        peer.join().expect("no panic");
    }

    #[test]
    fn a_peer_with_the_secret_and_the_version_is_admitted() {
        let (l, addr) = listener();
        let coordinator = std::thread::spawn(move || {
            let (stream, _) = l.accept().expect("a peer");
            let (to, mut from) = split(stream).expect("halves");
            challenge(&to, &mut from, Some(b"s3cret")).expect("the exchange")
        });
        let _halves = connect_within(addr, Some(b"s3cret"), ANSWER_WITHIN).expect("connects");
        assert_eq!(coordinator.join().expect("no panic"), Verdict::Admit);
    }
}
