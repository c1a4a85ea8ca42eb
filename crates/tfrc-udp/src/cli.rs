//! `tfrc send` and `tfrc recv`: argument definitions and the runs behind them, kept here so that
//! the `tfrc` binary only dispatches.
//!
//! Output follows iperf3: a line per interval while running and a summary at the end, or with
//! `--json` one JSON document with `start`, `intervals` and `end` (schema in `docs/udp-tools.md`).
//! SIGINT or SIGTERM ends a run cleanly with its summary and logs; a second one exits at once.

use core::time::Duration;

/// `println!` for the report on standard output: when the reader has gone (`tfrc send --json |
/// head -c 1`), the run ends quietly with the status a shell gives a process killed by SIGPIPE
/// (141), as iperf3 and other Unix tools do, instead of panicking.
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::cli::write_stdout(format_args!($($argument)*))
    };
}

/// Writes one line to standard output; see [`say!`].
pub(crate) fn write_stdout(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(line)
        .and_then(|()| stdout.write_all(b"\n"));
    if let Err(error) = written.and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("tfrc: cannot write to standard output: {error}");
        std::process::exit(1);
    }
}
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tfrc_proto::{Config, SmallPackets, Veno};

use crate::clock::unix_time_seconds;
use crate::control::{ReverseRequest, FLOW_OPTIONS_LEN};
use crate::receiver::{Announce, ReceiverEvent, ReceiverOptions, UdpReceiver};
use crate::sender::{SenderInterval, SenderOptions, SenderReport, UdpSender};
use crate::tcp::{TcpReceiver, TcpReceiverEvent, TcpReceiverOptions, TcpSender, TcpSenderOptions};
use tfrc_units::{format_bits_per_second, format_bytes};

/// A duration flag (`-t 10`, `-i 500ms`): the toolkit's units grammar, a bare number in seconds.
fn duration_argument(text: &str) -> Result<Duration, String> {
    tfrc_units::parse_duration_flag(text).map_err(|error| error.to_string())
}

/// A duration with its unit, zero allowed (`--timer-granularity 0s`: an exact timer).
fn exact_duration_argument(text: &str) -> Result<Duration, String> {
    tfrc_units::parse_duration(text).map_err(|error| error.to_string())
}

/// A rate flag in bits/s (`-b 2M`, `--target-rate 800kbps`), above zero.
fn rate_argument(text: &str) -> Result<f64, String> {
    tfrc_units::positive_rate(text)
        .map(|rate| rate.bits_per_second() as f64)
        .map_err(|error| error.to_string())
}

/// `-l`: a TFRC segment size (`1400`, `1.4kB`), within what one UDP datagram carries.
fn packet_size_argument(text: &str) -> Result<u32, String> {
    let bytes = tfrc_units::parse_size(text).map_err(|error| error.to_string())?;
    match u32::try_from(bytes) {
        Ok(bytes) if (FLOW_OPTIONS_LEN as u32..=65475).contains(&bytes) => Ok(bytes),
        _ => Err(format!(
            "{bytes} bytes is not a TFRC segment size: it must be {FLOW_OPTIONS_LEN} to 65475 \
             bytes (every payload starts with the {FLOW_OPTIONS_LEN}-byte flow options)"
        )),
    }
}

fn address_argument(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    match text.to_socket_addrs() {
        Ok(mut addresses) => addresses
            .next()
            .ok_or_else(|| format!("{text:?} resolves to no address")),
        Err(error) => Err(format!(
            "cannot read {text:?}: expected HOST:PORT such as 127.0.0.1:5201 ({error})"
        )),
    }
}

fn non_negative_argument(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("cannot read {text:?}: expected a number >= 0")),
    }
}

fn at_least_one_argument(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 1.0 => Ok(value),
        _ => Err(format!("cannot read {text:?}: expected a number >= 1")),
    }
}

