//! The driver's clocks: the monotonic clock mapped to the core's [`tfrc_proto::Instant`], and wall
//! time for log rows.

use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use tfrc_proto::Instant;

/// The monotonic clock of one process, as nanoseconds since the clock was created.
///
/// Every flow of a process shares one clock so that their timestamps compare; the core only ever
/// sees this integer time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Clock {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// The current time as the core's [`Instant`].
    pub fn now(&self) -> Instant {
        let nanos = self.origin.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The `std` instant matching a core instant (for socket timeouts).
    pub fn to_std(&self, instant: Instant) -> std::time::Instant {
        self.origin + Duration::from_nanos(instant.as_nanos())
    }
}

/// Seconds since the Unix epoch, as a float (for log rows and JSON only).
pub fn unix_time_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// Whole seconds since the Unix epoch (for file names).
pub fn unix_time_whole_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// CPU time this process has used so far: (user, system).
pub fn process_cpu_time() -> (Duration, Duration) {
    let Some(usage) = rusage_self() else {
        return (Duration::ZERO, Duration::ZERO);
    };
    let convert = |time: libc::timeval| {
        Duration::from_secs(time.tv_sec.max(0) as u64)
            + Duration::from_micros(time.tv_usec.max(0) as u64)
    };
    (convert(usage.ru_utime), convert(usage.ru_stime))
}

/// `getrusage(RUSAGE_SELF)`; std has no safe way to read a process's CPU time.
#[allow(unsafe_code)]
fn rusage_self() -> Option<libc::rusage> {
    // SAFETY: `rusage` is a plain C struct of integers (and padding), for which all-zero bytes
    // are a valid value.
    let mut usage: libc::rusage = unsafe { core::mem::zeroed() };
    // SAFETY: RUSAGE_SELF is always valid, and `usage` is a live, exclusively borrowed `rusage`
    // the kernel fills.
    let result = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (result == 0).then_some(usage)
}

/// CPU use of this process over a wall-clock span, in percent of one core, in the shape of
/// iperf3's `cpu_utilization_percent` (`host_total`, `host_user`, `host_system`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CpuUtilization {
    /// User plus system time over wall time, percent of one core.
    pub host_total: f64,
    /// User time over wall time, percent.
    pub host_user: f64,
    /// System time over wall time, percent.
    pub host_system: f64,
}

/// Measures CPU use from a starting point.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    wall: std::time::Instant,
    user: Duration,
    system: Duration,
}

impl Default for CpuMeter {
    fn default() -> Self {
        CpuMeter::start()
    }
}

impl CpuMeter {
    /// Starts measuring now.
    pub fn start() -> CpuMeter {
        let (user, system) = process_cpu_time();
        CpuMeter {
            wall: std::time::Instant::now(),
            user,
            system,
        }
    }

    /// CPU use since [`CpuMeter::start`].
    pub fn utilization(&self) -> CpuUtilization {
        let (user, system) = process_cpu_time();
        let wall = self.wall.elapsed().as_secs_f64().max(1e-9);
        let user = user.saturating_sub(self.user).as_secs_f64() / wall * 100.0;
        let system = system.saturating_sub(self.system).as_secs_f64() / wall * 100.0;
        CpuUtilization {
            host_total: user + system,
            host_user: user,
            host_system: system,
        }
    }
}
