//! `tfrc emulate` (relay mode) and `tfrc testbed` (namespaces and TUN devices): the command
//! line of the `tfrc-emu` crate (clap arguments, the runs, what they print).

use core::time::Duration;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use tfrc_emu::element_syntax::{CapacitySpec, LinkFlags, LinkSpec};
use tfrc_emu::relay::{Relay, RelayConfig};
use tfrc_emu::testbed::{self, Testbed, TestbedConfig, Topology};
use tfrc_emu::testbed_run::{self, Plan, RunOptions};
use tfrc_units::parse_duration_flag;

/// The per-direction link flags shared by `tfrc emulate` and `tfrc testbed up`.
#[derive(Debug, Clone, Args, Default)]
pub struct LinkArgs {
    /// Link rate (`1Mbps`, `1M`, `800kbps`); prefix `forward=` or `reverse=` for one direction.
    /// Repeatable. Default 10Mbps.
    #[arg(long, value_name = "[DIR=]RATE")]
    pub rate: Vec<String>,
    /// One-way propagation delay (`25ms`); `forward=`/`reverse=` prefix for one direction.
    #[arg(long, value_name = "[DIR=]DURATION")]
    pub delay: Vec<String>,
    /// Loss model: `bernoulli:P`, `exponential:GAP`,
    /// `gilbert-elliott:P_GB:P_BG[:loss_bad=L][:loss_good=L]`, netem's `gemodel:P%[:R%[:1-H%[:1-K%]]]`,
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
    /// Most senders served at once; a new sender beyond it takes the slot of the one idle the
    /// longest.
    #[arg(long, default_value_t = 64)]
    pub max_clients: usize,
    /// A sender with no traffic either way for this long is forgotten, freeing its slot.
    #[arg(long, default_value = "60s", value_parser = parse_duration_flag)]
    pub client_idle_timeout: Duration,
    /// Print the end report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the relay thread as SCHED_FIFO 10 (root or CAP_SYS_NICE): steadier timing on a
    /// busy machine.
    #[arg(long)]
    pub realtime: bool,
}

/// Runs `tfrc emulate`.
pub fn run_emulate(args: &EmulateArgs) -> Result<()> {
    let link = args.link.to_spec()?;
    let mut config = RelayConfig::new(args.listen, args.forward, link);
    config.seed = args.seed;
    config.header_overhead = args.header_overhead;
    config.max_clients = args.max_clients;
    config.client_idle_timeout = args.client_idle_timeout;
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
            "expired_clients": report.expired_clients,
            "evicted_clients": report.evicted_clients,
            "orphaned_packets": report.orphaned_packets,
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
                "{name}: {} packets in, {} delivered ({} bytes), {} dropped ({} by the loss model), {} marked in, {} marked out, {} ECN-marked",
                counters.arrivals,
                counters.deliveries,
                counters.delivery_bytes,
                counters.total_drops(),
                counters.drops_by_reason(tfrc_sim::DropReason::LossModel),
                counters.marked_in,
                counters.marked_out,
                counters.congestion_marks,
            );
        }
        println!(
            "{:.1} s, {} clients ({} forgotten idle, {} evicted for new ones), wake-up lateness p50 {:.1} µs, p99 {:.1} µs",
            report.seconds,
            report.clients,
            report.expired_clients,
            report.evicted_clients,
            report.wake_lateness_p50_us,
            report.wake_lateness_p99_us
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
        CapacitySpec::Rate(bits) => format!("{bits} bit/s"),
        CapacitySpec::Trace {
            path,
            offset,
            opportunity,
        } => {
            let rule = match opportunity {
                tfrc_sim::OpportunityUse::SharedBytes => "1500 shared bytes per opportunity",
                tfrc_sim::OpportunityUse::PacketPerOpportunity => "one packet per opportunity",
            };
            if offset.is_zero() {
                format!("trace {} ({rule})", path.display())
            } else {
                format!("trace {} from {:?} ({rule})", path.display(), offset)
            }
        }
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
        "ecn_marks": counters.congestion_marks,
    })
}

/// `tfrc testbed`: network namespaces joined through an emulated topology (root).
#[derive(Debug, Clone, Args)]
pub struct TestbedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TestbedCommand,
}

/// The `tfrc testbed` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum TestbedCommand {
    /// Create the namespaces and serve them until SIGINT/SIGTERM or `tfrc testbed down`.
    Up(UpArgs),
    /// Stop running testbeds and remove their namespaces (and leftovers of crashed ones).
    Down(DownArgs),
    /// Run a command inside a host's namespace: `tfrc testbed exec s1 -- tfrc send --to 10.200.0.3:5201`.
    Exec(ExecArgs),
    /// List running testbeds and their hosts.
    List,
    /// Run a scenario's flows for real through the emulated topology and write flows.csv,
    /// state.csv, links.csv and summary.json like `tfrc sim`.
    Run(RunArgs),
}