/// `tfrc send`: a TFRC (or, with `--tcp`, kernel TCP) bulk flow to a `tfrc recv`.
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// Receiver address, HOST:PORT (or, as with iperf3, `-c HOST` and `-p PORT`).
    #[arg(long, value_name = "ADDR", value_parser = address_argument,
          required_unless_present = "client", conflicts_with = "client")]
    pub to: Option<SocketAddr>,
    /// Receiver host, as iperf3's `-c` (client mode); its port is `-p`.
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,
    /// Receiver port with `-c` (iperf3's `-p`, default 5201).
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        default_value_t = 5201,
        requires = "client"
    )]
    pub port: u16,
    /// How long to send: 30 (seconds), 10s, 500ms, 2min.
    #[arg(long, short = 't', value_name = "DURATION", default_value = "10s", value_parser = duration_argument)]
    pub time: Duration,
    /// How long to wait for the receiver's answer (its cookie) before the first data packet:
    /// 5 (seconds), 500ms. The run's time starts after it. (iperf3's flag takes milliseconds.)
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration_argument, conflicts_with = "tcp")]
    pub connect_timeout: Duration,
    /// TFRC segment size s in bytes: the payload of each packet (RFC 5348 §3.1, s excludes
    /// transport headers); the 32-byte TFRC header travels on top (UDP payload = s + 32).
    /// `-l` as iperf3's buffer length; `-s` is iperf3's server mode, `tfrc recv`.
    #[arg(long, short = 'l', default_value = "1000", conflicts_with = "tcp",
          value_parser = packet_size_argument)]
    pub packet_size: u32,
    /// gTFRC target rate g in bits/s (800k, 2M, 1.5Mbps): the sender uses max(g, X).
    #[arg(long, value_name = "RATE", value_parser = rate_argument, conflicts_with = "tcp")]
    pub target_rate: Option<f64>,
    /// Application rate cap in bits/s (iperf3's `-b`): the sender is data-limited above it.
    #[arg(long, short = 'b', value_name = "RATE", value_parser = rate_argument, conflicts_with = "tcp")]
    pub max_rate: Option<f64>,
    /// Several feedbacks per RTT: N = max(int(R / RTT_ref), 1) reports per RTT (e.g. 100ms).
    #[arg(long, value_name = "DURATION", value_parser = duration_argument, conflicts_with = "tcp")]
    pub rtt_ref: Option<Duration>,
    /// Veno loss differentiation: threshold beta in packets (paper default 1).
    #[arg(long, value_name = "PACKETS", value_parser = non_negative_argument, conflicts_with = "tcp")]
    pub veno_beta: Option<f64>,
    /// Veno stretch factor alpha (paper default 3); needs --veno-beta.
    #[arg(long, value_name = "FACTOR", value_parser = at_least_one_argument, requires = "veno_beta")]
    pub veno_alpha: Option<f64>,
    /// History discounting of old loss intervals (RFC 5348 §5.5).
    #[arg(long, conflicts_with = "tcp")]
    pub history_discounting: bool,
    /// Oscillation prevention by √RTT spacing (RFC 5348 §4.5).
    #[arg(long, conflicts_with = "tcp")]
    pub oscillation_damping: bool,
    /// TFRC-SP, the small-packet variant (RFC 4828): the rate of a TCP flow with 1460-byte
    /// segments less the headers, at most one packet per 10 ms, short loss intervals counting
    /// every lost packet. For flows of small packets such as VoIP (`-l 160 -b 64k`).
    #[arg(long, conflicts_with = "tcp")]
    pub small_packets: bool,
    /// TFRC-SP's H, the bytes of network and transport headers per packet (RFC 4828 §3: 40 by
    /// default; over IPv4 this tool's packets carry 20 + 8 + 32 = 60).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 40,
        requires = "small_packets"
    )]
    pub header_size: u32,
    /// Send the data packets ECN-capable (ECT(0) in the IP header, RFC 3168): an AQM that
    /// marks (the emulator's RED or RIO with ecn=true) then marks them CE instead of dropping
    /// them, and `tfrc recv` counts each mark as a loss (RFC 5348 §5.1; `ecn_marked`).
    #[arg(long, conflicts_with = "tcp")]
    pub ecn: bool,
    /// Local address to send from (TFRC), e.g. 127.0.0.1:0.
    #[arg(long, value_name = "ADDR", value_parser = address_argument, conflicts_with = "tcp")]
    pub bind: Option<SocketAddr>,
    /// Run the sending thread with real-time priority (SCHED_FIFO 10; root or CAP_SYS_NICE), so
    /// that pacing holds on a busy machine.
    #[arg(long, conflicts_with = "tcp")]
    pub realtime: bool,
    /// t_gran of RFC 5348 §4.6, with its unit (1ms, 100us, 0s): packets may leave
    /// min(t_ipi, t_gran)/2 early, and a sender woken late sends at most max(t_ipi, t_gran) of
    /// its schedule at once. Default: the larger of 1 ms and the timer error measured at start,
    /// raised while the flow runs to the latest wake-up of the last second (at most 10 ms) on a
    /// busy machine; given, it stays fixed.
    #[arg(long, value_name = "DURATION", value_parser = exact_duration_argument, conflicts_with = "tcp")]
    pub timer_granularity: Option<Duration>,
    /// Write the flow's state to this CSV file (TFRC sender columns, or TCP_INFO with --tcp).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Interval of the CSV rows.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = duration_argument)]
    pub log_interval: Duration,
    /// Interval of the report lines.
    #[arg(long, short = 'i', value_name = "DURATION", default_value = "1s", value_parser = duration_argument)]
    pub interval: Duration,
    /// Print one JSON document (start / intervals / end, as iperf3's `-J`) instead of text.
    #[arg(long, short = 'J')]
    pub json: bool,
    /// Parallel TFRC flows to the receiver (iperf3's `-P`): each its own socket, session and
    /// rate control; reported per flow and summed. With `--log send.csv`, flow K logs to
    /// `send-K.csv`.
    #[arg(long, short = 'P', default_value_t = 1, conflicts_with = "tcp",
          value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,
    /// Reverse mode, as iperf3's `-R`: the `tfrc recv` at the address sends the flow (with
    /// this command's -t, -l, -b, --target-rate) and this command receives and reports it.
    #[arg(long, short = 'R', conflicts_with_all = ["tcp", "parallel"])]
    pub reverse: bool,
    /// Send a kernel TCP bulk flow instead of TFRC.
    #[arg(long)]
    pub tcp: bool,
    /// TCP congestion control (reno, cubic, bbr, …); needs --tcp.
    #[arg(long, value_name = "NAME", requires = "tcp")]
    pub congestion: Option<String>,
}

impl SendArgs {
    /// The receiver's address: `--to`, or `-c HOST` with `-p PORT` (a host name is resolved;
    /// its first address is used).
    pub fn destination(&self) -> Result<SocketAddr> {
        if let Some(to) = self.to {
            return Ok(to);
        }
        let host = self.client.as_deref().ok_or_else(|| {
            anyhow::anyhow!("give the receiver: --to HOST:PORT, or -c HOST [-p PORT]")
        })?;
        use std::net::ToSocketAddrs as _;
        (host, self.port)
            .to_socket_addrs()
            .with_context(|| format!("-c {host}: cannot resolve the host"))?
            .next()
            .ok_or_else(|| anyhow::anyhow!("-c {host}: the host has no address"))
    }
}

impl RecvArgs {
    /// The address to listen on: `--listen`, or every address on `-p PORT`, or 0.0.0.0:5201.
    pub fn listen_address(&self) -> SocketAddr {
        self.listen
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], self.port.unwrap_or(5201))))
    }
}

/// `tfrc recv`: receive TFRC flows (several at once) or, with `--tcp`, TCP connections.
#[derive(Debug, Clone, Args)]
pub struct RecvArgs {
    /// Address to listen on, HOST:PORT (port 0: any free port, printed at start; default
    /// 0.0.0.0:5201, or 0.0.0.0:PORT with `-p`).
    #[arg(long, value_name = "ADDR", value_parser = address_argument, conflicts_with = "port")]
    pub listen: Option<SocketAddr>,
    /// Port to listen on, on every address (iperf3's `-p`).
    #[arg(short = 'p', long = "port", value_name = "PORT")]
    pub port: Option<u16>,
    /// Server mode, as iperf3's `-s`: accepted for habit (`tfrc recv` is the server).
    #[arg(short = 's', long = "server")]
    pub server: bool,
    /// Print one JSON document (start / intervals / end, as iperf3's `-J`) at exit instead of
    /// text.
    #[arg(long, short = 'J')]
    pub json: bool,
    /// Interval of the report lines.
    #[arg(long, short = 'i', value_name = "DURATION", default_value = "1s", value_parser = duration_argument)]
    pub interval: Duration,
    /// Write every flow's state to this CSV file (rows carry the flow id).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Interval of the CSV rows.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = duration_argument)]
    pub log_interval: Duration,
    /// Exit after the first flow ends (like iperf3 -1).
    #[arg(long, short = '1')]
    pub once: bool,
    /// Refuse `tfrc send -R`'s requests to send a flow back (by default each is served, at most
    /// --max-flows at once).
    #[arg(long)]
    pub no_reverse: bool,
    /// Receive kernel TCP connections instead of TFRC.
    #[arg(long)]
    pub tcp: bool,
    /// Most flows served at once (TFRC: open and recently ended).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_flows: u32,
    /// A TFRC flow with no packet for this long is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration_argument, conflicts_with = "tcp")]
    pub idle_timeout: Duration,
    /// Lie in the feedback, to test a sender's defences (docs/udp-tools.md, threat model):
    /// p=0, p=min, p=VALUE, p/N, x-recv=BYTES_PER_S, t-delay+MICROS, merge, tail, synthetic,
    /// no-loss, since-first, replay; several joined by commas.
    #[arg(long, value_name = "LIES", value_parser = lies_argument, conflicts_with = "tcp")]
    pub lie: Option<Lies>,
}

