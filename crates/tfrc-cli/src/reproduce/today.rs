//! "Today's TCP (not a paper's claim)": the papers' friendliness questions asked again against
//! CUBIC and BBR (`scenarios/beyond/today-tcp.toml`, docs/today-tcp.md).
//!
//! The scenario runs with the experiments — the same replications, seeds and start jitter, the
//! same runner — and each of its questions is measured and given its 95 % interval by the
//! claims' own code: a question is a [`Claim`] with `relation = "reference"` (a figure with no
//! bound to judge), one per run and quantity, sampled by [`claims::sample`] and reduced over
//! the replications by [`claims::judge`]. So the throughput ratio is the claims' `goodput` over
//! the TCP flow's, the Jain index the claims' (`tfrc_output::jain_index` of the goodputs), `p`
//! and the RTT the claims' `state.csv` statistics: one definition of each. The rows never reach
//! `claims.csv` or the claim counts: the report gives them a section of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use tfrc_analysis::metrics::MeanInterval;
use tfrc_analysis::plot;
use tfrc_analysis::report::{Section, Verdict};
use tfrc_analysis::table::Table;
use tfrc_scenario::Scenario;

use super::claims::{self, interval_text, Claim, Metric, OneOrMany, Outcome};
use super::{Experiment, LoadedRun};

/// The section's id: its `--only` name, its folder under `runs/` and `figures/`, its anchor.
pub const ID: &str = "today-tcp";

/// Its scenario file, relative to the scenarios folder (not an `e*.toml`: it is no paper's
/// experiment, and `claims.toml` has no entry for it).
pub const FILE: &str = "beyond/today-tcp.toml";

/// The paragraph the report's introduction gains when the section is in the report.
pub const INTRO: &str = "\n\nThe last section, **Today's TCP (not a paper's claim)**, is no \
    experiment of the papers: it asks the papers' friendliness questions again against CUBIC and \
    BBR, with the same replications and intervals. Its rows are not claims: no verdict, not in \
    the summary's counts, not in `claims.csv`.";

/// The flow under test (TFRC, gTFRC or TFRC-SP) and the competing TCP, as the file names them.
const UNDER_TEST: &str = "f";
const TCP: &str = "tcp";

/// Seconds left out at the start of every run (ours): the flows' start-ups (slow start and
/// HyStart, BBR's STARTUP and DRAIN, TFRC's slow start) are over by then at every base RTT of
/// the grid; at 200 ms and 2 BDP, in replication 0 of the default run, the TCP flow fills the
/// link and TFRC's rate peaks within 4 s, with CUBIC and with BBR.
pub const WARM_UP_S: f64 = 10.0;

/// What the section measures per run, each over (`WARM_UP_S`, end of run].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Goodput of the flow under test over the TCP flow's.
    ThroughputRatio,
    /// Jain's index of the two flows' goodputs.
    Jain,
    /// The TFRC receiver's loss event rate p, time mean, in percent.
    LossEventRate,
    /// The TFRC sender's RTT estimate, time mean, less the path's base RTT, in ms.
    QueueingDelay,
}

impl Quantity {
    /// Every quantity, in the table's column order.
    pub const ALL: [Quantity; 4] = [
        Quantity::ThroughputRatio,
        Quantity::Jain,
        Quantity::LossEventRate,
        Quantity::QueueingDelay,
    ];

    /// The table's column header.
    pub fn header(self) -> &'static str {
        match self {
            Quantity::ThroughputRatio => "throughput ratio (flow under test / TCP)",
            Quantity::Jain => "Jain index",
            Quantity::LossEventRate => "TFRC's loss event rate p (%)",
            Quantity::QueueingDelay => "queueing delay (ms)",
        }
    }

    /// The question for the run with `labels`: a reference claim measured by the claims' code.
    fn claim(self, labels: &[(String, String)], end_s: f64) -> Claim {
        let names = |list: &[&str]| Some(list.iter().map(|name| name.to_string()).collect());
        let (metric, flows, baseline_flows) = match self {
            Quantity::ThroughputRatio => (Metric::Goodput, names(&[UNDER_TEST]), names(&[TCP])),
            Quantity::Jain => (Metric::JainIndex, names(&[UNDER_TEST, TCP]), None),
            Quantity::LossEventRate => (Metric::LossEventRate, names(&[UNDER_TEST]), None),
            Quantity::QueueingDelay => (Metric::ExperiencedRtt, names(&[UNDER_TEST]), None),
        };
        let variant: BTreeMap<String, OneOrMany> = labels
            .iter()
            .map(|(label, value)| (label.clone(), OneOrMany::One(value.clone())))
            .collect();
        Claim {
            flows,
            baseline_flows,
            variant,
            window: Some([WARM_UP_S.min(end_s / 2.0), end_s]),
            ..claims::reference_claim(self.header(), metric)
        }
    }

    /// The reported interval from the measured one: p in percent, the RTT less the base RTT
    /// (a constant shift or scale moves the mean and both ends of the interval alike).
    fn reported(self, measured: MeanInterval, base_rtt_s: f64) -> MeanInterval {
        let (scale, offset) = match self {
            Quantity::ThroughputRatio | Quantity::Jain => (1.0, 0.0),
            Quantity::LossEventRate => (100.0, 0.0),
            Quantity::QueueingDelay => (1000.0, -1000.0 * base_rtt_s),
        };
        MeanInterval {
            n: measured.n,
            mean: measured.mean * scale + offset,
            low: measured.low * scale + offset,
            high: measured.high * scale + offset,
        }
    }
}

