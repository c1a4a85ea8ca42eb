//! `tfrc`: the command-line front end of the TFRC toolkit.

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use tfrc_proto::equation;

use tfrc_cli::{conformance, emu, ns2_compare, plot, reproduce, rmcat, sim, stream, sweep};

/// TFRC (RFC 5348) toolkit: the throughput equation, the simulator and the papers' experiments.
#[derive(Debug, Parser)]
#[command(name = "tfrc", version = tfrc_cli::LONG_VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Allowed sending rate from the TCP throughput equation (RFC 5348 §3.1, b = 1, t_RTO = 4R).
    Equation(EquationArgs),
    /// Reproduce every experiment of the papers in the simulator and write a report
    /// (index.html, report.md) with the papers' numbers beside ours.
    Reproduce(reproduce::ReproduceArgs),
    /// Print the papers' claims that `tfrc reproduce` judges (scenarios/claims.toml) as a
    /// Markdown catalogue: every claim's encoding, the verdict, threshold and cause words, the
    /// calibrated conditions (docs/claims.md is this output).
    Claims(reproduce::catalogue::ClaimsArgs),
    /// Run the RMCAT test cases of RFC 8867 §5 (scenarios/rmcat/) with media flows over TFRC,
    /// gTFRC and TFRC-SP and write a report (RFC 8868's metrics, one figure per case).
    Rmcat(rmcat::RmcatArgs),
    /// Send a TFRC (or --tcp: kernel TCP) flow to a `tfrc recv`, iperf3-style.
    Send(tfrc_cli::udp::SendArgs),
    /// Receive TFRC flows (or --tcp: TCP connections), iperf3-style.
    Recv(tfrc_cli::udp::RecvArgs),
    /// Run a scenario file in the simulator and write flows.csv, state.csv, links.csv and
    /// summary.json.
    Sim(sim::SimArgs),
    /// Run a scenario's [sweep] grid × seeds in parallel into one Parquet dataset (resumable;
    /// locally or on a Dask cluster).
    Sweep(sweep::SweepArgs),
    /// Run a scenario in ns-2.35 (output converted to our flows.csv/state.csv/links.csv), then
    /// in our simulator, and plot both on one figure.
    Ns2(ns2_compare::Ns2CompareArgs),
    /// Run a scenario in ns-3.37 (TCP Reno/NewReno/SACK/CUBIC/BBR, CBR and on/off flows over
    /// DropTail or RED links; output converted to our flows.csv/state.csv/links.csv/summary.json).
    Ns3(tfrc_cli::ns3_cmd::Ns3Args),
    /// Our simulator against ns-2.35 over a designed matrix of cells
    /// (conformance/matrix.toml), with replications: conformance.csv, index.html and
    /// "N of M cells agree".
    Conformance(conformance::ConformanceArgs),
    /// Overlay saved runs (of `sim`, `ns2`, `testbed run`) on one figure: throughput, RTT or any
    /// state column over time, CDFs, goodput against delay.
    Plot(plot::PlotArgs),
    /// Stream synthetic video over ETP and report frames on time / late / lost.
    Stream(stream::StreamArgs),
    /// UDP relay through an emulated link (rate, delay, loss, queue, trace, marker).
    Emulate(emu::EmulateArgs),
    /// Network namespaces joined through an emulated topology (root): up, down, exec, list, run.
    Testbed(emu::TestbedArgs),
    /// Print a shell completion script: `tfrc completions bash > /etc/bash_completion.d/tfrc`
    /// (zsh, fish, elvish, powershell too).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
struct EquationArgs {
    /// Segment size s in bytes.
    #[arg(
        long,
        short = 's',
        default_value_t = 1000.0,
        allow_negative_numbers = true
    )]
    packet_size: f64,
    /// Round-trip time R: `100ms`, `0.1s`, or a plain number of seconds (`0.1`).
    #[arg(long, short = 'r', allow_negative_numbers = true, value_parser = seconds_argument)]
    rtt: f64,
    /// Loss event rate p, in (0, 1].
    #[arg(
        long,
        short = 'p',
        required_unless_present = "rate",
        allow_negative_numbers = true
    )]
    loss_event_rate: Option<f64>,
    /// Inverse mode: the loss event rate that allows this rate: `2Mbps`, `800k`, or a plain
    /// number of bits/s (fractions and exponents allowed: `898657.87`, `1e6`).
    #[arg(
        long,
        conflicts_with = "loss_event_rate",
        allow_negative_numbers = true,
        value_parser = bits_per_second_argument
    )]
    rate: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// A duration in seconds as a real number: a plain number (`0.1`, `1e-3`) as it is, else the