/// The lies of `--lie` ([`tfrc_proto::adversary::Lie`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Lies(pub Vec<tfrc_proto::adversary::Lie>);

/// `--lie`: lies joined by commas.
fn lies_argument(text: &str) -> std::result::Result<Lies, String> {
    tfrc_proto::adversary::Lie::parse_list(text)
        .map(Lies)
        .map_err(|error| error.to_string())
}

/// A stop flag set by SIGINT or SIGTERM; a second signal exits at once (status 130).
fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .context("cannot install the signal handler")?;
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install the signal handler")?;
    }
    Ok(stop)
}

/// A time in seconds as people read an RTT: `12.345 ms`, or `-` when unknown.
fn optional_millis(seconds: Option<f64>) -> String {
    seconds.map_or_else(
        || "-".to_string(),
        |seconds| format!("{:.3} ms", seconds * 1e3),
    )
}

fn version() -> String {
    format!("tfrc {}", env!("CARGO_PKG_VERSION"))
}

/// One flow of `tfrc send` as the start of the report names it.
struct FlowName {
    session: String,
    flow_id: String,
    local: String,
}

/// `--log FILE` for flow `index` of `count`: the file itself for one flow, `STEM-K.EXT`
/// (K = 1…N) for each of several.
fn flow_log_path(path: &std::path::Path, index: usize, count: u32) -> PathBuf {
    if count <= 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(extension) => format!("{stem}-{}.{}", index + 1, extension.to_string_lossy()),
        None => format!("{stem}-{}", index + 1),
    };
    path.with_file_name(name)
}

/// Runs `tfrc send`: one TFRC flow, or `-P N` flows in parallel (each its own socket, session
/// and core, as iperf3's `-P` opens N streams), reported per flow and summed.
pub fn run_send(args: &SendArgs) -> Result<()> {
    let stop = stop_on_signals()?;
    let to = args.destination()?;
    if args.tcp {
        return run_send_tcp(args, to, &stop);
    }
    if args.reverse {
        return run_send_reverse(args, to, &stop);
    }
    if args.parallel > 1 && args.bind.is_some_and(|bind| bind.port() != 0) {
        bail!(
            "--bind {}: {} parallel flows cannot share one port; give port 0",
            args.bind.unwrap_or(to),
            args.parallel
        );
    }
    let mut config = Config {
        packet_size: args.packet_size,
        target_rate: args.target_rate.map(|bits| bits / 8.0),
        rtt_ref: args.rtt_ref,
        history_discounting: args.history_discounting,
        oscillation_damping: args.oscillation_damping,
        timer_granularity: args
            .timer_granularity
            .unwrap_or(Config::default().timer_granularity),
        small_packets: args.small_packets.then(|| SmallPackets {
            header_size: args.header_size,
            ..SmallPackets::default()
        }),
        ..Config::default()
    };
    if let Some(beta) = args.veno_beta {
        config.veno = Some(Veno {
            beta,
            alpha: args.veno_alpha.unwrap_or(Veno::default().alpha),
        });
    }
    let mut senders = Vec::new();
    for index in 0..args.parallel as usize {
        let mut options = SenderOptions::new(to);
        options.bind = args.bind;
        options.duration = args.time;
        options.connect_timeout = args.connect_timeout;
        options.config = config.clone();
        options.keep_timer_granularity = args.timer_granularity.is_some();
        options.max_rate = args.max_rate.map(|bits| bits / 8.0);
        options.report_interval = Some(args.interval);
        options.log = args
            .log
            .as_ref()
            .map(|path| (flow_log_path(path, index, args.parallel), args.log_interval));
        options.realtime_priority = args.realtime.then_some(10);
        options.ecn = args.ecn;
        senders.push(UdpSender::new(options).context("cannot start the TFRC sender")?);
    }
    let names: Vec<FlowName> = senders
        .iter()
        .map(|sender| FlowName {
            session: format!("{:08x}", sender.session_id()),
            flow_id: sender.flow_id(),
            local: sender
                .local_addr()
                .map(|address| address.to_string())
                .unwrap_or_default(),
        })
        .collect();
    let calibration = senders[0].calibration();
    let config = senders[0].config().clone();
    let first = &names[0];
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "sender",
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": first.local,
        "session_id": first.session,
        "flow_id": first.flow_id,
        // iperf3's list of streams, with our session and flow ids.
        "connected": names.iter().map(|name| json!({
            "local": name.local,
            "session_id": name.session,
            "flow_id": name.flow_id,
        })).collect::<Vec<_>>(),
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "packet_size": args.packet_size,
            "num_streams": args.parallel,
            "target_rate_bps": args.target_rate,
            "max_rate_bps": args.max_rate,
            "rtt_ref_s": args.rtt_ref.map(|rtt| rtt.as_secs_f64()),
            "veno": config.veno.map(|veno| json!({"beta": veno.beta, "alpha": veno.alpha})),
            "history_discounting": config.history_discounting,
            "oscillation_damping": config.oscillation_damping,
            "small_packets": config.small_packets.map(|small| json!({
                "nominal_segment_size": small.nominal_segment_size,
                "header_size": small.header_size,
            })),
            "ecn": args.ecn,
            "log": args.log.as_ref().map(|path| path.display().to_string()),
            "realtime": args.realtime,
        },
        // Many datagrams per system call (UDP GSO), or one ("none") where the kernel has no GSO.
        "offload": {"send": senders[0].send_offload()},
        "timer": {
            "sleep_late_p50_us": calibration.sleep_late_p50_us,
            "sleep_late_p90_us": calibration.sleep_late_p90_us,
            "spin_margin_us": calibration.spin_margin_us,
            "timer_granularity_us": config.timer_granularity.as_secs_f64() * 1e6,
        },
    });
    if !args.json {
        for name in &names {
            say!(
                "Connecting to {} from {}, TFRC session {}, s = {} bytes, {} s",
                to,
                name.local,
                name.session,
                args.packet_size,
                args.time.as_secs_f64()
            );
        }
        say!(
            "Timer: kernel sleep late by {:.0} µs (p50) / {:.0} µs (p90); spinning the last {:.0} µs; granularity {:.1} µs",
            calibration.sleep_late_p50_us,
            calibration.sleep_late_p90_us,
            calibration.spin_margin_us,
            config.timer_granularity.as_secs_f64() * 1e6
        );
        say!(
            "[      ID] Interval          Transfer      Bitrate         X (rate)        p           RTT"
        );
    }
    let (intervals, results) = run_flows(senders, &names, &stop, args.json);
    let mut reports = Vec::new();
    for result in results {
        match result {
            Ok(report) => reports.push(report),
            Err(error) => {
                if args.json {
                    print_failed_document(start, intervals, &error)?;
                }
                return Err(error);
            }
        }
    }
    let failures: Vec<String> = reports
        .iter()
        .zip(&names)
        .filter_map(|(report, name)| {
            let failure = flow_failure(report, to)?;
            Some(if reports.len() > 1 {
                format!("flow {}: {failure}", name.session)
            } else {
                failure
            })
        })
        .collect();
    let failure = (!failures.is_empty()).then(|| failures.join("; "));
    if args.json {
        // One flow: its end at the top, as before -P; several: each in `streams`.
        let mut end = if reports.len() == 1 {
            flow_end(&reports[0])
        } else {
            json!({
                "streams": reports.iter().zip(&names).map(|(report, name)| {
                    let mut stream = flow_end(report);
                    stream["session_id"] = json!(name.session);
                    stream["flow_id"] = json!(name.flow_id);
                    stream
                }).collect::<Vec<_>>(),
                "cpu_utilization_percent": reports[0].cpu_utilization_percent,
            })
        };
        end["sum_sent"] = sum_sent(&reports);
        end["sum_received"] = sum_received(&reports);
        let mut document = json!({
            "start": start,
            "intervals": intervals,
            "end": end,
        });
        if let Some(failure) = &failure {
            document["error"] = json!(failure);
        }
        say!("{}", json_text(&document)?);
    } else {
        say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        for (report, name) in reports.iter().zip(&names) {
            print_flow_end(&name.session, report);
        }
        if reports.len() > 1 {
            let sent = sum_sent(&reports);
            say!(
                "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender",
                0.0,
                sent["seconds"].as_f64().unwrap_or_default(),
                format_bytes(sent["bytes"].as_f64().unwrap_or_default()),
                format_bits_per_second(sent["bits_per_second"].as_f64().unwrap_or_default()),
            );
            let received = sum_received(&reports);
            if received.is_object() {
                say!(
                    "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver  lost {}/{} ({:.3}%)",
                    0.0,
                    received["seconds"].as_f64().unwrap_or_default(),
                    format_bytes(received["bytes"].as_f64().unwrap_or_default()),
                    format_bits_per_second(
                        received["bits_per_second"].as_f64().unwrap_or_default()
                    ),
                    received["lost_packets"],
                    received["packets"],
                    received["lost_percent"].as_f64().unwrap_or_default(),
                );
            }
        }
    }
    if let Some(failure) = failure {
        bail!(failure);
    }
    Ok(())
}