/// The section's questions: for each of its runs (sweep order), one claim per [`Quantity`]
/// (in [`Quantity::ALL`] order).
pub fn questions(variants: &[Scenario]) -> Vec<Claim> {
    variants
        .iter()
        .flat_map(|run| {
            let end_s = run.duration.as_secs_f64();
            Quantity::ALL
                .into_iter()
                .map(move |quantity| quantity.claim(&run.variant, end_s))
        })
        .collect()
}

/// A run's sweep label.
fn label<'a>(run: &'a Scenario, key: &str) -> &'a str {
    run.variant
        .iter()
        .find(|(name, _)| name == key)
        .map_or("", |(_, value)| value.as_str())
}

/// One run's row: its labels, base RTT and buffer, and each quantity's mean [95 % interval].
struct Row {
    protocol: String,
    tcp: String,
    base_rtt_s: f64,
    buffer_packets: u32,
    buffer_bdp: f64,
    values: Vec<Option<MeanInterval>>,
}

/// The bottleneck's bandwidth-delay product in packets of the TCP flow (rate × base RTT / packet).
fn bdp_packets(run: &Scenario, base_rtt_s: f64) -> Option<(u32, f64)> {
    let link = run
        .links
        .iter()
        .min_by_key(|link| match &link.forward.capacity {
            tfrc_scenario::Capacity::Rate(rate) => rate.bits_per_second(),
            tfrc_scenario::Capacity::Trace { .. } => u64::MAX,
        })?;
    let tfrc_scenario::Capacity::Rate(rate) = &link.forward.capacity else {
        return None;
    };
    let packet = run.flows.iter().find(|flow| flow.name == TCP)?.packet_size;
    let bdp = rate.bits_per_second() as f64 * base_rtt_s / (f64::from(packet) * 8.0);
    let limit = link.forward.queue.limit();
    Some((limit, f64::from(limit) / bdp))
}

/// The rows of the section: one per run of replication 0, with the outcomes of its questions.
fn rows(experiment: &Experiment, outcomes: &[Outcome]) -> Vec<Row> {
    let per_run = Quantity::ALL.len();
    experiment
        .runs
        .iter()
        .filter_map(|loaded| {
            let run = &loaded.scenario;
            let base_rtt_s = run.base_rtt("senders", "receivers")?.as_secs_f64();
            let (buffer_packets, buffer_bdp) = bdp_packets(run, base_rtt_s)?;
            // The run's questions: those selecting exactly its labels.
            let position = outcomes.chunks(per_run).position(|chunk| {
                chunk.first().is_some_and(|outcome| {
                    outcome.claim.variant.len() == run.variant.len()
                        && run.variant.iter().all(|(label, value)| {
                            matches!(outcome.claim.variant.get(label),
                                Some(OneOrMany::One(v)) if v == value)
                        })
                })
            })?;
            let chunk = &outcomes[position * per_run..(position + 1) * per_run];
            let values = Quantity::ALL
                .iter()
                .zip(chunk)
                .map(|(quantity, outcome)| {
                    outcome
                        .interval
                        .map(|interval| quantity.reported(interval, base_rtt_s))
                })
                .collect();
            Some(Row {
                protocol: label(run, "protocol").to_string(),
                tcp: label(run, "tcp").to_string(),
                base_rtt_s,
                buffer_packets,
                buffer_bdp,
                values,
            })
        })
        .collect()
}

