//! The summary and files of a run another simulator made (ns-2.35 through `tfrc ns2`, ns-3.37
//! through `tfrc ns3`): both converters measure their samples their own way, then describe the
//! run's shape and measures here, and this module builds `summary.json` by the schema's rules and
//! writes the four files, so that a run of either reads exactly as one of ours.

use core::time::Duration;
use std::path::{Path, PathBuf};

use crate::{
    bottleneck_direction, coefficient_of_variation, utilization, BottleneckSummary, FlowIdentity,
    FlowSummary, FlowTotals, LinkSummary, Rows, RunIdentity, RunWriter, Summary, WriteError,
};

/// How another simulator's run was planned, as its converter needs it: the run's identity and
/// times, its flows and link directions in output order. Both generators (`tfrc-ns2`'s Tcl,
/// `tfrc-ns3`'s run description) fill one; `F` is what a simulator adds per flow (ns-2: which
/// counters its script samples).
#[derive(Debug, Clone)]
pub struct RunLayout<F = ()> {
    /// Scenario (or sweep variant) name.
    pub scenario: String,
    /// The sweep grid's `(label, value)` pairs of the variant (empty outside a sweep).
    pub parameters: Vec<(String, String)>,
    /// The scenario seed.
    pub seed: u64,
    /// Run length.
    pub duration: Duration,
    /// `[output] interval`.
    pub interval: Duration,
    /// Ends of the output intervals (`flows.csv`/`links.csv` rows), in order.
    pub flow_times: Vec<Duration>,
    /// State sampling times (`state.csv` rows), in order.
    pub state_times: Vec<Duration>,
    /// The flows the run has, in scenario order (after `count` expansion).
    pub flows: Vec<FlowLayout<F>>,
    /// The link directions: forward then reverse of each link, in scenario order.
    pub directions: Vec<DirectionLayout>,
}

/// One flow of a [`RunLayout`].
#[derive(Debug, Clone)]
pub struct FlowLayout<F = ()> {
    /// Flow name (`name.3` for an instance of a `count` flow).
    pub name: String,
    /// The `kind` column of `flows.csv`.
    pub kind: crate::FlowKind,
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// Start time.
    pub start: Duration,
    /// Stop time (the run's duration when the scenario gives none).
    pub stop: Duration,
    /// Packet size on the wire (the IP packet), headers included.
    pub packet_size: u32,
    /// Indices into [`RunLayout::directions`] of the link directions its data crosses.
    pub data_path: Vec<usize>,
    /// What the simulator adds.
    pub extra: F,
}

/// One link direction of a [`RunLayout`].
#[derive(Debug, Clone)]
pub struct DirectionLayout {
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// The rate the simulator runs it at, bits/s (for a trace-driven link in ns-2, the mean rate
    /// of its schedule over the run).
    pub capacity_bps: u64,
}

impl<F> RunLayout<F> {
    /// The `run` part of `summary.json`: `tool` (which simulator, through which version of this
    /// toolkit), the scenario, seed and times.
    pub fn identity(&self, tool: String) -> RunIdentity {
        RunIdentity {
            tool,
            scenario: self.scenario.clone(),
            seed: self.seed,
            duration_s: self.duration.as_secs_f64(),
            interval_s: self.interval.as_secs_f64(),
            parameters: self.parameters.clone(),
        }
    }

    /// The run's shape as [`summarize`] reads it, its identity naming `tool`.
    pub fn shape(&self, tool: String) -> RunShape<'_> {
        RunShape {
            run: self.identity(tool),
            duration: self.duration,
            interval: self.interval,
            flows: self
                .flows
                .iter()
                .map(|flow| FlowShape {
                    identity: FlowIdentity {
                        name: &flow.name,
                        kind: flow.kind,
                        from: &flow.from,
                        to: &flow.to,
                    },
                    start: flow.start,
                    stop: flow.stop,
                    data_path: &flow.data_path,
                })
                .collect(),
            directions: self
                .directions
                .iter()
                .map(|direction| DirectionShape {
                    from: &direction.from,
                    to: &direction.to,
                    capacity_bps: direction.capacity_bps,
                })
                .collect(),
        }
    }
}

