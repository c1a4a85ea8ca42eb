//! The run loops' periodic outputs ([`OutputTimers`]): interval reports, which stay on their
//! grid (iperf3's intervals), and log rows, which do not burst after a late wake-up. Generic
//! over the instant type: the UDP loops keep the core's [`tfrc_proto::Instant`], the TCP loops
//! `std::time::Instant`.

use core::ops::Add;
use core::time::Duration;

/// The report time after `due`: the first one on `due`'s grid of `interval` that is later than
/// `now` (a loop that slept past several reports makes one, and the grid stays put).
fn next_report_time<T>(due: T, interval: Duration, now: T) -> T
where
    T: Copy + PartialOrd + Add<Duration, Output = T>,
{
    let mut next = due + interval;
    while next <= now {
        next = next + interval;
    }
    next
}

/// The log time after `due`: one `interval` on, or one `interval` after `now` when the loop
/// fell behind (no burst of catch-up rows).
pub(crate) fn next_log_time<T>(due: T, interval: Duration, now: T) -> T
where
    T: Copy + PartialOrd + Add<Duration, Output = T>,
{
    let next = due + interval;
    if next <= now {
        now + interval
    } else {
        next
    }
}

/// The interval-report and log-row timers of a run loop (either absent when its interval is
/// not asked for), started at the loop's first flow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputTimers<T> {
    report_interval: Option<Duration>,
    log_interval: Option<Duration>,
    /// Start of the interval being counted, once started.
    interval_start: Option<T>,
    next_report: Option<T>,
    next_log: Option<T>,
}

impl<T> OutputTimers<T>
where
    T: Copy + PartialOrd + Add<Duration, Output = T>,
{
    /// Timers not started yet: nothing is due until [`OutputTimers::start`].
    pub(crate) fn new(report_interval: Option<Duration>, log_interval: Option<Duration>) -> Self {
        OutputTimers {
            report_interval,
            log_interval,
            interval_start: None,
            next_report: None,
            next_log: None,
        }
    }

    /// Starts them at `first`: the first report one interval later, the first log row at once.
    pub(crate) fn start(&mut self, first: T) {
        self.next_report = self.report_interval.map(|interval| first + interval);
        self.interval_start = Some(first);
        self.next_log = self.log_interval.map(|_| first);
    }

    /// The interval (start, end) to report if one is due at `now`; the timer moves on.
    pub(crate) fn report_due(&mut self, now: T) -> Option<(T, T)> {
        let (Some(due), Some(interval), Some(start)) =
            (self.next_report, self.report_interval, self.interval_start)
        else {
            return None;
        };
        if now < due {
            return None;
        }
        self.interval_start = Some(due);
        self.next_report = Some(next_report_time(due, interval, now));
        Some((start, due))
    }

    /// Whether log rows are due at `now`; the timer moves on.
    pub(crate) fn log_due(&mut self, now: T) -> bool {
        let (Some(due), Some(interval)) = (self.next_log, self.log_interval) else {
            return false;
        };
        if now < due {
            return false;
        }
        self.next_log = Some(next_log_time(due, interval, now));
        true
    }

    /// When they fall due next (none before they start).
    pub(crate) fn next_due(&self) -> impl Iterator<Item = T> {
        [self.next_report, self.next_log].into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfrc_proto::Instant;

    fn at(millis: u64) -> Instant {
        Instant::from_nanos(millis * 1_000_000)
    }

    #[test]
    fn reports_stay_on_their_grid_and_logs_restart_from_now() {
        let second = Duration::from_secs(1);
        assert_eq!(next_report_time(at(1000), second, at(1000)), at(2000));
        assert_eq!(next_report_time(at(1000), second, at(3500)), at(4000));
        assert_eq!(next_report_time(at(1000), second, at(4000)), at(5000));
        assert_eq!(next_log_time(at(1000), second, at(1200)), at(2000));
        assert_eq!(next_log_time(at(1000), second, at(3500)), at(4500));
    }

    #[test]
    fn output_timers_run_from_their_start() {
        let second = Duration::from_secs(1);
        let mut timers = OutputTimers::new(Some(second), Some(second / 2));
        assert!(!timers.log_due(at(5000)));
        assert_eq!(timers.report_due(at(5000)), None);
        assert_eq!(timers.next_due().count(), 0);
        timers.start(at(100));
        assert!(timers.log_due(at(100)));
        assert!(!timers.log_due(at(100)));
        assert_eq!(timers.report_due(at(1099)), None);
        assert_eq!(timers.report_due(at(3200)), Some((at(100), at(1100))));
        assert_eq!(timers.report_due(at(4100)), Some((at(1100), at(4100))));
        assert_eq!(timers.next_due().collect::<Vec<_>>(), [at(5100), at(600)]);
        let mut none = OutputTimers::new(None, None);
        none.start(at(0));
        assert_eq!(none.report_due(at(9000)), None);
        assert!(!none.log_due(at(9000)));
    }
}