/// The section's table: per run, protocol, TCP, base RTT, buffer, then every quantity as
/// `mean [low, high]` over the replications.
fn table(rows: &[Row], replications: u32) -> Table {
    let mut columns: Vec<String> = ["flow under test", "TCP", "base RTT (ms)", "buffer"]
        .iter()
        .map(|column| column.to_string())
        .collect();
    columns.extend(Quantity::ALL.iter().map(|q| q.header().to_string()));
    let mut table = Table::new(
        format!(
            "Today's TCP, not a paper's claim (mean over {replications} replication(s) [95 % \
             confidence interval])"
        ),
        columns,
    );
    for row in rows {
        let mut cells = vec![
            row.protocol.clone(),
            row.tcp.clone(),
            format!("{:.0}", row.base_rtt_s * 1000.0),
            format!("{} packets ({:.2} BDP)", row.buffer_packets, row.buffer_bdp),
        ];
        cells.extend(row.values.iter().map(|value| match value {
            Some(interval) => interval_text(interval),
            None => "not measured".to_string(),
        }));
        table = table.row(cells);
    }
    table
}

/// One figure per buffer size: the throughput ratio against the base RTT, one line per flow
/// under test and TCP, with the 95 % interval shaded (the table's numbers, drawn).
fn figures(rows: &[Row], replications: u32, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut buffers: Vec<f64> = rows
        .iter()
        .map(|row| (row.buffer_bdp * 4.0).round() / 4.0)
        .collect();
    buffers.sort_by(f64::total_cmp);
    buffers.dedup();
    let mut drawn = Vec::new();
    for buffer in buffers {
        let mut groups: Vec<plot::BandedGroup> = Vec::new();
        for row in rows
            .iter()
            .filter(|row| (row.buffer_bdp - buffer).abs() < 0.125)
        {
            let Some(Some(ratio)) = row.values.first() else {
                continue;
            };
            let name = format!("{} vs {}", row.protocol, row.tcp);
            let point = (row.base_rtt_s * 1000.0, ratio.mean, ratio.low, ratio.high);
            match groups.iter_mut().find(|(group, _)| *group == name) {
                Some((_, points)) => points.push(point),
                None => groups.push((name, vec![point])),
            }
        }
        if groups.is_empty() {
            continue;
        }
        let title = format!("today-tcp: throughput ratio vs base RTT, buffer ≈ {buffer} BDP");
        let chart = plot::grouped_xy_with_bands(
            &title,
            "base RTT (ms)",
            "goodput of the flow under test / TCP's",
            &groups,
        )
        .reference("equal share", 1.0);
        let stem = format!("ratio-{buffer}bdp");
        drawn.push((
            super::figures::save_line(&chart, out, ID, &stem)?,
            format!(
                "Not a paper's claim. Throughput ratio (goodput from {WARM_UP_S} s to the end of the run) of \
                 TFRC, gTFRC and TFRC-SP against one CUBIC or BBR flow, buffer ≈ {buffer} BDP; \
                 mean over {replications} replication(s), shaded: 95 % confidence interval"
            ),
        ));
    }
    Ok(drawn)
}

/// The section's setup text: what runs, what each column is, and that none of it is a claim.
fn setup_text(experiment: &Experiment, replications: u32) -> String {
    format!(
        "**Not a paper's claim.** The papers (2006–2009) asked whether TFRC and its extensions \
         are TCP-friendly against the TCP of their time (Reno, NewReno, SACK). This section asks \
         the same questions again against today's TCP — CUBIC (RFC 9438 as Linux runs it, with \
         HyStart) and BBR v1 (Linux's tcp_bbr.c) — in our simulator. They are questions the \
         papers asked, asked again against CUBIC and BBR, not results the papers state: nothing \
         here is judged, counted among the claims or written to `claims.csv`.\n\n\
         Scenario `scenarios/{FILE}` ({} runs, {} s simulated each; every parameter is our \
         default, commented in the file): one flow under test (`tfrc`; `gtfrc`, target \
         2.5 Mb/s; `tfrc-sp`, 232-byte packets, capped at 100 packets/s by RFC 4828) and one \
         TCP flow (`cubic` or `bbr`) over a 10 Mb/s DropTail bottleneck, across base RTTs and \
         buffer sizes (in packets, and as a multiple of the bandwidth-delay product). The same \
         {replications} replication(s) as the claims (new seeds, flow starts jittered by up to \
         one base RTT); every figure is the mean over them with its 95 % Student-t interval, \
         measured by the claims' code over ({WARM_UP_S} s, end of run]:\n\n\
         - **throughput ratio**: goodput of the flow under test over the TCP flow's (1 = equal \
           shares; the papers' T2/T1 asks the same of TCP);\n\
         - **Jain index**: Jain's fairness index of the two flows' goodputs;\n\
         - **p**: the TFRC receiver's loss event rate, time mean, in percent;\n\
         - **queueing delay**: the TFRC sender's RTT estimate, time mean, less the path's base \
           RTT (propagation only), in ms: the queue the two flows keep at the bottleneck, plus \
           about 1.3 ms of serialization per round trip at 1500 B.",
        experiment.runs.len(),
        experiment.scenario.duration.as_secs_f64(),
    )
}

