//! A leader's lease, kept: renewed by a thread of its own every third of its time to live,
//! and watched by another that ends the process — the leader steps down — once the lease
//! cannot have been renewed in time. The lock service (etcd, Redlock) only says how to renew
//! and how to let go.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a coordinator that stepped down exits: it lost its lease (start it again: it stands
/// by).
pub const STEPPED_DOWN: i32 = 75;

/// When a leader whose last renewal was sent at `sent`, for a lease of `ttl`, must have
/// stepped down: before the lock service (which heard it later) can let the lease expire,
/// less a tenth of the lease (at least 200 ms) for the clocks' drift and the exit itself.
pub fn step_down_at(sent: Instant, ttl: Duration) -> Instant {
    let margin = (ttl / 10).max(Duration::from_millis(200));
    sent + ttl.saturating_sub(margin)
}

/// What one renewal came to.
pub enum Renewal {
    /// Renewed for this long, counted from when the renewal was sent.
    For(Duration),
    /// The lock service says the lease is gone (why).
    Lost(String),
}

/// How a lease is let go, once.
type Release = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Testing (`anduin coordinator --inject-no-step-down`): neither the lease's clock nor a
/// lost lease makes this leader step down, so that one paused past its lease acts on when it
/// runs again, until a fence where its acts land stops it (the catalog in the object store,
/// the check before a checkpoint commit).
static NO_STEP_DOWN: AtomicBool = AtomicBool::new(false);

/// Sets [`NO_STEP_DOWN`] (tests of the fences only).
pub fn never_step_down_for_tests() {
    NO_STEP_DOWN.store(true, Ordering::Relaxed);
}

/// Until when this process's lease surely holds (none kept: `None`), for [`act_or_step_down`].
static HOLDS_UNTIL: Mutex<Option<(Instant, String)>> = Mutex::new(None);

/// Before an act that must be the leader's alone (a catalog edit): steps down at once if
/// the lease kept may have run out (the process was paused past it — its clock ran on —
/// and has not noticed yet), rather than act. A process that keeps no lease acts.
pub fn act_or_step_down() {
    if NO_STEP_DOWN.load(Ordering::Relaxed) {
        return;
    }
    let holds = HOLDS_UNTIL
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some((until, election)) = holds {
        if Instant::now() >= until {
            step_down(&election, "its lease may have run out before this act");
        }
    }
}

/// The leases this process keeps, for [`let_go`] at a clean stop.
static KEPT: Mutex<Vec<Release>> = Mutex::new(Vec::new());

/// Lets go of every lease this process keeps (a coordinator stopping on SIGTERM: its standby
/// need not wait for the lease to expire).
pub fn let_go() {
    let kept = std::mem::take(&mut *KEPT.lock().unwrap_or_else(|p| p.into_inner()));
    for release in kept {
        if let Some(f) = release.lock().unwrap_or_else(|p| p.into_inner()).take() {
            f();
        }
    }
}

/// A kept lease; let go (`release` called) when dropped.
pub struct Lease {
    released: Arc<AtomicBool>,
    release: Release,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("released", &self.released)
            .finish_non_exhaustive()
    }
}

