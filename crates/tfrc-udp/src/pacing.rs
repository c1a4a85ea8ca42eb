//! Precise waiting for the send schedule: sleep in the kernel until shortly before the deadline,
//! then spin (yielding while far) until it; and a histogram of the error between the scheduled
//! and the actual send times.
//!
//! # Why sleep-then-spin
//! A kernel sleep (`ppoll` with the timer slack lowered to 1 ns) wakes tens of microseconds late,
//! more on a loaded machine; at 100 Mbit/s with 1000-byte packets the interval between packets is
//! 80 µs, so sleeping alone would distort the schedule. The waiter sleeps until `spin_margin`
//! before the deadline (the sleep's measured lateness, with a safety margin) and spins the rest,
//! which costs CPU but reaches microsecond accuracy. The spin does not yield: on a busy core a
//! `sched_yield` hands the CPU to another task for a whole time slice. While sleeping it also watches the socket, so
//! feedback is handled as soon as it arrives.
//!
//! [`Waiter::calibrate`] measures both the sleep's lateness (to choose the spin margin) and the
//! error of whole waits (the timer granularity the driver actually reaches, given to the core as
//! `Config::timer_granularity`, RFC 5348 §4.6).

use core::time::Duration;
use std::os::fd::RawFd;

use tfrc_proto::Instant;

use crate::clock::Clock;
pub use tfrc_output::Histogram;

/// Smallest spin margin: below this the sleep would often overshoot.
const MIN_SPIN_MARGIN: Duration = Duration::from_micros(30);
/// Largest spin margin: beyond this spinning wastes too much CPU; late wake-ups are then accepted.
const MAX_SPIN_MARGIN: Duration = Duration::from_millis(2);
/// While spinning, look at the socket at most this often.
const SOCKET_CHECK_PERIOD: Duration = Duration::from_micros(10);

/// Why [`Waiter::wait_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The deadline has come.
    Deadline,
    /// The watched socket has a datagram to read.
    Readable,
    /// A signal interrupted the sleep (check the stop flag).
    Interrupted,
}

/// What [`Waiter::calibrate`] measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TimerCalibration {
    /// Median lateness of a bare kernel sleep, microseconds.
    pub sleep_late_p50_us: f64,
    /// 90th percentile lateness of a bare kernel sleep, microseconds.
    pub sleep_late_p90_us: f64,
    /// How long before a deadline the waiter stops sleeping and spins, microseconds.
    pub spin_margin_us: f64,
    /// 99th percentile error of a sleep-then-spin wait, microseconds: the timer granularity
    /// reached, given to the core as `Config::timer_granularity`.
    pub granularity_us: f64,
}

/// Sleeps and spins until deadlines on one thread.
#[derive(Debug, Clone)]
pub struct Waiter {
    clock: Clock,
    spin_margin: Duration,
}

/// Lowers the calling thread's timer slack to 1 ns so that kernel sleeps end when asked (the
/// default slack of 50 µs would add to every wake-up). Harmless if it fails.
#[allow(unsafe_code)] // prctl: no safe wrapper in std or socket2
pub fn lower_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes its value (an unsigned long) by value, touches no memory
    // of ours, and affects only the calling thread; the unused arguments are zero.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Puts the calling thread in the real-time `SCHED_FIFO` class at `priority` (1–99).
///
/// On a busy machine a thread woken from its sleep may wait a whole time slice (milliseconds)
/// for a CPU, which shows as a long tail of pacing errors; a real-time thread runs as soon as it
/// wakes. Needs root or `CAP_SYS_NICE`. The kernel's real-time throttling still leaves 5 % of each
/// second to other tasks.
#[allow(unsafe_code)] // sched_setscheduler: no safe wrapper in std
pub fn set_realtime_priority(priority: i32) -> std::io::Result<()> {
    let parameters = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `parameters` is a valid `sched_param` that the kernel
    // only reads, for the duration of the call.
    let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &parameters) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Waits up to `timeout` for `fd` (if any) to become readable. `None` waits forever.
pub fn poll_readable(fd: Option<RawFd>, timeout: Option<Duration>) -> WaitOutcome {
    let mut poll_fd = libc::pollfd {
        fd: fd.unwrap_or(-1),
        events: libc::POLLIN,
        revents: 0,
    };
    let timespec = timeout.map(|timeout| libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    });
    let result = ppoll_one(&mut poll_fd, timespec.as_ref());
    if result < 0 {
        WaitOutcome::Interrupted
    } else if result > 0 && poll_fd.revents != 0 {
        WaitOutcome::Readable
    } else {
        WaitOutcome::Deadline
    }
}

