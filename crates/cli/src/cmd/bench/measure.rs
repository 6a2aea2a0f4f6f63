//! What a benchmark run measures (wall time and the process's CPU time), the median of
//! several runs, and the figures nexmark reports from them.

use std::time::{Duration, Instant};

/// The CPU time (user + system) this process has used so far, over all its threads,
/// including the threads that have ended (`getrusage(RUSAGE_SELF)`).
pub fn cpu_time() -> std::io::Result<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the size of a `rusage`, which
    // `getrusage` fills in when it returns 0.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `getrusage` succeeded, so it initialised `usage` (and zeroed memory is a valid
    // `rusage` anyway: it holds only integers).
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Ok(time(usage.ru_utime) + time(usage.ru_stime))
}

/// The wall time and CPU time of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Seconds of wall-clock time.
    pub wall: f64,
    /// Seconds of CPU time (user + system) of the whole process.
    pub cpu: f64,
}

impl Measurement {
    /// Runs `f`, measuring its wall time and the CPU time the process spends meanwhile.
    pub fn of<T>(f: impl FnOnce() -> T) -> std::io::Result<(T, Measurement)> {
        let cpu_before = cpu_time()?;
        let started = Instant::now();
        let out = f();
        let wall = started.elapsed();
        let cpu = cpu_time()?.saturating_sub(cpu_before);
        Ok((
            out,
            Measurement {
                wall: wall.as_secs_f64(),
                cpu: cpu.as_secs_f64(),
            },
        ))
    }

    /// The median wall time and the median CPU time of `runs` (each taken separately; with
    /// an even number of runs, the mean of the middle two), or `None` if there are none.
    pub fn median(runs: &[Measurement]) -> Option<Measurement> {
        Some(Measurement {
            wall: median(runs.iter().map(|m| m.wall).collect())?,
            cpu: median(runs.iter().map(|m| m.cpu).collect())?,
        })
    }

    /// How many cores were busy on average: CPU time over wall time.
    pub fn cores(&self) -> f64 {
        if self.wall > 0.0 {
            self.cpu / self.wall
        } else {
            0.0
        }
    }

    /// Throughput per core as nexmark computes it: `events / (cores × wall)`, which is
    /// `events / cpu`.
    pub fn events_per_core_second(&self, events: u64) -> f64 {
        if self.cpu > 0.0 {
            events as f64 / self.cpu
        } else {
            0.0
        }
    }

    /// The result line: `q5: 10000000 events in 4.21 s, 1.97 cores, 1205000 events/s/core`.
    pub fn result_line(&self, query: &str, events: u64) -> String {
        format!(
            "{query}: {events} events in {:.2} s, {:.2} cores, {:.0} events/s/core",
            self.wall,
            self.cores(),
            self.events_per_core_second(events)
        )
    }
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => xs.get(n / 2).copied(),
        _ => Some((xs.get(n / 2 - 1)? + xs.get(n / 2)?) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(wall: f64, cpu: f64) -> Measurement {
        Measurement { wall, cpu }
    }

    #[test]
    fn the_result_line_gives_wall_and_cores_to_two_decimals_and_events_per_core_second_as_an_integer(
    ) {
        let line = m(4.214, 8.3).result_line("q5", 10_000_000);
        assert_eq!(
            line,
            "q5: 10000000 events in 4.21 s, 1.97 cores, 1204819 events/s/core"
        );
    }

    #[test]
    fn events_per_core_second_is_events_over_cores_times_wall() {
        let x = m(2.0, 3.0);
        let by_cores = 6_000_000.0 / (x.cores() * x.wall);
        assert!((x.events_per_core_second(6_000_000) - by_cores).abs() < 1e-6);
    }

    #[test]
    fn the_median_takes_wall_and_cpu_separately_and_averages_the_middle_two() {
        assert_eq!(Measurement::median(&[]), None);
        assert_eq!(
            Measurement::median(&[m(3.0, 1.0), m(1.0, 5.0), m(2.0, 3.0)]),
            Some(m(2.0, 3.0))
        );
        assert_eq!(
            Measurement::median(&[m(4.0, 1.0), m(1.0, 2.0), m(2.0, 8.0), m(3.0, 4.0)]),
            Some(m(2.5, 3.0))
        );
    }

    #[test]
    fn a_run_without_measurable_time_reports_zeros_rather_than_infinities() {
        assert_eq!(m(0.0, 0.0).cores(), 0.0);
        assert_eq!(m(0.0, 0.0).events_per_core_second(10), 0.0);
    }

    #[test]
    fn cpu_time_grows_with_the_work_of_a_thread_that_has_ended() {
        let before = cpu_time().expect("getrusage");
        std::thread::spawn(|| {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
        })
        .join()
        .expect("the thread ends");
        let spent = cpu_time().expect("getrusage").saturating_sub(before);
        assert!(spent > Duration::ZERO, "{spent:?}");
    }
}