impl Lease {
    /// Keeps a lease of `election` granted for `ttl` by a request sent at `sent`: `renew`
    /// every third of it (an error is tried again), the process ended once the lease may
    /// have expired unrenewed; `release` lets it go.
    pub fn keep(
        election: String,
        sent: Instant,
        ttl: Duration,
        mut renew: impl FnMut() -> anyhow::Result<Renewal> + Send + 'static,
        release: impl FnOnce() + Send + 'static,
    ) -> Self {
        let released = Arc::new(AtomicBool::new(false));
        let until = Arc::new(Mutex::new(step_down_at(sent, ttl)));
        *HOLDS_UNTIL.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((step_down_at(sent, ttl), election.clone()));
        {
            let (released, until) = (Arc::clone(&released), Arc::clone(&until));
            let renewed = election.clone();
            let every = ttl / 3;
            let spawned = std::thread::Builder::new()
                .name("anduin-lease".into())
                .spawn(move || {
                    let mut failing = false;
                    while !released.load(Ordering::Relaxed) {
                        let sent = Instant::now();
                        match renew() {
                            Ok(Renewal::For(ttl)) => {
                                failing = false;
                                let at = step_down_at(sent, ttl);
                                *until.lock().unwrap_or_else(|p| p.into_inner()) = at;
                                if let Some((holds, _)) =
                                    HOLDS_UNTIL.lock().unwrap_or_else(|p| p.into_inner()).as_mut()
                                {
                                    *holds = at;
                                }
                            }
                            // Let go of meanwhile: nothing to step down from.
                            Ok(Renewal::Lost(_)) if released.load(Ordering::Relaxed) => return,
                            Ok(Renewal::Lost(why)) if NO_STEP_DOWN.load(Ordering::Relaxed) => {
                                eprintln!("anduin: coordinator lost its lease ({why}) and acts on, as --inject-no-step-down asked");
                                return;
                            }
                            Ok(Renewal::Lost(why)) => step_down(&renewed, &why),
                            Err(e) => {
                                if !failing {
                                    eprintln!("anduin: coordinator cannot renew its lease ({e:#}); trying on");
                                }
                                failing = true;
                            }
                        }
                        std::thread::sleep(every.saturating_sub(sent.elapsed()));
                    }
                });
            if let Err(e) = spawned {
                step_down(
                    &election,
                    &format!("cannot start the thread that renews its lease ({e})"),
                );
            }
        }
        {
            let (released, watched) = (Arc::clone(&released), election.clone());
            let spawned = std::thread::Builder::new()
                .name("anduin-lease-watch".into())
                .spawn(move || {
                    while !released.load(Ordering::Relaxed) {
                        let deadline = *until.lock().unwrap_or_else(|p| p.into_inner());
                        let now = Instant::now();
                        if now >= deadline && !NO_STEP_DOWN.load(Ordering::Relaxed) {
                            step_down(&watched, "it could not renew its lease in time");
                        }
                        // Short steps: a process paused past its lease and let run again
                        // ends within 10 ms, before it can do much.
                        std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
                    }
                });
            if let Err(e) = spawned {
                step_down(
                    &election,
                    &format!("cannot start the thread that watches its lease ({e})"),
                );
            }
        }
        let stop = Arc::clone(&released);
        let release: Release = Arc::new(Mutex::new(Some(Box::new(move || {
            // Not renewed again (a renewal would find it gone, and step down).
            stop.store(true, Ordering::Relaxed);
            release();
        }))));
        KEPT.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::clone(&release));
        Self { released, release }
    }
}

/// Ends the process of a leader that may have lost its lease of `election`, saying `why`.
/// Steps down because a later leader took the catalog over (`why`, the catalog's refusal):
/// the fence where the catalog is kept, whatever the lease seemed to say.
pub fn superseded(why: &dyn std::fmt::Display) -> ! {
    eprintln!("anduin: coordinator stepping down: {why}");
    std::process::exit(STEPPED_DOWN)
}

fn step_down(election: &str, why: &str) -> ! {
    eprintln!(
        "anduin: coordinator stepping down: {why}; its lease of {election} may expire before \
         it could renew it, and another coordinator may lead"
    );
    std::process::exit(STEPPED_DOWN)
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.released.store(true, Ordering::Relaxed);
        let release = self
            .release
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(release) = release {
            release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_steps_down_inside_its_lease_however_short() {
        let t = Instant::now();
        assert_eq!(
            step_down_at(t, Duration::from_secs(10)),
            t + Duration::from_secs(9)
        );
        assert_eq!(
            step_down_at(t, Duration::from_secs(2)),
            t + Duration::from_millis(1800)
        );
        assert_eq!(step_down_at(t, Duration::ZERO), t);
    }
}