/// `tfrc testbed up`.
#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    /// Sender hosts s1…sN (at the left end of the link).
    #[arg(long, default_value_t = 1)]
    pub senders: usize,
    /// Receiver hosts r1…rM (at the right end).
    #[arg(long, default_value_t = 1)]
    pub receivers: usize,
    /// The link between senders and receivers (forward: senders → receivers).
    #[command(flatten)]
    pub link: LinkArgs,
    /// Take links, queues, markers and loss from a scenario file instead (hosts are the flows'
    /// endpoints and the leaf nodes; each flow gets a port, printed).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["senders", "receivers", "rate", "delay", "loss", "queue", "trace", "marker"])]
    pub scenario: Option<PathBuf>,
    /// Namespace prefix (must start with `tfrcemu`; default `tfrcemu<pid>`).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Seed of the links' random elements.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write `links.csv` rows of every link direction to this file.
    #[arg(long, value_name = "FILE")]
    pub links_csv: Option<PathBuf>,
    /// Interval of the `links.csv` rows.
    #[arg(long, default_value = "1s", value_parser = parse_duration_flag)]
    pub log_interval: Duration,
    /// Write a pcap capture (raw IP) of every packet leaving the emulated topology.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Run the emulator thread as SCHED_FIFO 10.
    #[arg(long)]
    pub realtime: bool,
    /// Serve for this long, then remove everything (default: until stopped).
    #[arg(long, value_parser = parse_duration_flag)]
    pub time: Option<Duration>,
}

/// `tfrc testbed down`.
#[derive(Debug, Clone, Args)]
pub struct DownArgs {
    /// Only this testbed (default: every testbed on the machine).
    #[arg(long)]
    pub prefix: Option<String>,
}