/// `ppoll` on one descriptor with the thread's signal mask; `None` waits forever. std has no
/// poll, and `ppoll` (unlike `poll`) takes a nanosecond timeout.
#[allow(unsafe_code)]
fn ppoll_one(poll_fd: &mut libc::pollfd, timeout: Option<&libc::timespec>) -> libc::c_int {
    let timeout = timeout.map_or(core::ptr::null(), |value| value as *const libc::timespec);
    // SAFETY: `poll_fd` points to one valid, exclusively borrowed `pollfd` (count 1; the kernel
    // ignores a negative fd and writes only `revents`); `timeout` is null or points to a live
    // `timespec` the kernel only reads; the signal mask is null (the thread's mask is kept).
    unsafe { libc::ppoll(poll_fd, 1, timeout, core::ptr::null()) }
}

impl Waiter {
    /// A waiter with a given spin margin (see [`Waiter::calibrate`] for a measured one).
    pub fn new(clock: Clock, spin_margin: Duration) -> Waiter {
        lower_timer_slack();
        Waiter {
            clock,
            spin_margin: spin_margin.clamp(MIN_SPIN_MARGIN, MAX_SPIN_MARGIN),
        }
    }

    /// Measures this machine's sleep lateness and the error of sleep-then-spin waits (about 5 ms),
    /// and returns a waiter using the measured spin margin.
    pub fn calibrate(clock: Clock) -> (Waiter, TimerCalibration) {
        lower_timer_slack();
        let mut late = Vec::new();
        for _ in 0..24 {
            let start = std::time::Instant::now();
            let asked = Duration::from_micros(100);
            poll_readable(None, Some(asked));
            late.push(start.elapsed().saturating_sub(asked));
        }
        late.sort();
        let percentile = |values: &[Duration], fraction: f64| {
            values[((values.len() - 1) as f64 * fraction).round() as usize]
        };
        let sleep_p50 = percentile(&late, 0.5);
        let sleep_p90 = percentile(&late, 0.9);
        let waiter = Waiter::new(clock, sleep_p90 + sleep_p90 / 2 + Duration::from_micros(10));
        let mut errors = Vec::new();
        for _ in 0..24 {
            let deadline = clock.now() + Duration::from_micros(150);
            waiter.wait_until(deadline, None);
            errors.push(clock.now() - deadline);
        }
        errors.sort();
        let granularity = percentile(&errors, 0.99).max(Duration::from_micros(1));
        let calibration = TimerCalibration {
            sleep_late_p50_us: sleep_p50.as_secs_f64() * 1e6,
            sleep_late_p90_us: sleep_p90.as_secs_f64() * 1e6,
            spin_margin_us: waiter.spin_margin.as_secs_f64() * 1e6,
            granularity_us: granularity.as_secs_f64() * 1e6,
        };
        (waiter, calibration)
    }

    /// The margin before a deadline at which sleeping stops and spinning starts.
    pub fn spin_margin(&self) -> Duration {
        self.spin_margin
    }

    /// Waits until `deadline`, returning early when `socket` becomes readable or a signal
    /// arrives. Never returns [`WaitOutcome::Deadline`] before the deadline.
    pub fn wait_until(&self, deadline: Instant, socket: Option<RawFd>) -> WaitOutcome {
        self.wait(deadline, socket, self.spin_margin)
    }

    /// [`Waiter::wait_until`] without spinning: sleeps in the kernel up to the deadline. For a
    /// thread the operating system is already waking milliseconds late (a busy machine), where
    /// spinning no longer buys accuracy and only takes CPU time from the other tasks, and from
    /// this thread's own next turn.
    pub fn sleep_until(&self, deadline: Instant, socket: Option<RawFd>) -> WaitOutcome {
        self.wait(deadline, socket, Duration::ZERO)
    }

