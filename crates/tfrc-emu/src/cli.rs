//! `tfrc emulate` (relay mode) and `tfrc testbed` (namespaces and TUN devices).

use core::time::Duration;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use crate::relay::{Relay, RelayConfig};
use crate::spec::{LinkFlags, LinkSpec};

/// The per-direction link flags shared by `tfrc emulate` and `tfrc testbed up`.
#[derive(Debug, Clone, Args, Default)]
pub struct LinkArgs {
    /// Link rate (`1Mbps`, `800kbps`); prefix `forward=` or `reverse=` for one direction.
    /// Repeatable. Default 10Mbps.
    #[arg(long, value_name = "[DIR=]RATE")]
    pub rate: Vec<String>,
    /// One-way propagation delay (`25ms`); `forward=`/`reverse=` prefix for one direction.
    #[arg(long, value_name = "[DIR=]DURATION")]
    pub delay: Vec<String>,
    /// Loss model: `bernoulli:P`, `exponential:GAP`, `gilbert-elliott:P_GB:P_BG[:LG:LB]`,
    /// `none`, optionally `:start=D:stop=D`.
    #[arg(long, value_name = "[DIR=]MODEL")]
    pub loss: Vec<String>,
    /// Queue: `droptail[:LIMIT]`, `red[:KEY=VALUE,…]`, `rio[:KEY=VALUE,…]` (default droptail:50).
    #[arg(long, value_name = "[DIR=]QUEUE")]
    pub queue: Vec<String>,
    /// Mahimahi delivery trace instead of a constant rate.
    #[arg(long, value_name = "[DIR=]FILE")]
    pub trace: Vec<String>,
    /// Token-bucket marker: `token-bucket:RATE:BUCKET_BYTES[:ports=P,P…]`.
    #[arg(long, value_name = "[DIR=]MARKER")]
    pub marker: Vec<String>,
}

impl LinkArgs {
    /// The link these flags describe.
    pub fn to_spec(&self) -> Result<LinkSpec> {
        Ok(LinkSpec::from_flags(&LinkFlags {
            rate: &self.rate,
            delay: &self.delay,
            trace: &self.trace,
            queue: &self.queue,
            loss: &self.loss,
            marker: &self.marker,
        })?)
    }
}

/// `tfrc emulate`: a UDP relay through one emulated duplex link.
#[derive(Debug, Clone, Args)]
pub struct EmulateArgs {
    /// Address senders send to (`127.0.0.1:6000`).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The receiver's address (`127.0.0.1:5201`).
    #[arg(long, value_name = "ADDR")]
    pub forward: SocketAddr,
    /// The emulated link.
    #[command(flatten)]
    pub link: LinkArgs,
    /// Seed of the loss model and RED/RIO.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bytes the link adds to each UDP payload (IPv4 + UDP = 28).
    #[arg(long, default_value_t = 28)]
    pub header_overhead: u32,
    /// Write `links.csv` rows (simulator schema) of both directions to this file.
    #[arg(long, value_name = "FILE")]
    pub links_csv: Option<PathBuf>,
    /// Interval of the `links.csv` rows.
    #[arg(long, default_value = "1s", value_parser = parse_duration_flag)]
    pub log_interval: Duration,
    /// Write a pcap capture of the packets leaving the emulated link.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Stop after this long (default: until SIGINT/SIGTERM).
    #[arg(long, value_parser = parse_duration_flag)]
    pub time: Option<Duration>,
    /// Most senders served at once.
    #[arg(long, default_value_t = 64)]
    pub max_clients: usize,
    /// Print the end report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the relay thread as SCHED_FIFO 10 (root or CAP_SYS_NICE): steadier timing on a
    /// busy machine.
    #[arg(long)]
    pub realtime: bool,
}

/// Parses a duration flag with the scenario syntax (`10s`, `250ms`).
pub fn parse_duration_flag(text: &str) -> Result<Duration, String> {
    tfrc_scenario::units::parse_duration(text).map_err(|error| error.message().to_string())
}

/// Runs `tfrc emulate`.
pub fn run_emulate(args: &EmulateArgs) -> Result<()> {
    let link = args.link.to_spec()?;
    let mut config = RelayConfig::new(args.listen, args.forward, link);
    config.seed = args.seed;
    config.header_overhead = args.header_overhead;
    config.max_clients = args.max_clients;
    config.links_csv = args.links_csv.clone().map(|path| (path, args.log_interval));
    config.pcap = args.pcap.clone();
    config.duration = args.time;
    config.realtime_priority = args.realtime.then_some(10);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .context("cannot install the signal handler")?;
    }
    let relay = Relay::bind(config)?;
    eprintln!(
        "Relaying {} -> {} through the emulated link (forward: {}; reverse: {})",
        relay.local_addr()?,
        args.forward,
        describe(&args.link, "forward"),
        describe(&args.link, "reverse"),
    );
    let report = relay.run(&stop)?;
    if args.json {
        let json = serde_json::json!({
            "seconds": report.seconds,
            "clients": report.clients,
            "refused_datagrams": report.refused_datagrams,
            "send_errors": report.send_errors,
            "wake_lateness_p50_us": report.wake_lateness_p50_us,
            "wake_lateness_p99_us": report.wake_lateness_p99_us,
            "forward": counters_json(&report.forward),
            "reverse": counters_json(&report.reverse),
        });
        println!("{json}");
    } else {
        for (name, counters) in [("forward", &report.forward), ("reverse", &report.reverse)] {
            println!(
                "{name}: {} packets in, {} delivered ({} bytes), {} dropped ({} by the loss model), {} marked in, {} marked out",
                counters.arrivals,
                counters.deliveries,
                counters.delivery_bytes,
                counters.total_drops(),
                counters.drops_by_reason(tfrc_sim::DropReason::LossModel),
                counters.marked_in,
                counters.marked_out,
            );
        }
        println!(
            "{:.1} s, {} clients, wake-up lateness p50 {:.1} µs, p99 {:.1} µs",
            report.seconds, report.clients, report.wake_lateness_p50_us, report.wake_lateness_p99_us
        );
    }
    Ok(())
}

fn describe(link: &LinkArgs, direction: &str) -> String {
    let spec = match link.to_spec() {
        Ok(spec) => spec,
        Err(_) => return String::new(),
    };
    let direction = if direction == "forward" {
        &spec.forward
    } else {
        &spec.reverse
    };
    let capacity = match &direction.capacity {
        crate::spec::CapacitySpec::Rate(bits) => format!("{bits} bit/s"),
        crate::spec::CapacitySpec::Trace(path) => format!("trace {}", path.display()),
    };
    format!(
        "{capacity}, {} ms, {:?}{}",
        direction.delay.as_secs_f64() * 1000.0,
        direction.queue,
        direction
            .loss
            .map(|loss| format!(", loss {:?}", loss.kind))
            .unwrap_or_default()
    )
}

/// The counters of a link direction as JSON.
pub fn counters_json(counters: &tfrc_sim::LinkCounters) -> serde_json::Value {
    serde_json::json!({
        "arrivals": counters.arrivals,
        "arrival_bytes": counters.arrival_bytes,
        "deliveries": counters.deliveries,
        "delivery_bytes": counters.delivery_bytes,
        "drops": counters.total_drops(),
        "drops_loss_model": counters.drops_by_reason(tfrc_sim::DropReason::LossModel),
        "drops_in": counters.drops_by_color(tfrc_sim::Color::In),
        "drops_out": counters.drops_by_color(tfrc_sim::Color::Out),
        "marked_in": counters.marked_in,
        "marked_out": counters.marked_out,
    })
}