/// `tfrc testbed exec`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Host name (`s1`, `r1`, or a scenario node).
    pub host: String,
    /// Which testbed (default: the only one running).
    #[arg(long)]
    pub prefix: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `tfrc testbed run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The scenario file (the simulator's format).
    pub scenario: PathBuf,
    /// Output directory (flows.csv, state.csv, links.csv, summary.json, scenario.toml).
    #[arg(long, default_value = "out/testbed")]
    pub out: PathBuf,
    /// Override a key, as `tfrc sim --set` (e.g. `--set duration=30s`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// With a `[sweep]`: run the variant whose name contains this text (e.g. `profile=rfc5348`).
    #[arg(long)]
    pub variant: Option<String>,
    /// Kernel congestion control of the TCP flows whose variant is reno, newreno or sack
    /// (variant "cubic" and "bbr" run the kernel's cubic and bbr).
    #[arg(long, default_value = "reno")]
    pub tcp_congestion: String,
    /// Run the emulator thread as SCHED_FIFO 10.
    #[arg(long)]
    pub realtime: bool,
}

impl RunArgs {
    /// The run these flags ask for.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            scenario: self.scenario.clone(),
            out: self.out.clone(),
            set: self.set.clone(),
            variant: self.variant.clone(),
            tcp_congestion: self.tcp_congestion.clone(),
            realtime: self.realtime,
        }
    }
}

/// Runs `tfrc testbed …`.
pub fn run_testbed(args: &TestbedArgs) -> Result<()> {
    match &args.command {
        TestbedCommand::Up(up) => run_up(up),
        TestbedCommand::Down(down) => run_down(down),
        TestbedCommand::Exec(exec) => run_exec(exec),
        TestbedCommand::List => {
            let running = testbed::running_testbeds();
            if running.is_empty() {
                println!("no testbed running");
            }
            for (_, state) in running {
                println!("{} (pid {})", state.prefix, state.pid);
                for host in state.hosts {
                    println!(
                        "  {:<12} {:<15} netns {}",
                        host.name, host.address, host.namespace
                    );
                }
            }
            Ok(())
        }
        TestbedCommand::Run(run) => Ok(testbed_run::run(&run.options())?),
    }
}

/// Runs `tfrc testbed up`: the testbed of the flags (or of `--scenario`), served until a
/// signal, `--time` or `tfrc testbed down`.
fn run_up(args: &UpArgs) -> Result<()> {
    let (topology, ports) = up_topology(args)?;
    let mut config = TestbedConfig::new(topology);
    if let Some(prefix) = &args.prefix {
        config.prefix = prefix.clone();
    }
    config.seed = args.seed;
    config.links_csv = args.links_csv.clone().map(|path| (path, args.log_interval));
    config.pcap = args.pcap.clone();
    config.realtime_priority = args.realtime.then_some(10);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .context("cannot install the signal handler")?;
    }
    let testbed = Testbed::up(config)?;
    print_banner(&testbed, &ports);
    let started = std::time::Instant::now();
    while !stop.load(std::sync::atomic::Ordering::Relaxed)
        && testbed.is_serving()
        && args.time.is_none_or(|time| started.elapsed() < time)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = testbed.shutdown()?;
    eprintln!(
        "testbed down after {:.1} s: {} packets in, {} out, {} foreign, {} unroutable",
        report.seconds,
        report.packets_in,
        report.packets_out,
        report.foreign_packets,
        report.unroutable_packets
    );
    Ok(())
}

/// The topology `up` builds: a scenario's (with each flow's port, to print), or the dumbbell
/// of `--senders`, `--receivers` and the link flags.
fn up_topology(args: &UpArgs) -> Result<(Topology, Vec<(String, u16)>)> {
    Ok(match &args.scenario {
        Some(path) => {
            let scenario = tfrc_scenario::Scenario::from_path(path)?;
            let plan = Plan::new(&scenario.expand_counts())?;
            (plan.topology.clone(), plan.flow_ports())
        }
        None => {
            anyhow::ensure!(
                args.senders >= 1 && args.receivers >= 1 && args.senders + args.receivers <= 250,
                "--senders and --receivers must be at least 1, 250 hosts in all"
            );
            (
                Topology::dumbbell(args.senders, args.receivers, &args.link.to_spec()?),
                Vec::new(),
            )
        }
    })
}

/// The banner of a testbed that is up: its hosts, the flows' ports, how to use and stop it
/// (flushed line by line: scripts wait for it).
fn print_banner(testbed: &Testbed, ports: &[(String, u16)]) {
    print_flush(&format!("testbed {} is up:", testbed.prefix()));
    for host in testbed.hosts() {
        print_flush(&format!(
            "  {:<12} {:<15} netns {}",
            host.name, host.address, host.namespace
        ));
    }
    for (flow, port) in ports {
        print_flush(&format!("  flow {flow}: port {port}"));
    }
    print_flush(&format!(
        "run commands with `tfrc testbed exec HOST -- CMD`; stop with Ctrl-C or `tfrc testbed down --prefix {}`",
        testbed.prefix()
    ));
}

/// Writes `text` to standard output and flushes (for `up`'s banner, read by scripts).
fn print_flush(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

fn run_down(args: &DownArgs) -> Result<()> {
    let mut stopped = 0;
    for (path, state) in testbed::running_testbeds() {
        if args
            .prefix
            .as_ref()
            .is_some_and(|prefix| *prefix != state.prefix)
        {
            continue;
        }
        let _ = testbed::signal_process(state.pid, signal_hook::consts::SIGTERM);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while path.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        for host in &state.hosts {
            testbed::remove_namespace(&host.namespace);
        }
        let _ = std::fs::remove_file(&path);
        println!("removed testbed {} (pid {})", state.prefix, state.pid);
        stopped += 1;
    }
    let stale = testbed::remove_stale();
    if !stale.is_empty() {
        println!("removed leftovers: {}", stale.join(" "));
    }
    if stopped == 0 && stale.is_empty() {
        match &args.prefix {
            Some(prefix) => anyhow::bail!("no testbed {prefix} is running"),
            None => println!("no testbed running"),
        }
    }
    Ok(())
}

fn run_exec(args: &ExecArgs) -> Result<()> {
    let running = testbed::running_testbeds();
    let state = match &args.prefix {
        Some(prefix) => running
            .iter()
            .find(|(_, state)| state.prefix == *prefix)
            .map(|(_, state)| state)
            .ok_or_else(|| anyhow::anyhow!("no testbed {prefix} is running"))?,
        None => match running.as_slice() {
            [(_, state)] => state,
            [] => anyhow::bail!("no testbed is running; start one with `tfrc testbed up`"),
            _ => anyhow::bail!(
                "several testbeds are running ({}); choose one with --prefix",
                running
                    .iter()
                    .map(|(_, state)| state.prefix.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let host = state
        .hosts
        .iter()
        .find(|host| host.name == args.host)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no host {:?} in testbed {}; hosts: {}",
                args.host,
                state.prefix,
                state
                    .hosts
                    .iter()
                    .map(|host| host.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    let status = std::process::Command::new("ip")
        .args(["netns", "exec", &host.namespace])
        .args(&args.command)
        .status()
        .context("cannot run `ip netns exec`")?;
    std::process::exit(status.code().unwrap_or(1));
}