    fn wait(&self, deadline: Instant, socket: Option<RawFd>, spin_margin: Duration) -> WaitOutcome {
        let mut last_socket_check = self.clock.now();
        loop {
            let now = self.clock.now();
            if now >= deadline {
                return WaitOutcome::Deadline;
            }
            let remaining = deadline - now;
            if remaining > spin_margin {
                match poll_readable(socket, Some(remaining - spin_margin)) {
                    WaitOutcome::Deadline => continue,
                    other => return other,
                }
            }
            // Spin phase.
            if socket.is_some() && now - last_socket_check >= SOCKET_CHECK_PERIOD {
                last_socket_check = now;
                if poll_readable(socket, Some(Duration::ZERO)) == WaitOutcome::Readable {
                    return WaitOutcome::Readable;
                }
            }
            // No sched_yield here: with a CPU-bound task on the same core, yielding gives it a
            // whole time slice (milliseconds) and the deadline is missed.
            std::hint::spin_loop();
        }
    }
}

/// Distribution of the pacing error (actual minus scheduled send time), microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct PacingSummary {
    /// Packets measured.
    pub samples: u64,
    /// Mean error.
    pub mean_us: f64,
    /// Median error.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest error.
    pub max_us: f64,
}

impl PacingSummary {
    /// The summary of the errors in `histogram` (nanoseconds), reported in the JSON
    /// `end.pacing` object.
    pub fn of(histogram: &Histogram) -> PacingSummary {
        let micros = |nanos: u64| nanos as f64 / 1000.0;
        PacingSummary {
            samples: histogram.count(),
            mean_us: histogram.mean() / 1000.0,
            p50_us: micros(histogram.percentile(0.5)),
            p90_us: micros(histogram.percentile(0.9)),
            p99_us: micros(histogram.percentile(0.99)),
            p999_us: micros(histogram.percentile(0.999)),
            max_us: micros(histogram.max()),
        }
    }
}

/// How [`probe_wakeups`] waits for each deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeWait {
    /// [`Waiter::wait_until`]: sleep, then spin the calibrated margin (what `tfrc send` does).
    SleepThenSpin,
    /// [`Waiter::sleep_until`]: the kernel's sleep alone (what a cyclictest-like probe measures).
    Sleep,
}

/// The machine's own wake-up lateness, the floor under any pacing error: a thread that does
/// nothing but wait, with `waiter`, for deadlines `interval` apart (as a sender pacing one packet
/// per `interval` does), for `duration`, recording how late each deadline is served (actual minus
/// scheduled time). Deadlines that passed while the thread was not running are served at once
/// when it is, each with its own lateness, as a sender sends the packets it owes after a late
/// wake-up and counts each one's error. Run it in the same conditions (load, priority) as the
/// tool it is the floor of.
pub fn probe_wakeups(
    waiter: &Waiter,
    how: ProbeWait,
    interval: Duration,
    duration: Duration,
) -> PacingSummary {
    let clock = waiter.clock;
    probe_deadlines(
        || clock.now(),
        |deadline| {
            match how {
                ProbeWait::SleepThenSpin => waiter.wait_until(deadline, None),
                ProbeWait::Sleep => waiter.sleep_until(deadline, None),
            };
        },
        interval,
        duration,
    )
}