/// Where a run of another simulator samples: the multiples of `step` up to `duration`, plus
/// `duration` itself when it is not a multiple (a shorter last interval); none for a zero step.
/// The ends of the output intervals (`step` = `[output] interval`) and the state sampling times
/// (`step` = the state sampling interval) of `tfrc ns2` and `tfrc ns3` runs (docs/ns2.md, "How the
/// output is produced").
pub fn sample_times(duration: Duration, step: Duration) -> Vec<Duration> {
    let mut times = Vec::new();
    if step.is_zero() {
        return times;
    }
    let mut time = step;
    while time <= duration {
        times.push(time);
        time += step;
    }
    if times.last() != Some(&duration) {
        times.push(duration);
    }
    times
}

/// A sampling time as the output files write it (`12.5`), for error messages.
pub fn seconds_text(time: Duration) -> String {
    crate::format_time_nanos(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX))
}

/// Cumulative counters of one link direction at one sampling time, as a simulator's samples
/// give them (ns-2's queue monitor, ns-3's queue disc and device).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkCounters {
    /// Bytes in the queue.
    pub queue_bytes: u64,
    /// Packets in the queue.
    pub queue_packets: u64,
    /// Packets that arrived.
    pub arrivals: u64,
    /// Packets that left.
    pub departures: u64,
    /// Bytes that left.
    pub departure_bytes: u64,
    /// Packets dropped.
    pub drops: u64,
    /// RED's average queue, where the simulator keeps one (ns-2).
    pub average_queue: Option<f64>,
    /// Packets a random-loss model dropped, where the simulator counts them apart (ns-3).
    pub loss_drops: Option<u64>,
}

/// `flows.csv`: one row per output interval and flow from `counts(k, i)`, flow `i`'s counts
/// over interval `k` (an error when a sample is missing). Returns each flow's totals over the
/// run and its packets sent per interval while it was active (for its CoV).
pub fn flow_rows<F, E>(
    layout: &RunLayout<F>,
    rows: &mut Rows,
    mut counts: impl FnMut(usize, usize) -> Result<FlowTotals, E>,
) -> Result<(Vec<FlowTotals>, Vec<Vec<f64>>), E> {
    let mut totals = vec![FlowTotals::default(); layout.flows.len()];
    let mut per_interval_sent: Vec<Vec<f64>> = vec![Vec::new(); layout.flows.len()];
    for (k, &time) in layout.flow_times.iter().enumerate() {
        let width = interval_width(&layout.flow_times, k);
        for (i, flow) in layout.flows.iter().enumerate() {
            let interval = counts(k, i)?;
            totals[i].add(interval);
            if time > flow.start && time - width < flow.stop.min(layout.duration) {
                per_interval_sent[i].push(interval.sent_packets as f64);
            }
            rows.flows.push(interval.row(
                crate::duration_seconds(time),
                (&flow.name, flow.kind),
                width.as_secs_f64(),
            ));
        }
    }
    Ok((totals, per_interval_sent))
}

/// `links.csv`: one row per output interval and link direction from `samples[k][d]`, the
/// direction's cumulative counters at interval `k`'s end; a missing one is
/// `missing("link direction A -> B at T s")`. Returns each direction's totals over the run.
pub fn link_rows<F, E>(
    layout: &RunLayout<F>,
    samples: &[Vec<Option<LinkCounters>>],
    rows: &mut Rows,
    missing: impl Fn(String) -> E,
) -> Result<Vec<DirectionMeasures>, E> {
    let mut totals = vec![DirectionMeasures::default(); layout.directions.len()];
    for (k, &time) in layout.flow_times.iter().enumerate() {
        let width = interval_width(&layout.flow_times, k);
        for (d, direction) in layout.directions.iter().enumerate() {
            let now = samples[k][d].ok_or_else(|| {
                missing(format!(
                    "link direction {} -> {} at {} s",
                    direction.from,
                    direction.to,
                    seconds_text(time)
                ))
            })?;
            let before = match k {
                0 => LinkCounters::default(),
                _ => samples[k - 1][d].unwrap_or_default(),
            };
            let departures = now.departures.saturating_sub(before.departures);
            let departure_bytes = now.departure_bytes.saturating_sub(before.departure_bytes);
            let drops = now.drops.saturating_sub(before.drops);
            let total = &mut totals[d];
            total.departures += departures;
            total.departure_bytes += departure_bytes;
            total.drops += drops;
            rows.links.push(crate::LinkRow {
                time_s: crate::duration_seconds(time),
                from: direction.from.clone(),
                to: direction.to.clone(),
                queue_packets: now.queue_packets,
                queue_bytes: now.queue_bytes,
                average_queue: now.average_queue,
                arrivals: now.arrivals.saturating_sub(before.arrivals),
                departures,
                departure_bytes,
                utilization: utilization(
                    departure_bytes,
                    Some(direction.capacity_bps),
                    width.as_secs_f64(),
                ),
                drops,
                // Neither ns-2's dsRED nor ns-3 keeps per-colour counters; ns-2 no per-cause ones.
                drops_unmarked: None,
                drops_in: None,
                drops_out: None,
                drops_loss_model: now
                    .loss_drops
                    .map(|count| count.saturating_sub(before.loss_drops.unwrap_or(0))),
                marked_in: None,
                marked_out: None,
                ecn_marks: None,
            });
        }
    }
    Ok(totals)
}

