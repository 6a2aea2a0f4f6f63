//! Where every worker's channels are reached. A worker's address changes when its instances
//! are restored in another process: the producers waiting for it learn the new one, and a
//! producer still connected to the old one (its process was only paused or cut off, so the
//! connection never broke) has that connection cut, so that it reconnects to the restored
//! instances instead of waiting forever for a consumer that will never take its messages.

use std::collections::{BTreeMap, HashMap};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::topology::WorkerId;

/// How long a channel or a handoff waits for the address of a worker not known yet
/// ([`Peers::reach`]).
pub(super) const UNKNOWN_FOR: Duration = Duration::from_secs(30);

/// The workers' addresses, and the connections to each.
#[derive(Debug, Default)]
pub struct Peers {
    /// Each worker's address, with the number of times it changed.
    at: Mutex<BTreeMap<WorkerId, (SocketAddr, u64)>>,
    changed: Condvar,
    /// The connections open to each worker, by a number of their own: to which worker, at
    /// which of its addresses.
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    streams: HashMap<u64, (WorkerId, u64, TcpStream)>,
}

impl Peers {
    /// The workers' first addresses.
    pub fn new(addresses: impl IntoIterator<Item = (u32, SocketAddr)>) -> Arc<Self> {
        Arc::new(Self {
            at: Mutex::new(
                addresses
                    .into_iter()
                    .map(|(w, a)| (WorkerId(w), (a, 0)))
                    .collect(),
            ),
            changed: Condvar::new(),
            open: Mutex::default(),
        })
    }

    /// Worker `worker`'s instances now run at `addr`: the connections to its older addresses
    /// are cut. The address it has already changes nothing (a coordinator that takes over
    /// tells every executor again where restored parts run).
    pub fn redirect(&self, worker: u32, addr: SocketAddr) {
        let worker = WorkerId(worker);
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        if at.get(&worker).is_some_and(|(known, _)| *known == addr) {
            return;
        }
        let entry = at.entry(worker).or_insert((addr, 0));
        *entry = (addr, entry.1 + 1);
        let now = entry.1;
        // Under the lock of `at`, so that a connection watched after this sees the change.
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        for (w, generation, stream) in open.streams.values() {
            if *w == worker && *generation < now {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        drop(open);
        drop(at);
        self.changed.notify_all();
    }

    #[cfg(test)]
    pub(super) fn get(&self, worker: WorkerId) -> Option<(SocketAddr, u64)> {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&worker)
            .copied()
    }

    /// Worker `worker`'s address, waiting up to [`UNKNOWN_FOR`] for one not known yet: a
    /// worker that ran nothing of the query when the run started, where a rescale places
    /// instances (the coordinator tells every process its address before it sends the
    /// rescale's barrier, but not through the channels the barrier travels on).
    pub(super) fn reach(&self, worker: WorkerId) -> Option<(SocketAddr, u64)> {
        let at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        let (at, _) = self
            .changed
            .wait_timeout_while(at, UNKNOWN_FOR, |at| !at.contains_key(&worker))
            .unwrap_or_else(|p| p.into_inner());
        at.get(&worker).copied()
    }

    /// Worker `worker`'s address once it is no longer the `seen`th (waiting up to `wait`).
    pub(super) fn changed(
        &self,
        worker: WorkerId,
        seen: u64,
        wait: Duration,
    ) -> Option<(SocketAddr, u64)> {
        let at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        let (at, _) = self
            .changed
            .wait_timeout_while(at, wait, |at| {
                at.get(&worker).is_none_or(|(_, g)| *g == seen)
            })
            .unwrap_or_else(|p| p.into_inner());
        at.get(&worker).copied().filter(|(_, g)| *g != seen)
    }

    /// Watches `stream`, a connection to `worker` at its `generation`th address, until the
    /// guard is dropped: it is cut when the worker's instances move (at once, if they have
    /// moved already).
    pub(super) fn watch(
        self: &Arc<Self>,
        worker: WorkerId,
        generation: u64,
        stream: &TcpStream,
    ) -> Watched {
        let at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        let moved = at.get(&worker).is_some_and(|(_, g)| *g != generation);
        let Ok(clone) = stream.try_clone() else {
            return Watched {
                peers: Arc::clone(self),
                id: None,
            };
        };
        if moved {
            let _ = clone.shutdown(Shutdown::Both);
        }
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let id = open.next;
        open.next += 1;
        open.streams.insert(id, (worker, generation, clone));
        drop(open);
        drop(at);
        Watched {
            peers: Arc::clone(self),
            id: Some(id),
        }
    }
}

/// A connection [`Peers`] watches, until dropped.
pub(super) struct Watched {
    peers: Arc<Peers>,
    id: Option<u64>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.peers
                .open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .streams
                .remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_connection_to_a_worker_whose_instances_moved_is_cut_and_others_are_not() {
        let old = TcpListener::bind("127.0.0.1:0").expect("binds");
        let other = TcpListener::bind("127.0.0.1:0").expect("binds");
        let peers = Peers::new([
            (1, old.local_addr().expect("addr")),
            (2, other.local_addr().expect("addr")),
        ]);
        let to_old = TcpStream::connect(old.local_addr().expect("addr")).expect("connects");
        let to_other = TcpStream::connect(other.local_addr().expect("addr")).expect("connects");
        let _a = peers.watch(WorkerId(1), 0, &to_old);
        let _b = peers.watch(WorkerId(2), 0, &to_other);
        peers.redirect(1, other.local_addr().expect("addr"));
        let mut buf = [0u8; 1];
        assert_eq!((&to_old).read(&mut buf).expect("a cut reads its end"), 0);
        to_other.set_nonblocking(true).expect("non-blocking");
        let still_open = (&to_other).read(&mut buf);
        assert!(
            matches!(&still_open, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{still_open:?}"
        );
        // A connection watched after the move, to the old address, is cut at once.
        let late = TcpStream::connect(old.local_addr().expect("addr")).expect("connects");
        let _c = peers.watch(WorkerId(1), 0, &late);
        assert_eq!((&late).read(&mut buf).expect("a cut reads its end"), 0);
    }

    #[test]
    fn a_redirect_to_the_address_a_worker_has_already_cuts_nothing() {
        let at = TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = at.local_addr().expect("addr");
        let peers = Peers::new([(1, addr)]);
        let to = TcpStream::connect(addr).expect("connects");
        let _a = peers.watch(WorkerId(1), 0, &to);
        peers.redirect(1, addr);
        let mut buf = [0u8; 1];
        to.set_nonblocking(true).expect("non-blocking");
        let still_open = (&to).read(&mut buf);
        assert!(
            matches!(&still_open, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{still_open:?}"
        );
        assert_eq!(peers.get(WorkerId(1)), Some((addr, 0)));
    }
}
