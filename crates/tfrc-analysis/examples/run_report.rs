//! A report over run directories, one section per run: the measurements of
//! `tfrc_analysis::measure`, throughput and RTT figures (PNG and SVG) and the raw files. It
//! shows the whole pipeline — load, measure, plot, report — that `tfrc reproduce` builds on.
//!
//! ```sh
//! cargo run -p tfrc-analysis --example run_report -- OUT RUN_DIR... [--disturbance 30,90]
//! ```
//!
//! `--disturbance START,END` (seconds) adds each flow's recovery time after it. Prints the
//! measurements and the time taken; open `OUT/index.html` in a browser.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tfrc_analysis::measure::{convergence_times, recovery_time, run_metrics};
use tfrc_analysis::metrics::{ConvergenceOptions, RecoveryOptions};
use tfrc_analysis::plot::{self, Source};
use tfrc_analysis::report::{format_value, Report, Section, Verdict};
use tfrc_analysis::run::{Direction, Run, FLOWS_FILE, LINKS_FILE, STATE_FILE, SUMMARY_FILE};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let started = Instant::now();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut disturbance = None;
    if let Some(index) = args.iter().position(|a| a == "--disturbance") {
        let value = args.get(index + 1).ok_or("--disturbance needs START,END")?;
        let (start, end) = value
            .split_once(',')
            .ok_or_else(|| format!("--disturbance {value}: expected START,END in seconds"))?;
        let parse = |text: &str| {
            text.trim()
                .parse::<f64>()
                .map_err(|e| format!("--disturbance {value}: {text}: {e}"))
        };
        disturbance = Some((parse(start)?, parse(end)?));
        args.drain(index..=index + 1);
    }
    if args.len() < 2 {
        return Err("usage: run_report OUT RUN_DIR... [--disturbance START,END]".into());
    }
    let out = PathBuf::from(&args[0]);
    let mut report = Report::new("TFRC runs")
        .intro("Measurements of each run, recomputed from its CSV files (docs/metrics.md).");
    for dir in &args[1..] {
        let run = Run::load(dir)?;
        report = report.section(section(&run, &out, disturbance)?);
    }
    let files = report.write(&out)?;
    println!(
        "wrote {} and {} in {:.2} s",
        files.markdown.display(),
        files.html.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn section(run: &Run, out: &Path, disturbance: Option<(f64, f64)>) -> Result<Section, Error> {
    let id = run.summary.scenario.clone();
    let dir = out.join(&id);
    let metrics = run_metrics(run);
    let mut section = Section::new(&id, format!("run of {id}")).setup(format!(
        "{} s, seed {}, {} flow(s); written by {}. Loaded from {}.",
        run.summary.duration_s,
        run.summary.seed,
        run.summary.flows.len(),
        run.summary.tool,
        run.dir.display()
    ));
    let source = [Source { name: "ours", run }];
    for extension in ["png", "svg"] {
        plot::throughput_over_time(
            &format!("{id}: throughput"),
            &source,
            &[],
            &[Direction::Sent, Direction::Received],
        )
        .draw(dir.join(format!("throughput.{extension}")))?;
        plot::rtt_over_time(&format!("{id}: RTT estimate"), &source, &[])
            .draw(dir.join(format!("rtt.{extension}")))?;
    }
    section = section
        .figure(
            format!("{id}/throughput.png"),
            "Throughput per flow, sender (dashed) and receiver (solid)",
        )
        .figure(format!("{id}/rtt.png"), "Senders' RTT estimate");
    println!("{id}:");
    for flow in &metrics.flows {
        let line = [
            (
                "goodput (kb/s)",
                format_value(flow.goodput_bps.map(|g| g / 1000.0), 1),
            ),
            ("receiving ratio", format_value(flow.receiving_ratio, 4)),
            ("mean p", format_value(flow.mean_p, 5)),
            ("mean RTT (s)", format_value(flow.mean_rtt_s, 3)),
            ("burstiness", format_value(flow.burstiness_index, 3)),
        ];
        for (quantity, value) in line {
            println!("  {} {quantity}: {value}", flow.name);
            section = section.measurement(format!("{}: {quantity}", flow.name), "—", value);
        }
        if let Some((start, end)) = disturbance {
            let recovery = recovery_time(run, &flow.name, start, end, RecoveryOptions::default())?;
            let value = format_value(recovery, 0);
            println!(
                "  {} recovery time after {start}–{end} s (s): {value}",
                flow.name
            );
            section = section.measurement(format!("{}: recovery time (s)", flow.name), "—", value);
        }
    }
    for convergence in convergence_times(run, ConvergenceOptions::default())? {
        let value = format_value(convergence.time_s, 0);
        println!(
            "  convergence after {} arrives at {} s (s): {value}",
            convergence.flow, convergence.arrival_s
        );
        section = section.measurement(
            format!("convergence after {} arrives (s)", convergence.flow),
            "—",
            value,
        );
    }
    let jain = format_value(metrics.jain_index, 3);
    let utilization = format_value(metrics.bottleneck_utilization, 3);
    println!("  Jain index: {jain}\n  bottleneck utilization: {utilization}");
    section = section.measurement("Jain index", "—", jain).measurement(
        "bottleneck utilization",
        "—",
        utilization,
    );
    let raw = dir.join("run");
    std::fs::create_dir_all(&raw)?;
    for name in [FLOWS_FILE, STATE_FILE, LINKS_FILE, SUMMARY_FILE] {
        std::fs::copy(run.dir.join(name), raw.join(name))?;
        section = section.raw_data(format!("{id}/run/{name}"));
    }
    Ok(section.verdict(Verdict::NotRun(
        "no paper result attached: this is a report of runs, not of an experiment".into(),
    )))
}