/// The loop of [`probe_wakeups`] for any clock and wait (the emulator's relay probes its own
/// waiter with it): deadlines `interval` apart for `duration`, each waited for with `wait_until`
/// (which must not return before its deadline) and its lateness recorded, late ones served at
/// once.
pub fn probe_deadlines(
    now: impl Fn() -> Instant,
    mut wait_until: impl FnMut(Instant),
    interval: Duration,
    duration: Duration,
) -> PacingSummary {
    let interval = interval.max(Duration::from_micros(1));
    let start = now();
    let end = start + duration;
    let mut deadline = start + interval;
    let mut lateness = Histogram::new();
    while deadline <= end {
        wait_until(deadline);
        let late = now().saturating_duration_since(deadline);
        lateness.record(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
        deadline += interval;
    }
    PacingSummary::of(&lateness)
}

/// Length of the window over which [`RecentLateness`] keeps the largest lateness.
const LATENESS_WINDOW: Duration = Duration::from_secs(1);
/// The window is kept as this many buckets, each with its largest lateness.
const LATENESS_BUCKETS: usize = 10;
/// Largest t_gran a sender adopts from what it measured: the longest catch-up burst a late
/// wake-up may bring is this much of the sending rate. A documented default, not a measured
/// figure: a pause longer than this is the machine's, and the sender loses that time rather
/// than send a longer burst into the network.
pub const MAX_MEASURED_TIMER_GRANULARITY: Duration = Duration::from_millis(10);

/// The largest lateness of the sender's wake-ups (actual minus scheduled send time) over the
/// last second: how coarsely the operating system schedules the sending thread now, which a
/// sender uses as t_gran (RFC 5348 §4.6) when it is larger than the one measured at start.
/// Old lateness ages out, so a machine that calms down gets its short bursts back.
#[derive(Debug, Clone)]
pub struct RecentLateness {
    /// Largest lateness in each bucket of `LATENESS_WINDOW / LATENESS_BUCKETS`.
    largest: [Duration; LATENESS_BUCKETS],
    /// Index of the bucket that `current_start` begins.
    current: usize,
    current_start: Instant,
}

impl RecentLateness {
    /// An empty window starting at `now`.
    pub fn new(now: Instant) -> RecentLateness {
        RecentLateness {
            largest: [Duration::ZERO; LATENESS_BUCKETS],
            current: 0,
            current_start: now,
        }
    }

    /// Notes that something scheduled for `scheduled` happened at `now`.
    pub fn record(&mut self, now: Instant, scheduled: Instant) {
        self.rotate(now);
        let late = now.saturating_duration_since(scheduled);
        let bucket = &mut self.largest[self.current];
        *bucket = (*bucket).max(late);
    }

    /// The largest lateness recorded in the last second (up to one bucket more).
    pub fn largest(&mut self, now: Instant) -> Duration {
        self.rotate(now);
        self.largest.iter().copied().max().unwrap_or_default()
    }

    /// Moves to the bucket of `now`, clearing the buckets it passes.
    fn rotate(&mut self, now: Instant) {
        let width = LATENESS_WINDOW / LATENESS_BUCKETS as u32;
        let mut passed = 0;
        while now.saturating_duration_since(self.current_start) >= width
            && passed <= LATENESS_BUCKETS
        {
            self.current = (self.current + 1) % LATENESS_BUCKETS;
            self.largest[self.current] = Duration::ZERO;
            self.current_start += width;
            passed += 1;
        }
        if passed > LATENESS_BUCKETS {
            // A long silence: every bucket is cleared; start the current one now.
            self.current_start = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wakeup_probe_samples_every_deadline_it_reaches() {
        let clock = Clock::new();
        let (waiter, _) = Waiter::calibrate(clock);
        for how in [ProbeWait::SleepThenSpin, ProbeWait::Sleep] {
            let summary = probe_wakeups(
                &waiter,
                how,
                Duration::from_millis(1),
                Duration::from_millis(50),
            );
            // 50 deadlines, fewer only when the machine made the probe skip some.
            assert!((1..=50).contains(&summary.samples), "{how:?}: {summary:?}");
            assert!(
                summary.p50_us >= 0.0 && summary.max_us >= summary.p99_us,
                "{summary:?}"
            );
        }
    }

    #[test]
    fn waits_never_return_early() {
        let clock = Clock::new();
        let (waiter, calibration) = Waiter::calibrate(clock);
        assert!(calibration.spin_margin_us >= 30.0);
        for _ in 0..20 {
            let deadline = clock.now() + Duration::from_micros(200);
            assert_eq!(waiter.wait_until(deadline, None), WaitOutcome::Deadline);
            assert!(clock.now() >= deadline);
            let deadline = clock.now() + Duration::from_micros(200);
            assert_eq!(waiter.sleep_until(deadline, None), WaitOutcome::Deadline);
            assert!(clock.now() >= deadline);
        }
    }

    #[test]
    fn recent_lateness_keeps_the_largest_of_the_last_second() {
        let start = Instant::from_millis(1000);
        let at = |ms: u64| Instant::from_millis(1000 + ms);
        let mut window = RecentLateness::new(start);
        assert_eq!(window.largest(start), Duration::ZERO);
        window.record(at(10), at(6)); // 4 ms late
        window.record(at(20), at(19)); // 1 ms late
        window.record(at(30), at(40)); // early: counts as 0
        assert_eq!(window.largest(at(30)), Duration::from_millis(4));
        window.record(at(500), at(498));
        assert_eq!(window.largest(at(900)), Duration::from_millis(4));
        // The 4 ms wake-up was in the first 100 ms bucket: gone once a second has passed.
        assert_eq!(window.largest(at(1050)), Duration::from_millis(2));
        assert_eq!(window.largest(at(1550)), Duration::ZERO);
        // After a long silence the window is empty and records again.
        window.record(at(60_000), at(59_997));
        assert_eq!(window.largest(at(60_001)), Duration::from_millis(3));
        assert_eq!(window.largest(at(61_100)), Duration::ZERO);
    }
}