/// As iperf3 -J: a run that fails still prints its document, with an empty `end` and what
/// went wrong in `error`.
fn print_failed_document(start: Value, intervals: Vec<Value>, error: &anyhow::Error) -> Result<()> {
    let document = json!({
        "start": start,
        "intervals": intervals,
        "end": {},
        "error": format!("{error:#}"),
    });
    say!("{}", json_text(&document)?);
    Ok(())
}

/// Runs every sender on its own thread and reports their intervals as they come: a text line
/// per flow and interval (and a `[SUM]` line once every flow has given that interval), or, in
/// JSON mode, iperf3's `intervals[]` (`streams` of every flow, and their `sum`). Returns the
/// JSON intervals and each flow's result, in flow order.
fn run_flows(
    senders: Vec<UdpSender>,
    names: &[FlowName],
    stop: &AtomicBool,
    json_mode: bool,
) -> (Vec<Value>, Vec<Result<SenderReport>>) {
    let count = senders.len();
    let (sender_side, receiver_side) = std::sync::mpsc::channel::<(usize, SenderInterval)>();
    std::thread::scope(|scope| {
        let handles: Vec<_> = senders
            .into_iter()
            .enumerate()
            .map(|(index, sender)| {
                let channel = sender_side.clone();
                scope.spawn(move || {
                    sender.run(stop, &mut |interval| {
                        let _ = channel.send((index, *interval));
                    })
                })
            })
            .collect();
        drop(sender_side);
        // Interval k of every flow, filled as they come; a flow's k-th report is its k-th
        // message on the channel.
        let mut groups: Vec<Vec<Option<SenderInterval>>> = Vec::new();
        let mut given = vec![0usize; count];
        let mut printed = 0;
        let mut intervals = Vec::new();
        for (index, interval) in receiver_side {
            let number = given[index];
            given[index] += 1;
            if groups.len() <= number {
                groups.resize(number + 1, vec![None; count]);
            }
            groups[number][index] = Some(interval);
            if !json_mode {
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  {:>14}  {:<10.6}  {}",
                    names[index].session,
                    interval.start,
                    interval.end,
                    format_bytes(interval.bytes as f64),
                    format_bits_per_second(interval.bits_per_second),
                    format_bits_per_second(interval.sending_rate_bps),
                    interval.p,
                    optional_millis(interval.rtt_s),
                );
            }
            while printed < groups.len() && groups[printed].iter().all(Option::is_some) {
                intervals.push(interval_json(&groups[printed], names));
                if !json_mode && count > 1 {
                    let sum = &intervals[printed]["sum"];
                    say!(
                        "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}",
                        sum["start"].as_f64().unwrap_or_default(),
                        sum["end"].as_f64().unwrap_or_default(),
                        format_bytes(sum["bytes"].as_f64().unwrap_or_default()),
                        format_bits_per_second(sum["bits_per_second"].as_f64().unwrap_or_default()),
                    );
                }
                printed += 1;
            }
        }
        // Intervals that not every flow reached (a flow ended early) are reported with the
        // flows that did.
        for group in &groups[printed..] {
            intervals.push(interval_json(group, names));
        }
        let results = handles
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(result) => result.map_err(anyhow::Error::from),
                Err(_) => Err(anyhow::anyhow!("a sending thread panicked")),
            })
            .collect();
        (intervals, results)
    })
}