/// A line of another simulator's samples that does not have the form its generator writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line_number}: {message}: {line:?}", path.display())]
pub struct SampleLineError {
    /// The file the samples came from.
    pub path: PathBuf,
    /// 1-based line number.
    pub line_number: usize,
    /// The offending line.
    pub line: String,
    /// What was expected.
    pub message: String,
}

/// One line of a simulator's samples (`F`, `S`, `L`, `R` records), its tag removed: typed
/// fields, and errors that name the file, the line and what was expected.
#[derive(Debug, Clone)]
pub struct SampleLine<'a> {
    fields: Vec<&'a str>,
    path: &'a Path,
    /// 0-based line number.
    number: usize,
    line: &'a str,
}

impl<'a> SampleLine<'a> {
    /// Line `number` (0-based) of `path`, whose fields after the tag are `fields`.
    pub fn new(
        fields: impl Iterator<Item = &'a str>,
        path: &'a Path,
        number: usize,
        line: &'a str,
    ) -> Self {
        SampleLine {
            fields: fields.collect(),
            path,
            number,
            line,
        }
    }

    /// The error for this line: `message` says what was expected.
    pub fn error(&self, message: String) -> SampleLineError {
        SampleLineError {
            path: self.path.to_path_buf(),
            line_number: self.number + 1,
            line: self.line.to_owned(),
            message,
        }
    }

    /// The field at `position` as an index below `limit` (`what` names it in the error).
    pub fn index(
        &self,
        position: usize,
        limit: usize,
        what: &str,
    ) -> Result<usize, SampleLineError> {
        self.fields
            .get(position)
            .and_then(|text| text.parse::<usize>().ok())
            .filter(|&value| value < limit)
            .ok_or_else(|| self.error(format!("expected a {what} index below {limit}")))
    }

    /// The field at `position` as a finite number, `None` for `-` (not available).
    pub fn value(&self, position: usize) -> Result<Option<f64>, SampleLineError> {
        match self.fields.get(position) {
            Some(&"-") => Ok(None),
            Some(text) => text
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(Some)
                .ok_or_else(|| self.error(format!("field {} is not a number", position + 2))),
            None => Err(self.error(format!("expected at least {} fields", position + 2))),
        }
    }

    /// The field at `position` as a count: a non-negative integer.
    pub fn count(&self, position: usize) -> Result<u64, SampleLineError> {
        self.fields
            .get(position)
            .and_then(|text| text.parse::<u64>().ok())
            .ok_or_else(|| self.error(format!("field {} is not a count", position + 2)))
    }

    /// The field at `position` as a count printed as a number (ns-2 prints some counters as
    /// Tcl doubles): non-negative, rounded.
    pub fn rounded_count(&self, position: usize) -> Result<u64, SampleLineError> {
        self.value(position)?
            .filter(|v| *v >= 0.0)
            .map(|v| v.round() as u64)
            .ok_or_else(|| self.error(format!("field {} is not a count", position + 2)))
    }
}