/// toolkit's units grammar (`100ms`). The equation works in reals, so a plain number is not
/// rounded to the grammar's nanoseconds.
fn seconds_argument(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) => Ok(seconds),
        Err(_) => tfrc_units::parse_duration(text)
            .map(|duration| duration.as_secs_f64())
            .map_err(|error| error.to_string()),
    }
}

/// A rate in bits/s as a real number: a plain number as it is, else the units grammar (`2Mbps`).
fn bits_per_second_argument(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(bits) => Ok(bits),
        Err(_) => tfrc_units::parse_rate(text)
            .map(|rate| rate.bits_per_second() as f64)
            .map_err(|error| error.to_string()),
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // Every summary.json this process writes names the binary's version and git commit.
    tfrc_cli::record_tool();
    match cli.command {
        Command::Equation(args) => run_equation(&args),
        Command::Send(args) => tfrc_cli::udp::run_send(&args),
        Command::Recv(args) => tfrc_cli::udp::run_recv(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Ns2(args) => ns2_compare::run(&args),
        Command::Ns3(args) => tfrc_cli::ns3_cmd::run(&args),
        Command::Conformance(args) => conformance::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Reproduce(args) => reproduce::run(&args).map(drop),
        Command::Claims(args) => reproduce::catalogue::run(&args),
        Command::Rmcat(args) => rmcat::run(&args),
        Command::Stream(args) => stream::run(&args),
        Command::Emulate(args) => emu::run_emulate(&args),
        Command::Testbed(args) => emu::run_testbed(&args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "tfrc", &mut std::io::stdout());
            Ok(())
        }
    }
}

fn run_equation(args: &EquationArgs) -> Result<()> {
    if !(args.packet_size.is_finite() && args.packet_size > 0.0) {
        bail!(
            "--packet-size must be a positive number of bytes, got {}",
            args.packet_size
        );
    }
    if !(args.rtt.is_finite() && args.rtt > 0.0) {
        bail!(
            "--rtt must be a positive number of seconds, got {}",
            args.rtt
        );
    }
    let (p, x) = match (args.loss_event_rate, args.rate) {
        (Some(p), _) => {
            if !(p.is_finite() && p > 0.0 && p <= 1.0) {
                bail!("--loss-event-rate must be in (0, 1], got {p}");
            }
            (p, equation::throughput(args.packet_size, args.rtt, p))
        }
        (None, Some(bits_per_s)) => {
            if !(bits_per_s.is_finite() && bits_per_s > 0.0) {
                bail!("--rate must be a positive number of bits/s, got {bits_per_s}");
            }
            // The inverse clamps p to [1e-12, 1]: a rate outside what the equation gives there
            // has no loss event rate, which is said rather than answered with the clamp.
            let Some(p) =
                equation::attainable_loss_event_rate(args.packet_size, args.rtt, bits_per_s / 8.0)
            else {
                let bits = |p: f64| equation::throughput(args.packet_size, args.rtt, p) * 8.0;
                bail!(
                    "--rate {bits_per_s} bits/s is not attainable for s = {} B, R = {} s: the \
                     equation gives from {:.1} bits/s (p = 1) to {:.4e} bits/s (p = 1e-12)",
                    args.packet_size,
                    args.rtt,
                    bits(1.0),
                    bits(1e-12)
                );
            };
            let rate = equation::throughput(args.packet_size, args.rtt, p);
            (p, rate)
        }
        (None, None) => bail!("give --loss-event-rate (or --rate for the inverse)"),
    };
    if args.json {
        let object = serde_json::json!({
            "packet_size_bytes": args.packet_size,
            "rtt_s": args.rtt,
            "loss_event_rate": p,
            "x_bytes_per_s": x,
            "x_bps": x * 8.0,
            "x_packets_per_s": x / args.packet_size,
        });
        println!("{object}");
    } else {
        println!(
            "X = {:.1} bytes/s = {:.1} kbit/s = {:.2} packets/s  (s = {} B, R = {} s, p = {})",
            x,
            x * 8.0 / 1000.0,
            x / args.packet_size,
            args.packet_size,
            args.rtt,
            p
        );
    }
    Ok(())
}