/// One of iperf3's `intervals[]` entries: the reports of one interval of the flows that gave
/// it (`group[k]`: flow k's, if any) and their sum.
fn interval_json(group: &[Option<SenderInterval>], names: &[FlowName]) -> Value {
    let given: Vec<(&FlowName, &SenderInterval)> = names
        .iter()
        .zip(group)
        .filter_map(|(name, interval)| Some((name, interval.as_ref()?)))
        .collect();
    let streams: Vec<Value> = given
        .iter()
        .map(|(name, interval)| {
            let mut stream = serde_json::to_value(interval).unwrap_or(Value::Null);
            stream["flow_id"] = json!(name.flow_id);
            stream
        })
        .collect();
    let start = given
        .iter()
        .map(|(_, i)| i.start)
        .fold(f64::INFINITY, f64::min);
    let end = given
        .iter()
        .map(|(_, i)| i.end)
        .fold(f64::NEG_INFINITY, f64::max);
    json!({
        "streams": streams,
        "sum": {
            "start": start,
            "end": end,
            "seconds": end - start,
            "bytes": given.iter().map(|(_, i)| i.bytes).sum::<u64>(),
            "packets": given.iter().map(|(_, i)| i.packets).sum::<u64>(),
            "bits_per_second": given.iter().map(|(_, i)| i.bits_per_second).sum::<f64>(),
        },
    })
}

/// Why a flow counts as failed: nothing it heard was usable, or it heard nothing at all.
fn flow_failure(report: &SenderReport, to: SocketAddr) -> Option<String> {
    let stats = &report.stats;
    let refused = stats.malformed
        + stats.foreign
        + stats.invalid_echo
        + stats.unproven
        + stats.hidden_loss
        + stats.unconfirmed
        + stats.replayed
        + stats.false_intervals
        + stats.under_reported;
    if stats.feedbacks == 0 && refused > 0 {
        // Something answered, but nothing it said could be used (a lying or foreign peer).
        Some(format!(
            "no feedback from {} was accepted in {:.1} s: {refused} refused ({} unproven, {} hiding loss, {} false loss intervals, {} under-reporting p, {} unconfirmed, {} replayed, {} foreign, {} invalid echo, {} malformed)",
            to,
            report.seconds,
            stats.unproven,
            stats.hidden_loss,
            stats.false_intervals,
            stats.under_reported,
            stats.unconfirmed,
            stats.replayed,
            stats.foreign,
            stats.invalid_echo,
            stats.malformed
        ))
    } else if stats.feedbacks == 0 {
        // iperf3 fails when it cannot reach its server; a TFRC sender that never heard from its
        // receiver has measured nothing either.
        Some(format!(
            "no feedback arrived from {} in {:.1} s: is `tfrc recv` listening there?",
            to, report.seconds
        ))
    } else {
        None
    }
}

/// iperf3's `sum_sent` over the flows: bytes and rates add up, over the longest flow's time.
fn sum_sent(reports: &[SenderReport]) -> Value {
    let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
    iperf3_sum(
        seconds,
        reports.iter().map(|r| r.bytes).sum(),
        reports.iter().map(|r| r.bits_per_second).sum(),
        None,
    )
}

/// iperf3's `sum_received` over the flows (null when a receiver did not acknowledge its end of
/// session): bytes, rates, lost and sent packets add up; `jitter_ms` is the flows' mean, as
/// iperf3's sum of UDP streams.
fn sum_received(reports: &[SenderReport]) -> Value {
    let Some(receivers) = reports
        .iter()
        .map(|report| report.receiver)
        .collect::<Option<Vec<_>>>()
    else {
        return Value::Null;
    };
    let sent: u64 = reports.iter().map(|r| r.packets).sum();
    let received: u64 = receivers.iter().map(|r| r.packets).sum();
    let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let mut sum = iperf3_sum(
        seconds,
        receivers.iter().map(|r| r.bytes).sum(),
        receivers.iter().map(|r| r.bits_per_second).sum(),
        Some((sent.saturating_sub(received), sent)),
    );
    sum["jitter_ms"] =
        json!(receivers.iter().map(|r| r.jitter_ms).sum::<f64>() / receivers.len() as f64);
    sum
}

/// The `end` of one flow: what it sent, what its receiver acknowledged, and its TFRC state.
fn flow_end(report: &SenderReport) -> Value {
    let stats = &report.stats;
    let state = &report.final_state;
    json!({
        "reason": report.reason,
        "sender": {
            "seconds": report.seconds,
            "packets": report.packets,
            "bytes": report.bytes,
            "payload_bytes": report.payload_bytes,
            "bits_per_second": report.bits_per_second,
        },
        "receiver": report.receiver,
        "mean_p": report.mean_p,
        "rtt": report.rtt,
        "pacing": report.pacing,
        "timer_granularity_max_us": report.timer_granularity_max_us,
        "counters": {
            "feedbacks": stats.feedbacks,
            "malformed": stats.malformed,
            "foreign": stats.foreign,
            "invalid_echo": stats.invalid_echo,
            "unproven": stats.unproven,
            "hidden_loss": stats.hidden_loss,
            "unconfirmed": stats.unconfirmed,
            "replayed": stats.replayed,
            "false_intervals": stats.false_intervals,
            "under_reported": stats.under_reported,
            "lies": stats.lies,
            "p_raised": stats.p_raised,
            "x_recv_capped": stats.x_recv_capped,
            "no_feedback_expiries": stats.no_feedback_expiries,
            "send_errors": report.send_errors,
            "icmp_errors": report.icmp_errors,
        },
        "final_state": {
            "x_bps": finite(state.x * 8.0),
            "sending_rate_bps": finite(state.sending_rate * 8.0),
            "x_calc_bps": finite(state.x_calc * 8.0),
            "x_recv_bps": finite(state.x_recv * 8.0),
            "p": state.p,
            "rtt_s": state.rtt.map(|rtt| rtt.as_secs_f64()),
            "rto_s": state.rto.as_secs_f64(),
            "slow_start": state.slow_start,
        },
        "cpu_utilization_percent": report.cpu_utilization_percent,
    })
}