/// What the converted run was: its identity, length, output interval, flows and link directions.
#[derive(Debug, Clone)]
pub struct RunShape<'a> {
    /// The `run` part of `summary.json` (its `tool` names the simulator).
    pub run: RunIdentity,
    /// The run's length.
    pub duration: Duration,
    /// The output interval (a 0.1 s interval gives each flow its CoV of packets per bin).
    pub interval: Duration,
    /// The flows, in output order.
    pub flows: Vec<FlowShape<'a>>,
    /// The link directions, in output order.
    pub directions: Vec<DirectionShape<'a>>,
}

/// A flow of a [`RunShape`].
#[derive(Debug, Clone)]
pub struct FlowShape<'a> {
    /// Name, kind and end nodes.
    pub identity: FlowIdentity<'a>,
    /// When it starts.
    pub start: Duration,
    /// When it stops (clipped to the run).
    pub stop: Duration,
    /// The directions its data crosses (indices into [`RunShape::directions`]).
    pub data_path: &'a [usize],
}

/// A link direction of a [`RunShape`].
#[derive(Debug, Clone, Copy)]
pub struct DirectionShape<'a> {
    /// The node it leaves.
    pub from: &'a str,
    /// The node it reaches.
    pub to: &'a str,
    /// Its rate, bits/s.
    pub capacity_bps: u64,
}

/// What a converter measured of one flow over the run.
#[derive(Debug, Clone, Default)]
pub struct FlowMeasures {
    /// Packets and bytes sent, received, delivered.
    pub totals: FlowTotals,
    /// Packets sent in each output interval while it was active (for its CoV).
    pub sent_per_interval: Vec<f64>,
    /// Time mean of its RTT samples, if any.
    pub mean_rtt_s: Option<f64>,
    /// Time mean of its loss event rate, if the simulator reports one.
    pub mean_p: Option<f64>,
    /// `(timeouts, retransmitted packets)` of a TCP sender.
    pub retransmissions: Option<(u64, u64)>,
}

/// What a converter counted on one link direction over the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectionMeasures {
    /// Bytes that left it.
    pub departure_bytes: u64,
    /// Packets that left it.
    pub departures: u64,
    /// Packets it dropped.
    pub drops: u64,
}

/// `summary.json` by the output schema's rules ([`Summary::new`]): each flow's summary from its
/// totals, the bottleneck (the slowest direction on a data path) and every direction's
/// utilisation.
#[must_use]
pub fn summarize(
    shape: &RunShape<'_>,
    flows: &[FlowMeasures],
    directions: &[DirectionMeasures],
) -> Summary {
    let duration = shape.duration.as_secs_f64();
    let flow_summaries = shape
        .flows
        .iter()
        .zip(flows)
        .map(|(flow, measures)| FlowSummary {
            mean_rtt_s: measures.mean_rtt_s,
            mean_p: measures.mean_p,
            timeouts: measures.retransmissions.map(|(timeouts, _)| timeouts),
            retransmissions: measures.retransmissions.map(|(_, packets)| packets),
            // The CoV of packets per 0.1 s bin is only available when the output interval is
            // 0.1 s.
            cov_sent_100ms: (shape.interval == Duration::from_millis(100))
                .then(|| coefficient_of_variation(&measures.sent_per_interval))
                .flatten(),
            ..FlowSummary::from_totals(
                flow.identity,
                (flow.start, flow.stop.min(shape.duration)),
                measures.totals,
            )
        })
        .collect();
    let direction_utilization = |d: usize| {
        utilization(
            directions[d].departure_bytes,
            Some(shape.directions[d].capacity_bps),
            duration,
        )
    };
    let on_data_paths = shape.flows.iter().flat_map(|flow| {
        flow.data_path
            .iter()
            .map(|&d| (d, Some(shape.directions[d].capacity_bps)))
    });
    let bottleneck = bottleneck_direction(on_data_paths).map(|d| {
        let direction = &shape.directions[d];
        BottleneckSummary {
            from: direction.from.to_string(),
            to: direction.to.to_string(),
            capacity_bps: Some(direction.capacity_bps as f64),
            utilization: direction_utilization(d),
        }
    });
    let links = shape
        .directions
        .iter()
        .enumerate()
        .map(|(d, direction)| LinkSummary {
            from: direction.from.to_string(),
            to: direction.to.to_string(),
            utilization: direction_utilization(d),
            drops: directions[d].drops,
            departures: directions[d].departures,
        })
        .collect();
    Summary::new(shape.run.clone(), flow_summaries, bottleneck, links)
}