/// The report's section: setup, figures, the table, raw data; verdict "no criterion".
pub fn section(
    experiment: &Experiment,
    outcomes: &[Outcome],
    replications: u32,
    out: &Path,
) -> Result<Section> {
    let rows = rows(experiment, outcomes);
    let mut section = Section::new(ID, "Today's TCP (not a paper's claim)")
        .setup(setup_text(experiment, replications))
        .paper_result(
            "None: no paper ran CUBIC or BBR. The papers' questions (TCP-friendliness, fairness, \
             loss event rate, queueing) asked against today's TCP; the numbers below are ours \
             alone.",
        );
    for (path, caption) in figures(&rows, replications, out)? {
        section = section.figure(path, caption);
    }
    section = section.table(table(&rows, replications));
    for failure in &experiment.failures {
        section = section.measurement("run failed", "—", failure.clone());
    }
    for path in raw_data(&experiment.runs, out) {
        section = section.raw_data(path);
    }
    Ok(section.verdict(Verdict::NoCriterion(
        "not a paper's claim: the papers' questions asked against CUBIC and BBR, with no bound \
         to judge"
            .to_string(),
    )))
}

/// The runs' `summary.json` files, relative to the report folder.
fn raw_data(runs: &[LoadedRun], out: &Path) -> Vec<PathBuf> {
    runs.iter()
        .filter_map(|loaded| {
            let summary = loaded.run.dir.join("summary.json");
            summary.strip_prefix(out).ok().map(Path::to_path_buf)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::claims::{judge, sample, RunView, Status};

    fn file() -> Scenario {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios")
            .join(FILE);
        Scenario::from_path(&path).unwrap_or_else(|error| panic!("{FILE}: {error}"))
    }

    /// The file's grid is the question's: 3 protocols × CUBIC and BBR × base RTT 20, 100,
    /// 200 ms × buffer 0.25, 1, 2 BDP, each `path` label naming the base RTT and the buffer
    /// its settings give (BDP in the TCP flow's packets, rounded); its quick version is 12
    /// runs of 20 s.
    #[test]
    fn the_grid_is_every_protocol_tcp_rtt_and_buffer_and_each_label_says_what_it_sets() {
        let runs = file().expand().unwrap();
        assert_eq!(runs.len(), 3 * 2 * 9);
        let mut cells = std::collections::BTreeSet::new();
        for run in &runs {
            let base_rtt_ms = run.base_rtt("senders", "receivers").unwrap().as_millis();
            let (limit, bdp) = bdp_packets(run, base_rtt_ms as f64 / 1000.0).unwrap();
            let path = label(run, "path");
            let (rtt, buffer) = path.split_once("ms-").unwrap();
            assert_eq!(rtt, base_rtt_ms.to_string(), "{path}");
            let wanted: f64 = buffer.trim_end_matches("bdp").parse().unwrap();
            // Rounded to whole packets: within half a packet of the wanted multiple.
            let exact = f64::from(limit) / bdp;
            assert!(
                (f64::from(limit) - wanted * exact).abs() <= 0.5,
                "{path}: {limit} packets is {bdp:.3} BDP"
            );
            let tcp = run.flows.iter().find(|flow| flow.name == TCP).unwrap();
            assert!(matches!(&tcp.kind, tfrc_scenario::FlowKind::Tcp(_)));
            cells.insert((
                label(run, "protocol").to_string(),
                label(run, "tcp").to_string(),
                path.to_string(),
            ));
        }
        assert_eq!(cells.len(), runs.len());
        let protocols: std::collections::BTreeSet<&str> =
            runs.iter().map(|run| label(run, "protocol")).collect();
        assert_eq!(
            protocols.into_iter().collect::<Vec<_>>(),
            ["gtfrc", "tfrc", "tfrc-sp"]
        );
        let mut quick = file();
        quick.apply_quick().unwrap();
        let quick_runs = quick.expand().unwrap();
        assert_eq!(quick_runs.len(), 12);
        assert_eq!(quick.duration.as_secs(), 20);
    }

    /// One question per run and quantity, each a reference (never judged) that selects exactly
    /// its run, over the warm-up window.
    #[test]
    fn every_run_has_one_unjudged_question_per_quantity() {
        let runs = file().expand().unwrap();
        let asked = questions(&runs);
        assert_eq!(asked.len(), runs.len() * Quantity::ALL.len());
        for (run, chunk) in runs.iter().zip(asked.chunks(Quantity::ALL.len())) {
            for (quantity, claim) in Quantity::ALL.iter().zip(chunk) {
                assert_eq!(claim.relation, claims::Relation::Reference);
                assert_eq!(claim.text, quantity.header());
                assert_eq!(claim.window, Some([WARM_UP_S, 60.0]));
                assert_eq!(claim.variant.len(), run.variant.len());
            }
        }
    }

    /// The queueing delay is the RTT's interval less the base RTT, in ms; p is in percent; the
    /// ratio and the index as measured.
    #[test]
    fn reported_intervals_shift_and_scale_the_measured_ones() {
        let measured = MeanInterval {
            n: 10,
            mean: 0.130,
            low: 0.120,
            high: 0.140,
        };
        let delay = Quantity::QueueingDelay.reported(measured, 0.1);
        assert_eq!(delay.n, 10);
        assert!((delay.mean - 30.0).abs() < 1e-9);
        assert!((delay.low - 20.0).abs() < 1e-9 && (delay.high - 40.0).abs() < 1e-9);
        let p = Quantity::LossEventRate.reported(measured, 0.1);
        assert!((p.mean - 13.0).abs() < 1e-9);
        assert_eq!(Quantity::Jain.reported(measured, 0.1), measured);
    }

    /// Measured on a real run by the claims' code: the ratio is the two goodputs' ratio over
    /// the window, the Jain index `tfrc_output::jain_index` of them, and each figure's interval
    /// over replications is the claims' (a reference: no verdict).
    #[test]
    fn questions_are_measured_by_the_claims_code_on_a_run() {
        let mut scenario = file();
        scenario
            .apply_sets(&[
                "duration=15s".to_string(),
                "sweep.path=[{ \"link.1.delay\" = \"9ms\", \"link.1.queue.limit\" = 17, label = \"20ms-1bdp\" }]".to_string(),
                "sweep.protocol=[{ \"flow.f.target_rate\" = \"none\", label = \"tfrc\" }]".to_string(),
                "sweep.tcp={ path = \"flow.tcp.variant\", values = [\"cubic\"] }".to_string(),
            ])
            .unwrap();
        let run_scenario = scenario.expand().unwrap().remove(0);
        let directory = tempfile::tempdir().unwrap();
        crate::sim::run_scenario(&run_scenario, Some(directory.path()), false, true, None).unwrap();
        let run = tfrc_analysis::run::Run::load(directory.path()).unwrap();
        let view = RunView {
            labels: &run_scenario.variant,
            run: &run,
            disturbance: None,
            capacity_kbps: Some(10_000.0),
        };
        let all = BTreeMap::from([(ID.to_string(), Vec::new())]);
        let asked = questions(std::slice::from_ref(&run_scenario));
        let value = |index: usize| sample(&asked[index], std::slice::from_ref(&view), &all);
        let goodput = |flow: &str| {
            let bytes: u64 = run
                .flow_rows(flow)
                .filter(|row| row.time_s > WARM_UP_S.min(7.5) && row.time_s <= 15.0 + 1e-9)
                .map(|row| row.goodput_bytes)
                .sum();
            bytes as f64 * 8.0 / (15.0 - WARM_UP_S.min(7.5)) / 1000.0
        };
        let (f, tcp) = (goodput(UNDER_TEST), goodput(TCP));
        assert!(f > 0.0 && tcp > 0.0, "{f} {tcp}");
        let ratio = value(0).unwrap()[0].unwrap();
        assert!((ratio - f / tcp).abs() < 1e-9, "{ratio} vs {}", f / tcp);
        let jain = value(1).unwrap()[0].unwrap();
        assert_eq!(Some(jain), tfrc_output::jain_index(&[f, tcp]));
        let p = value(2).unwrap()[0].unwrap();
        assert!((0.0..1.0).contains(&p), "{p}");
        let rtt = value(3).unwrap()[0].unwrap();
        assert!(
            rtt > 0.020,
            "the RTT estimate {rtt} s is below the base RTT"
        );
        let outcome = judge(&asked[0], &[value(0), value(0)]);
        assert_eq!(outcome.status, Status::Reference);
        assert_eq!(outcome.interval.unwrap().n, 2);
    }
}