/// The text summary of one flow.
fn print_flow_end(session: &str, report: &SenderReport) {
    let stats = &report.stats;
    say!(
        "[{session}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender    {} packets",
        0.0,
        report.seconds,
        format_bytes(report.bytes as f64),
        format_bits_per_second(report.bits_per_second),
        report.packets
    );
    match report.receiver {
        Some(receiver) => say!(
            "[{session}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver  lost {}/{} ({:.3}%), {} loss events",
            0.0,
            report.seconds,
            format_bytes(receiver.bytes as f64),
            format_bits_per_second(receiver.bits_per_second),
            report.packets.saturating_sub(receiver.packets),
            report.packets,
            receiver.loss_ratio * 100.0,
            receiver.loss_events,
        ),
        None => say!("[{session}] receiver did not acknowledge the end of the session"),
    }
    say!(
        "mean p {:.6}; RTT mean {} (min {}, max {}); pacing error p50 {:.1} µs, p99 {:.1} µs; CPU {:.1}%",
        report.mean_p,
        optional_millis(report.rtt.mean_s),
        optional_millis(report.rtt.min_s),
        optional_millis(report.rtt.max_s),
        report.pacing.p50_us,
        report.pacing.p99_us,
        report.cpu_utilization_percent.host_total,
    );
    say!(
        "feedback: {} accepted, {} malformed, {} foreign, {} invalid echo, {} unproven, {} hiding loss, {} false loss intervals, {} under-reporting p, {} replayed; {} send errors, {} ICMP errors{}",
        stats.feedbacks,
        stats.malformed,
        stats.foreign,
        stats.invalid_echo,
        stats.unproven,
        stats.hidden_loss,
        stats.false_intervals,
        stats.under_reported,
        stats.replayed,
        report.send_errors,
        report.icmp_errors,
        if report.reason == crate::sender::EndReason::Interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
}

/// An iperf3 `sum_sent` / `sum_received` object: the whole run from 0 to `seconds`, and for
/// datagrams `(lost, sent)` packets as iperf3's `lost_packets`, `packets`, `lost_percent`.
fn iperf3_sum(
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    lost_of: Option<(u64, u64)>,
) -> Value {
    let mut sum = json!({
        "start": 0.0,
        "end": seconds,
        "seconds": seconds,
        "bytes": bytes,
        "bits_per_second": finite(bits_per_second),
    });
    if let Some((lost, sent)) = lost_of {
        sum["lost_packets"] = json!(lost);
        sum["packets"] = json!(sent);
        sum["lost_percent"] = finite(if sent > 0 {
            lost as f64 * 100.0 / sent as f64
        } else {
            0.0
        });
    }
    sum
}

/// The document as printed: pretty, with every non-integer number cut to 12 significant digits,
/// so that sums of binary fractions read as the decimals they stand for (`0.596343`, not
/// `0.5963430000000001`); 12 digits keep microseconds over a day (86400.000001 s) and a
/// 10 Gb/s rate to 0.01 b/s.
fn json_text(document: &Value) -> serde_json::Result<String> {
    fn tidy(value: &mut Value) {
        match value {
            Value::Number(number) if number.is_f64() => {
                if let Some(x) = number.as_f64() {
                    let rounded: f64 = format!("{x:.11e}").parse().unwrap_or(x);
                    if let Some(tidied) = serde_json::Number::from_f64(rounded) {
                        *number = tidied;
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(tidy),
            Value::Object(map) => map.values_mut().for_each(tidy),
            _ => {}
        }
    }
    let mut document = document.clone();
    tidy(&mut document);
    serde_json::to_string_pretty(&document)
}

/// JSON has no infinity: infinite rates become null.
fn finite(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else {
        Value::Null
    }
}

fn run_send_tcp(args: &SendArgs, to: SocketAddr, stop: &AtomicBool) -> Result<()> {
    let mut options = TcpSenderOptions::new(to);
    options.duration = args.time;
    options.congestion = args.congestion.clone();
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    let sender = TcpSender::connect(options)?;
    let local = sender
        .local_addr()
        .map(|address| address.to_string())
        .unwrap_or_default();
    let congestion = sender.congestion().to_string();
    let start = json!({
        "version": version(),
        "protocol": "tcp",
        "role": "sender",
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": local,
        "flow_id": sender.flow_id(),
        "congestion": congestion,
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "log": args.log.as_ref().map(|path| path.display().to_string()),
        },
    });
    if !args.json {
        say!(
            "Connecting to {} from {local}, TCP {congestion}, {} s",
            to,
            args.time.as_secs_f64()
        );
        say!("[ID] Interval          Transfer      Bitrate          cwnd    ssthresh  RTT         retr");
    }
    let mut intervals = Vec::new();
    let json_mode = args.json;
    let summary = sender.run(stop, &mut |interval| {
        if json_mode {
            intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
        } else if let Some(stream) = interval.streams.first() {
            say!(
                "[tcp] {:6.2}-{:<6.2} s  {:>12}  {:>14}  {:>6}  {:>8}  {:>9.3} ms  {}",
                interval.start,
                interval.end,
                format_bytes(stream.bytes as f64),
                format_bits_per_second(stream.bits_per_second),
                stream.cwnd,
                ssthresh_text(stream.ssthresh),
                stream.rtt_s * 1e3,
                stream.retransmits,
            );
        }
    })?;
    if args.json {
        // A TCP sender knows what it wrote and what the receiver acknowledged: iperf3's
        // sum_sent and sum_received.
        let acked = summary.bytes_acked.unwrap_or(summary.bytes);
        let acked_bps = if summary.seconds > 0.0 {
            acked as f64 * 8.0 / summary.seconds
        } else {
            0.0
        };
        let document = json!({
            "start": start,
            "intervals": intervals,
            "end": {
                "sum_sent": iperf3_sum(summary.seconds, summary.bytes, summary.bits_per_second, None),
                "sum_received": iperf3_sum(summary.seconds, acked, acked_bps, None),
                "streams": [summary],
            },
        });
        say!("{}", json_text(&document)?);
    } else {
        say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        say!(
            "[tcp] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender, {} retransmissions, RTT mean {}; CPU {:.1}%",
            0.0,
            summary.seconds,
            format_bytes(summary.bytes as f64),
            format_bits_per_second(summary.bits_per_second),
            summary.total_retrans,
            optional_millis(summary.rtt.mean_s),
            summary.cpu_utilization_percent.host_total,
        );
    }
    Ok(())
}

fn ssthresh_text(ssthresh: u32) -> String {
    // The kernel reports "infinite" (never set) as a huge number.
    if ssthresh >= 0x7fff_ffff {
        "-".to_string()
    } else {
        ssthresh.to_string()
    }
}

/// Prints where the receiver listens: on stdout in text mode, on stderr with `--json` (whose
/// stdout is the JSON document only), so scripts can learn a port chosen by the system.
fn announce_listening(json: bool, protocol: &str, address: SocketAddr) {
    let line = format!("Server listening on {address} ({protocol})");
    if json {
        eprintln!("{line}");
    } else {
        say!("{line}");
    }
}

/// Runs `tfrc recv`: serves TFRC flows, and sends a flow to each `tfrc send -R` that asks
/// (unless `--no-reverse`).
pub fn run_recv(args: &RecvArgs) -> Result<()> {
    let stop = stop_on_signals()?;
    if args.tcp {
        return run_recv_tcp(args, &stop);
    }
    let mut options = ReceiverOptions::new(args.listen_address());
    options.max_flows = args.max_flows as usize;
    options.idle_timeout = args.idle_timeout;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.once = args.once;
    options.accept_reverse = !args.no_reverse;
    options.lies = args.lie.clone().map(|lies| lies.0).unwrap_or_default();
    let receiver = UdpReceiver::bind(options.clone()).context("cannot start the TFRC receiver")?;
    let local = receiver
        .local_addr()
        .context("cannot read the listening address")?;
    announce_listening(args.json, "TFRC", local);
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "receiver",
        "timestamp": {"unix_s": unix_time_seconds()},
        "listening": local.to_string(),
        "limits": {
            "max_flows": options.max_flows,
            "idle_timeout_s": options.idle_timeout.as_secs_f64(),
            "linger_s": options.linger.as_secs_f64(),
        },
        "log": args.log.as_ref().map(|path| path.display().to_string()),
        "reverse": !args.no_reverse,
    });
    // Reverse flows run on their own threads, which the scope joins before the report.
    let reverse_ends = std::sync::Mutex::new(Vec::new());
    let active = std::sync::atomic::AtomicUsize::new(0);
    let json_mode = args.json;
    let report = std::thread::scope(|scope| {
        let mut on_reverse = |peer: SocketAddr, request: ReverseRequest| {
            if active.load(Ordering::Relaxed) >= options.max_flows {
                if !json_mode {
                    say!(
                        "[reverse] {peer}: refused, {} flows already",
                        options.max_flows
                    );
                }
                return;
            }
            active.fetch_add(1, Ordering::Relaxed);
            let (stop, reverse_ends, active) = (&stop, &reverse_ends, &active);
            scope.spawn(move || {
                let end = send_reverse_flow((local, peer), request, stop, json_mode);
                if let Ok(mut ends) = reverse_ends.lock() {
                    ends.push(end);
                }
                active.fetch_sub(1, Ordering::Relaxed);
            });
        };
        serve(receiver, &stop, json_mode, &mut on_reverse)
    })?;
    // The scope has joined the reverse flows (the stop flag ends them early on Ctrl-C).
    let reverse = reverse_ends.into_inner().unwrap_or_default();
    print_receiver_end(json_mode, start, report, reverse)
}

/// Sends the flow a `tfrc send -R` asked for, from the listening port `local` (a second socket
/// sharing it) to `peer`; its HELLO must be answered from there before any data leaves.
/// Returns its end report (as in `tfrc send -J`'s `end`), with `peer`, or `error` when it
/// failed.
fn send_reverse_flow(
    (local, peer): (SocketAddr, SocketAddr),
    request: ReverseRequest,
    stop: &AtomicBool,
    json_mode: bool,
) -> Value {
    let mut options = SenderOptions::new(peer);
    // From the port the request came to: a relay or NAT on the way lets the flow back.
    options.bind = Some(local);
    options.share_port = true;
    options.duration = request.duration;
    options.config = Config {
        packet_size: request.packet_size,
        target_rate: request.target_rate,
        ..Config::default()
    };
    options.max_rate = request.max_rate;
    options.report_interval = None;
    let result = UdpSender::new(options)
        .map_err(anyhow::Error::from)
        .and_then(|sender| {
            let session = format!("{:08x}", sender.session_id());
            if !json_mode {
                say!("[{session}] reverse flow to {peer}: {:?}", request.duration);
            }
            let report = sender.run(stop, &mut |_| {})?;
            Ok((session, report))
        });
    match result {
        Ok((session, report)) => {
            if !json_mode {
                print_flow_end(&session, &report);
            }
            let mut end = flow_end(&report);
            end["session_id"] = json!(session);
            end["peer"] = json!(peer.to_string());
            end
        }
        Err(error) => {
            if !json_mode {
                say!("[reverse] flow to {peer} failed: {error:#}");
            }
            json!({"peer": peer.to_string(), "error": format!("{error:#}")})
        }
    }
}

/// Serves TFRC flows until `stop` (or, with `once`, the first flow's end): a text line per
/// flow and interval, or iperf3's `intervals[]` in JSON mode (returned with the report).
/// Reverse requests go to `on_reverse`.
fn serve(
    receiver: UdpReceiver,
    stop: &AtomicBool,
    json_mode: bool,
    on_reverse: &mut dyn FnMut(SocketAddr, ReverseRequest),
) -> Result<(Vec<Value>, crate::receiver::ReceiverReport)> {
    let mut intervals = Vec::new();
    let report = receiver.run(stop, &mut |event| match event {
        ReceiverEvent::FlowStarted { flow_id, peer } => {
            if !json_mode {
                say!("[{flow_id}] flow from {peer}");
            }
        }
        ReceiverEvent::ReverseRequested { peer, request } => on_reverse(peer, request),
        ReceiverEvent::Interval(interval) => {
            if json_mode {
                intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
            } else {
                for stream in &interval.streams {
                    say!(
                        "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  lost {:<6}  p {:<10.6}  R_m {}",
                        &stream.flow_id[..8.min(stream.flow_id.len())],
                        interval.start,
                        interval.end,
                        format_bytes(stream.bytes as f64),
                        format_bits_per_second(stream.bits_per_second),
                        stream.lost,
                        stream.p,
                        optional_millis(stream.rtt_s),
                    );
                }
                if interval.streams.len() > 1 {
                    say!(
                        "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  lost {}",
                        interval.start,
                        interval.end,
                        format_bytes(interval.sum.bytes as f64),
                        format_bits_per_second(interval.sum.bits_per_second),
                        interval.sum.lost,
                    );
                }
            }
        }
        ReceiverEvent::FlowEnded(summary) => {
            if !json_mode {
                say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver ({:?}) goodput {}",
                    summary.session_id,
                    0.0,
                    summary.seconds,
                    format_bytes(summary.bytes as f64),
                    format_bits_per_second(summary.bits_per_second),
                    summary.reason,
                    format_bits_per_second(summary.goodput_bps),
                );
                say!(
                    "[{}] received {} packets, lost {} ({:.3}%), {} loss events; mean p {:.6}, final p {:.6}; R_m mean {}",
                    summary.session_id,
                    summary.packets,
                    summary
                        .sender_packets
                        .map_or(summary.lost, |sent| sent.saturating_sub(summary.packets)),
                    summary.loss_ratio * 100.0,
                    summary.loss_events,
                    summary.mean_p,
                    summary.final_p,
                    optional_millis(summary.rtt.mean_s),
                );
            }
        }
    })?;
    Ok((intervals, report))
}

