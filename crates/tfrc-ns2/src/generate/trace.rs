//! A Mahimahi delivery trace turned into the rate changes of an ns-2 link.

use core::time::Duration;
use std::path::Path;

/// Width of the bins in which an ns-2 link follows a delivery trace: its rate changes at most
/// once per bin.
pub const TRACE_BIN: Duration = Duration::from_millis(100);

/// Most bins a trace-driven link may have in one run (a rate change is one `$ns at` line).
const MAX_TRACE_BINS: u64 = 1_000_000;

/// A Mahimahi delivery trace as ns-2 uses it: how many 1500-byte opportunities each
/// millisecond of one period has. As in Mahimahi and the simulator (`tfrc_sim::trace`), the
/// trace repeats with a period `P` equal to its last time: a line `t` is an opportunity at
/// `t`, `t + P`, `t + 2P`, … of the trace's time, so a last line `P` is one at `P`, `2P`, … but
/// not at 0.
pub(super) struct TraceFile {
    /// Opportunities at each millisecond `0 .. P` of the second and later passes; a line `t`
    /// counts at `t mod P`.
    pub(super) per_millisecond: Vec<u32>,
    /// Lines equal to `P`: counted at slot 0, but absent from the trace's time 0.
    pub(super) at_period: u32,
}

/// The rate changes that make an ns-2 link follow a trace, and their mean over the run.
pub(super) struct RateSchedule {
    pub(super) changes: Vec<(Duration, u64)>,
    pub(super) mean_bps: u64,
}

/// Bits one delivery opportunity carries.
const OPPORTUNITY_BITS: u64 = 1500 * 8;

impl TraceFile {
    pub(super) fn read(path: &Path) -> Result<TraceFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read the trace {}: {error}", path.display()))?;
        let mut times = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let millisecond: u64 = line.parse().map_err(|_| {
                format!(
                    "{}:{}: expected a time in milliseconds, got {line:?}",
                    path.display(),
                    number + 1
                )
            })?;
            times.push(millisecond);
        }
        let period = times.iter().copied().max().unwrap_or(0);
        if period == 0 {
            return Err(format!(
                "the trace {} has no delivery opportunities after 0 ms, so no rate",
                path.display()
            ));
        }
        let length = usize::try_from(period)
            .ok()
            .filter(|&length| length <= 100_000_000)
            .ok_or_else(|| format!("the trace {} is longer than 100000 s", path.display()))?;
        let mut per_millisecond = vec![0u32; length];
        let mut at_period = 0u32;
        for time in times {
            let slot = (time % period) as usize;
            per_millisecond[slot] = per_millisecond[slot].saturating_add(1);
            if time == period {
                at_period = at_period.saturating_add(1);
            }
        }
        Ok(TraceFile {
            per_millisecond,
            at_period,
        })
    }

    /// Opportunities at millisecond `time` of the trace's own time.
    pub(super) fn at(&self, time: u64) -> u64 {
        let period = self.per_millisecond.len() as u64;
        let slot = u64::from(self.per_millisecond[(time % period) as usize]);
        if time == 0 {
            slot - u64::from(self.at_period)
        } else {
            slot
        }
    }

    /// The link's rate per [`TRACE_BIN`] of a run of `duration` whose time 0 is the trace's
    /// time `offset`: the bin's opportunities over the bin. A run of bins without an
    /// opportunity shares the opportunities of the next bin that has some (an ns-2 link cannot
    /// stop), so every opportunity's bytes are delivered by the end of the bin it is in;
    /// trailing empty bins keep the last rate. Only changes are listed, the first at 0.
    pub(super) fn rate_schedule(
        &self,
        offset: Duration,
        duration: Duration,
    ) -> Result<RateSchedule, String> {
        let bin_ms = TRACE_BIN.as_millis() as u64;
        let run_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let bins = run_ms.div_ceil(bin_ms);
        if bins > MAX_TRACE_BINS {
            return Err(format!(
                "a trace-driven link in ns-2 changes its rate every {bin_ms} ms; a run of {} s \
                 needs more than {MAX_TRACE_BINS} changes",
                duration.as_secs()
            ));
        }
        let period = self.per_millisecond.len() as u64;
        let offset_ms = u64::try_from(offset.as_millis()).unwrap_or(0) % period;
        let mut changes: Vec<(Duration, u64)> = Vec::new();
        let mut pending_from: Option<u64> = None;
        let mut total_bits: u64 = 0;
        for bin in 0..bins {
            let start = bin * bin_ms;
            let end = (start + bin_ms).min(run_ms);
            let opportunities: u64 = (start..end).map(|t| self.at(offset_ms + t)).sum();
            let from = pending_from.unwrap_or(bin);
            if opportunities == 0 {
                pending_from = Some(from);
                continue;
            }
            pending_from = None;
            total_bits += opportunities * OPPORTUNITY_BITS;
            let span_ms = end - from * bin_ms;
            let rate = (opportunities * OPPORTUNITY_BITS * 1000 / span_ms).max(1);
            if changes.last().map(|&(_, last)| last) != Some(rate) {
                changes.push((Duration::from_millis(from * bin_ms), rate));
            }
        }
        if changes.is_empty() {
            return Err(format!(
                "the trace offers no delivery opportunity in the run's {} s",
                duration.as_secs_f64()
            ));
        }
        let mean_bps = (total_bits * 1000 / run_ms.max(1)).max(1);
        Ok(RateSchedule { changes, mean_bps })
    }
}