/// Writes `flows.csv`, `state.csv`, `links.csv` (with the schema's writer) and `summary.json`
/// into `directory`.
pub fn write_run(rows: &Rows, summary: &Summary, directory: &Path) -> Result<(), WriteError> {
    let mut writer = RunWriter::new(Some(directory))?;
    for row in &rows.flows {
        writer.push(row.clone())?;
    }
    for row in &rows.states {
        writer.push(row.clone())?;
    }
    for row in &rows.links {
        writer.push(row.clone())?;
    }
    writer.finish()?;
    summary.write(directory)
}

/// Width of output interval `k` whose ends are `ends` (the first starts at 0).
#[must_use]
pub fn interval_width(ends: &[Duration], k: usize) -> Duration {
    let start = if k == 0 { Duration::ZERO } else { ends[k - 1] };
    ends[k].saturating_sub(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_times_end_every_interval_and_the_run() {
        let ms = Duration::from_millis;
        assert_eq!(sample_times(ms(300), ms(100)), [ms(100), ms(200), ms(300)]);
        // A last, shorter interval ends at the run's end.
        assert_eq!(sample_times(ms(250), ms(100)), [ms(100), ms(200), ms(250)]);
        assert_eq!(sample_times(ms(50), ms(100)), [ms(50)]);
        assert!(sample_times(ms(300), Duration::ZERO).is_empty());
    }
    use crate::FlowKind;

    #[test]
    fn a_two_direction_run_summarizes_its_flow_and_bottleneck() {
        let path = [0usize, 1];
        let shape = RunShape {
            run: RunIdentity {
                tool: "ns-x via tfrc".into(),
                scenario: "s".into(),
                seed: 1,
                duration_s: 10.0,
                interval_s: 0.1,
                parameters: Default::default(),
            },
            duration: Duration::from_secs(10),
            interval: Duration::from_millis(100),
            flows: vec![FlowShape {
                identity: FlowIdentity {
                    name: "f",
                    kind: FlowKind::Tcp,
                    from: "a",
                    to: "c",
                },
                start: Duration::ZERO,
                stop: Duration::from_secs(20),
                data_path: &path,
            }],
            directions: vec![
                DirectionShape {
                    from: "a",
                    to: "b",
                    capacity_bps: 100_000_000,
                },
                DirectionShape {
                    from: "b",
                    to: "c",
                    capacity_bps: 10_000_000,
                },
            ],
        };
        let flows = [FlowMeasures {
            totals: FlowTotals {
                sent_bytes: 12_500_000,
                recv_bytes: 12_500_000,
                sent_packets: 12_500,
                recv_packets: 12_500,
                goodput_bytes: 12_000_000,
            },
            sent_per_interval: vec![125.0; 100],
            mean_rtt_s: Some(0.05),
            mean_p: None,
            retransmissions: Some((1, 7)),
        }];
        let directions = [
            DirectionMeasures {
                departure_bytes: 12_500_000,
                departures: 12_500,
                drops: 0,
            },
            DirectionMeasures {
                departure_bytes: 12_500_000,
                departures: 12_500,
                drops: 3,
            },
        ];
        let summary = summarize(&shape, &flows, &directions);
        let bottleneck = summary.bottleneck.unwrap();
        assert_eq!(
            (bottleneck.from.as_str(), bottleneck.to.as_str()),
            ("b", "c")
        );
        assert_eq!(bottleneck.utilization, Some(1.0));
        let flow = &summary.flows[0];
        assert_eq!(flow.stop_s, 10.0, "the stop is clipped to the run");
        assert_eq!((flow.timeouts, flow.retransmissions), (Some(1), Some(7)));
        assert_eq!(flow.cov_sent_100ms, Some(0.0));
        assert_eq!(summary.links[1].drops, 3);
        assert_eq!(
            interval_width(&[Duration::from_secs(1), Duration::from_millis(1500)], 1),
            Duration::from_millis(500)
        );
    }
}