/// The receiver's end: the JSON document (`start`, `intervals`, `end` with iperf3's
/// `sum_sent` — from the senders' ends of session — and `sum_received`, the flows, the
/// counters, and the reverse flows sent) or a text line of counters.
fn print_receiver_end(
    json_mode: bool,
    start: Value,
    (intervals, report): (Vec<Value>, crate::receiver::ReceiverReport),
    reverse: Vec<Value>,
) -> Result<()> {
    let counters = report.counters;
    if json_mode {
        let streams = &report.streams;
        let seconds = streams
            .iter()
            .map(|s| s.start + s.seconds)
            .fold(0.0, f64::max);
        let packets: u64 = streams.iter().map(|stream| stream.packets).sum();
        let bytes: u64 = streams.iter().map(|stream| stream.bytes).sum();
        let lost: u64 = streams.iter().map(|stream| stream.lost).sum();
        let sent_packets: Option<u64> = streams.iter().map(|s| s.sender_packets).sum();
        let sent_bytes: Option<u64> = streams.iter().map(|s| s.sender_bytes).sum();
        let rate = |bytes: u64| {
            if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        let sum_sent = sent_bytes.map(|sent| iperf3_sum(seconds, sent, rate(sent), None));
        let mut sum_received = iperf3_sum(
            seconds,
            bytes,
            rate(bytes),
            sent_packets.map(|sent| (sent.saturating_sub(packets), sent)),
        );
        if !streams.is_empty() {
            sum_received["jitter_ms"] =
                json!(streams.iter().map(|s| s.jitter_ms).sum::<f64>() / streams.len() as f64);
        }
        let document = json!({
            "start": start,
            "intervals": intervals,
            "end": {
                "streams": report.streams,
                "sum": {"packets": packets, "bytes": bytes, "lost": lost},
                "sum_sent": sum_sent,
                "sum_received": sum_received,
                "reverse_flows": reverse,
                "counters": counters,
                "cpu_utilization_percent": report.cpu_utilization_percent,
            },
        });
        say!("{}", json_text(&document)?);
    } else {
        say!(
            "receiver: {} flows ({} completed, {} idle), {} datagrams, {} malformed, {} spoofed, {} stray, {} rejected, {} unverified, {} reverse flows sent; CPU {:.1}%",
            counters.flows_opened,
            counters.flows_completed,
            counters.flows_expired,
            counters.datagrams,
            counters.malformed,
            counters.spoofed,
            counters.stray,
            counters.rejected_flows,
            counters.unverified,
            reverse.len(),
            report.cpu_utilization_percent.host_total,
        );
    }
    Ok(())
}

/// `tfrc send -R` (iperf3's reverse mode): asks the `tfrc recv` at `to` to send a TFRC flow
/// with this command's parameters to this socket, receives it, and reports as the receiver
/// does (JSON: iperf3's `sum_sent` from the sender's end of session and `sum_received`). Fails
/// when no flow comes within the connect timeout.
fn run_send_reverse(args: &SendArgs, to: SocketAddr, stop: &AtomicBool) -> Result<()> {
    let listen = args.bind.unwrap_or_else(|| {
        let any: std::net::IpAddr = if to.is_ipv4() {
            std::net::Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        SocketAddr::new(any, 0)
    });
    let request = ReverseRequest {
        request_id: rand::random(),
        packet_size: args.packet_size,
        duration: args.time,
        max_rate: args.max_rate.map(|bits| bits / 8.0),
        target_rate: args.target_rate.map(|bits| bits / 8.0),
    };
    let mut datagram = vec![0; crate::control::REVERSE_LEN];
    request.emit(&mut datagram);
    let mut options = ReceiverOptions::new(listen);
    options.max_flows = 1;
    options.once = true;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.announce = Some(Announce {
        to,
        datagram,
        every: Duration::from_millis(250),
        give_up_after: args.connect_timeout,
    });
    let receiver = UdpReceiver::bind(options).context("cannot start the TFRC receiver")?;
    let local = receiver
        .local_addr()
        .context("cannot read the local address")?;
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "receiver",
        "reverse": true,
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": local.to_string(),
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "packet_size": args.packet_size,
            "reverse": 1,
            "target_rate_bps": args.target_rate,
            "max_rate_bps": args.max_rate,
        },
    });
    if !args.json {
        say!(
            "Asking {to} to send a TFRC flow to {local} (reverse mode), {} s",
            args.time.as_secs_f64()
        );
    }
    let served = serve(receiver, stop, args.json, &mut |_, _| {});
    let served = match served {
        Ok(served) => served,
        Err(error) if args.json => {
            print_failed_document(start, Vec::new(), &error)?;
            return Err(error);
        }
        Err(error) => return Err(error),
    };
    print_receiver_end(args.json, start, served, Vec::new())
}

