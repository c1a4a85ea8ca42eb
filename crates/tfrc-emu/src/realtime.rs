//! Wall-clock time for the network elements, and precise waits.
//!
//! The emulator's time origin ([`Clock`]) is its start: element time
//! `Instant::ZERO` is that moment, so loss windows (`start=30s`) and traces count from it.
//!
//! [`Waiter::wait`] sleeps in `ppoll` on the emulator's file descriptors until `spin_margin`
//! before the deadline (a packet arriving wakes it at once), then spins until the deadline: the
//! kernel's sleep is late by tens of microseconds, spinning is not.

use core::time::Duration;
use std::os::fd::RawFd;

use tfrc_proto::Instant;

/// The monotonic clock as element time: nanoseconds since an origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Clock::from_origin(std::time::Instant::now())
    }

    /// A clock with the given origin (element time zero).
    pub fn from_origin(origin: std::time::Instant) -> Self {
        Clock { origin }
    }

    /// Element time now.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Default time spun before a deadline instead of sleeping.
pub const DEFAULT_SPIN_MARGIN: Duration = Duration::from_micros(60);

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A file descriptor is readable.
    Readable,
    /// The deadline passed, or the wait ended without an event before it (waits are at most
    /// 50 ms, so the caller sees its stop flag): check what is due and wait again.
    Deadline,
}

/// Sleeps and spins until deadlines, watching several file descriptors.
#[derive(Debug, Clone)]
pub struct Waiter {
    clock: Clock,
    spin_margin: Duration,
    /// Upper bound of one sleep, so the caller can check its stop flag.
    max_sleep: Duration,
}

impl Waiter {
    /// A waiter on `clock`, spinning the last `spin_margin` before each deadline. Lowers the
    /// calling thread's timer slack.
    pub fn new(clock: Clock, spin_margin: Duration) -> Self {
        tfrc_udp::pacing::lower_timer_slack();
        Waiter {
            clock,
            spin_margin,
            max_sleep: Duration::from_millis(50),
        }
    }

    /// The clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Waits until `deadline` or until one of `fds` is readable, whichever is first; without a
    /// deadline, waits at most 50 ms (so stop flags are seen).
    pub fn wait(&self, fds: &[RawFd], deadline: Option<Instant>) -> Wake {
        let now = self.clock.now();
        let remaining = match deadline {
            Some(deadline) if deadline <= now => return Wake::Deadline,
            Some(deadline) => deadline - now,
            None => self.max_sleep,
        };
        if remaining > self.spin_margin || deadline.is_none() {
            let sleep = remaining
                .saturating_sub(if deadline.is_some() {
                    self.spin_margin
                } else {
                    Duration::ZERO
                })
                .min(self.max_sleep);
            if poll(fds, sleep) {
                return Wake::Readable;
            }
        }
        if let Some(deadline) = deadline {
            // A sleep capped at `max_sleep` may end far before the deadline: spin only through
            // the last `spin_margin`, and otherwise let the caller check its stop flag and wait
            // again (spinning from here would burn a core for the rest of a long idle wait).
            if deadline.saturating_duration_since(self.clock.now()) > self.spin_margin {
                return Wake::Deadline;
            }
            if self.clock.now() < deadline {
                // Spin, still noticing arrivals: a packet read late would be timestamped late.
                while self.clock.now() < deadline {
                    if poll(fds, Duration::ZERO) {
                        return Wake::Readable;
                    }
                    std::hint::spin_loop();
                }
            }
            return Wake::Deadline;
        }
        Wake::Deadline
    }
}

/// `ppoll` on `fds` for readability, at most `timeout`; true when one is readable.
pub fn poll(fds: &[RawFd], timeout: Duration) -> bool {
    const EMPTY: libc::pollfd = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    // On the stack for the usual few descriptors: this runs in the spin loop.
    let mut on_stack = [EMPTY; 16];
    let mut on_heap = Vec::new();
    let poll_fds: &mut [libc::pollfd] = if fds.len() <= on_stack.len() {
        &mut on_stack[..fds.len()]
    } else {
        on_heap.resize(fds.len(), EMPTY);
        &mut on_heap
    };
    for (poll_fd, &fd) in poll_fds.iter_mut().zip(fds) {
        poll_fd.fd = fd;
        poll_fd.events = libc::POLLIN;
    }
    ppoll(poll_fds, timeout) > 0 && poll_fds.iter().any(|poll_fd| poll_fd.revents != 0)
}

