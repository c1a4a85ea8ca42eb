//! The flags of `tfrc send` and `tfrc recv` and their value parsers.

#[allow(unused_imports)]
use super::*;

/// A duration flag (`-t 10`, `-i 500ms`): the toolkit's units grammar, a bare number in seconds.
pub(super) fn duration_argument(text: &str) -> Result<Duration, String> {
    tfrc_units::parse_duration_flag(text).map_err(|error| error.to_string())
}

/// A duration with its unit, zero allowed (`--timer-granularity 0s`: an exact timer).
pub(super) fn exact_duration_argument(text: &str) -> Result<Duration, String> {
    tfrc_units::parse_duration(text).map_err(|error| error.to_string())
}

/// A rate flag in bits/s (`-b 2M`, `--target-rate 800kbps`), above zero.
pub(super) fn rate_argument(text: &str) -> Result<f64, String> {
    tfrc_units::positive_rate(text)
        .map(|rate| rate.bits_per_second() as f64)
        .map_err(|error| error.to_string())
}

/// `-l`: a TFRC segment size (`1400`, `1.4kB`), within what one UDP datagram carries.
pub(super) fn packet_size_argument(text: &str) -> Result<u32, String> {
    let bytes = tfrc_units::parse_size(text).map_err(|error| error.to_string())?;
    match u32::try_from(bytes) {
        Ok(bytes) if (FLOW_OPTIONS_LEN as u32..=65475).contains(&bytes) => Ok(bytes),
        _ => Err(format!(
            "{bytes} bytes is not a TFRC segment size: it must be {FLOW_OPTIONS_LEN} to 65475 \
             bytes (every payload starts with the {FLOW_OPTIONS_LEN}-byte flow options)"
        )),
    }
}

pub(super) fn address_argument(text: &str) -> Result<SocketAddr, String> {
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

pub(super) fn non_negative_argument(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("cannot read {text:?}: expected a number >= 0")),
    }
}

pub(super) fn at_least_one_argument(text: &str) -> Result<f64, String> {
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
pub(super) fn lies_argument(text: &str) -> std::result::Result<Lies, String> {
    tfrc_proto::adversary::Lie::parse_list(text)
        .map(Lies)
        .map_err(|error| error.to_string())
}