fn run_recv_tcp(args: &RecvArgs, stop: &AtomicBool) -> Result<()> {
    if args.max_flows == 0 {
        bail!("--max-flows must be at least 1");
    }
    let mut options = TcpReceiverOptions::new(args.listen_address());
    options.max_flows = args.max_flows as usize;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.once = args.once;
    let receiver = TcpReceiver::bind(options)?;
    let local = receiver
        .local_addr()
        .context("cannot read the listening address")?;
    announce_listening(args.json, "TCP", local);
    let start = json!({
        "version": version(),
        "protocol": "tcp",
        "role": "receiver",
        "timestamp": {"unix_s": unix_time_seconds()},
        "listening": local.to_string(),
        "log": args.log.as_ref().map(|path| path.display().to_string()),
    });
    let json_mode = args.json;
    let mut intervals = Vec::new();
    let summaries = receiver.run(stop, &mut |event| match event {
        TcpReceiverEvent::FlowStarted {
            flow_id,
            peer,
            congestion,
        } => {
            if !json_mode {
                say!("[{flow_id}] connection from {peer} ({congestion})");
            }
        }
        TcpReceiverEvent::Interval(interval) => {
            if json_mode {
                intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
            } else {
                for stream in &interval.streams {
                    say!(
                        "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}",
                        stream.flow_id,
                        interval.start,
                        interval.end,
                        format_bytes(stream.bytes as f64),
                        format_bits_per_second(stream.bits_per_second),
                    );
                }
            }
        }
        TcpReceiverEvent::FlowEnded(summary) => {
            if !json_mode {
                say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver",
                    summary.flow_id,
                    0.0,
                    summary.seconds,
                    format_bytes(summary.bytes as f64),
                    format_bits_per_second(summary.bits_per_second),
                );
            }
        }
    })?;
    if args.json {
        let document =
            json!({"start": start, "intervals": intervals, "end": {"streams": summaries}});
        say!("{}", json_text(&document)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_lose_their_binary_noise_only() {
        let document = json!({
            "a": 0.5963430000000001,
            "b": [0.19940719999999995, 3],
            "c": {"d": 1999911.0039603238, "e": 1e-9},
        });
        let text = json_text(&document).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["a"], json!(0.596343));
        assert_eq!(back["b"][0], json!(0.1994072));
        assert_eq!(back["b"][1], json!(3));
        assert_eq!(back["c"]["d"], json!(1999911.00396));
        assert_eq!(back["c"]["e"], json!(1e-9));
    }
}