/// `ppoll(2)` on `poll_fds` for at most `timeout`, keeping the thread's signal mask: the
/// number of entries with events, 0 on timeout, -1 on error (EINTR included).
#[allow(unsafe_code)]
fn ppoll(poll_fds: &mut [libc::pollfd], timeout: Duration) -> libc::c_int {
    let timespec = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `poll_fds` is a valid, exclusively borrowed array of `len` pollfd structures
    // (the kernel writes their `revents`), the timespec is valid for the call, and a null
    // signal mask keeps the thread's mask. A descriptor that is closed or negative only
    // yields POLLNVAL or is ignored.
    unsafe {
        libc::ppoll(
            poll_fds.as_mut_ptr(),
            poll_fds.len() as libc::nfds_t,
            &timespec,
            core::ptr::null(),
        )
    }
}

/// Nanoseconds since the Unix epoch, now (the time stamps of real captures).
pub fn unix_nanos_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// Converts the kernel's receive time stamps (`SO_TIMESTAMPNS`: the real-time clock) into a
/// [`Clock`]'s time, from one reading of both clocks: a datagram enters the emulated link when
/// the kernel received it, not when the relay's thread got to read it (on a busy machine,
/// milliseconds later), as netem stamps a packet on enqueue.
#[derive(Debug, Clone, Copy)]
pub struct KernelStamps {
    unix_now: u128,
    now: Instant,
}

impl KernelStamps {
    /// Reads the real-time clock, then `clock`. In this order, a pause between the two
    /// readings makes every converted time later than the true one, never earlier: a packet
    /// must never leave the link early.
    pub fn read(clock: &Clock) -> KernelStamps {
        let unix_now = unix_nanos_now();
        KernelStamps {
            unix_now,
            now: clock.now(),
        }
    }

    /// `clock`'s time when the kernel stamped a datagram `stamp` (since the Unix epoch); the
    /// reading's time when the kernel gave no stamp.
    pub fn arrival(&self, stamp: Option<Duration>) -> Instant {
        stamp.map_or(self.now, |stamp| {
            let waited = self.unix_now.saturating_sub(stamp.as_nanos());
            self.now.saturating_sub(Duration::from_nanos(
                u64::try_from(waited).unwrap_or(u64::MAX),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A far deadline is waited for in bounded sleeps, never by spinning towards it: `wait`
    /// comes back before the deadline (after one sleep of at most 50 ms), so an idle relay
    /// uses no CPU and sees its stop flag.
    #[test]
    fn a_far_deadline_is_not_spun_towards() {
        let clock = Clock::new();
        let waiter = Waiter::new(clock, Duration::from_millis(2));
        let deadline = clock.now() + Duration::from_secs(10);
        assert_eq!(waiter.wait(&[], Some(deadline)), Wake::Deadline);
        assert!(clock.now() < deadline, "waited until the deadline");
        // A near deadline is met, not returned early.
        let near = clock.now() + Duration::from_millis(5);
        while waiter.wait(&[], Some(near)) != Wake::Deadline || clock.now() < near {}
        assert!(clock.now() >= near);
    }

    /// A stamp taken before the reading is converted to that much before the reading's clock
    /// time; no stamp is the reading's time; a stamp from the future (clock steps) is not
    /// later than the reading.
    #[test]
    fn kernel_stamps_convert_to_the_clock() {
        // A clock started a second ago, so that "300 µs before now" is a time it has.
        let clock = Clock::from_origin(std::time::Instant::now() - Duration::from_secs(1));
        let stamps = KernelStamps::read(&clock);
        let unix_now = Duration::from_nanos(stamps.unix_now as u64);
        assert_eq!(stamps.arrival(None), stamps.now);
        let earlier = stamps.arrival(Some(unix_now - Duration::from_micros(300)));
        assert_eq!(stamps.now - earlier, Duration::from_micros(300));
        let future = stamps.arrival(Some(unix_now + Duration::from_secs(1)));
        assert_eq!(future, stamps.now);
        assert!(stamps.now <= clock.now());
    }
}
