//! `tfrc stream`: a synthetic video source sent over ETP, reporting frames on time, late and
//! lost — to show what each descriptor buys over a lossy, slow path.
//!
//! Frames leave at `--fps`; every `--iframe-every`-th is an I-frame of `--iframe-size` bytes,
//! the others P-frames of `--frame-size` bytes. A frame is *on time* if delivered within
//! `--playout-deadline` of its creation, *late* if delivered after it or dropped as late by ETP's
//! time control (at the sender or the receiver), *lost* otherwise.
//!
//! Three ways to run:
//! - default: both ends in this process over two local UDP sockets; `--emulate-*` puts an
//!   emulated path (one-way delay, rate, loss) on each direction (in-process, no root needed);
//! - `--simulate`: the same over the deterministic in-process link in virtual time (fast,
//!   repeatable);
//! - `--listen ADDR` / `--connect ADDR`: the receiver and the sender on different hosts (frames
//!   are then judged by ETP's deadline drops only, the clocks not being shared).

use core::time::Duration;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use tfrc_proto::Instant;
use tfrc_units::{parse_duration_flag as parse_duration, positive_rate};

use etp::connection::{ConnectionStats, MessageOptions, Policy};
use etp::descriptor::{
    Descriptor, DurationValue, OrderingKind, RateControlKind, RateValue, ReliabilityKind,
    StreamDescriptor,
};
use etp::harness::{Harness, LinkConfig};
use etp_udp::{DriverOptions, Session};

/// Rate control choices on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RateChoice {
    /// TFRC.
    Tfrc,
    /// gTFRC with `--target-rate`.
    Gtfrc,
    /// TFRC-SP, the small-packet variant (RFC 4828).
    TfrcSp,
    /// Constant `--target-rate`.
    Fixed,
}

/// Reliability choices on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReliabilityChoice {
    /// No retransmission.
    None,
    /// Retransmit until acknowledged (or the deadline, with time control).
    Full,
    /// At most `--max-retransmissions` per fragment and never after the deadline.
    Partial,
}

/// `tfrc stream` arguments.
#[derive(Debug, Clone, Args)]
pub struct StreamArgs {
    /// QoS session descriptor file (TOML, or JSON with a .json name); stream 0 carries the video.
    /// Without it the descriptor is built from --rate-control, --reliability, ...
    #[arg(long)]
    pub descriptor: Option<PathBuf>,
    /// Rate control (without --descriptor).
    #[arg(long, value_enum, default_value = "tfrc")]
    pub rate_control: RateChoice,
    /// gTFRC target rate or fixed rate, bits/s (e.g. 1.5Mbps).
    #[arg(long, default_value = "1.5Mbps")]
    pub target_rate: String,
    /// Reliability (without --descriptor).
    #[arg(long, value_enum, default_value = "partial")]
    pub reliability: ReliabilityChoice,
    /// Most retransmissions per fragment with partial reliability.
    #[arg(long, default_value_t = 1)]
    pub max_retransmissions: u32,
    /// Do not give ETP the playout deadline (no time control: late frames are still delivered).
    #[arg(long)]
    pub no_time_control: bool,
    /// Frames per second.
    #[arg(long, default_value_t = 25.0)]
    pub fps: f64,
    /// P-frame size, bytes.
    #[arg(long, default_value_t = 5000)]
    pub frame_size: usize,
    /// I-frame size, bytes.
    #[arg(long, default_value_t = 20000)]
    pub iframe_size: usize,
    /// One I-frame every this many frames.
    #[arg(long, default_value_t = 12)]
    pub iframe_every: u32,
    /// Playout deadline of a frame after its creation (e.g. 300ms).
    #[arg(long, default_value = "300ms")]
    pub playout_deadline: String,
    /// How long to stream (e.g. 30s).
    #[arg(long, default_value = "30s")]
    pub duration: String,
    /// Emulated loss probability on each direction (0..1).
    #[arg(long, default_value_t = 0.0)]
    pub emulate_loss: f64,
    /// Emulated one-way delay on each direction (e.g. 50ms; RTT = twice this).
    #[arg(long)]
    pub emulate_delay: Option<String>,
    /// Emulated bottleneck rate on each direction, bits/s (e.g. 2Mbps).
    #[arg(long)]
    pub emulate_rate: Option<String>,
    /// Emulated bottleneck queue, packets.
    #[arg(long, default_value_t = 50)]
    pub emulate_queue: usize,
    /// Emulated reordering: probability that a datagram is held back by --emulate-reorder-delay.
    #[arg(long, default_value_t = 0.0)]
    pub emulate_reorder: f64,
    /// Extra delay of the datagrams held back by --emulate-reorder (e.g. 30ms).
    #[arg(long, default_value = "20ms")]
    pub emulate_reorder_delay: String,
    /// Longest wait after the last frame for frames still outstanding; the run ends earlier once
    /// every frame is resolved (acknowledged or given up). Default: the playout deadline + 2 s,
    /// or 60 s with full reliability (which promises every frame).
    #[arg(long, value_name = "DURATION")]
    pub drain_timeout: Option<String>,
    /// Run in virtual time over the deterministic in-process link instead of UDP.
    #[arg(long, conflicts_with_all = ["listen", "connect"])]
    pub simulate: bool,
    /// Seed of the emulated losses.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only receive, listening on this address (the sender runs `--connect`).
    #[arg(long, conflicts_with = "connect")]
    pub listen: Option<String>,
    /// Only send, to a `tfrc stream --listen` at this address.
    #[arg(long)]
    pub connect: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What a run measured.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StreamReport {
    /// How the run was made.
    pub mode: String,
    /// Rate control and reliability in the descriptor.
    pub descriptor: String,
    /// Frames sent.
    pub frames: u64,
    /// Delivered within the playout deadline.
    pub on_time: u64,
    /// Delivered after it, or dropped late by ETP.
    pub late: u64,
    /// Never delivered and not dropped as late.
    pub lost: u64,
    /// Frames delivered to the application, each counted once.
    pub delivered: u64,
    /// Deliveries of a frame already delivered (0 unless the transport delivers twice).
    pub duplicated: u64,
    /// Frames not delivered that ETP gave up on (dropped late or abandoned by reliability, at
    /// either end).
    pub abandoned: u64,
    /// Frames neither delivered nor given up when the run ended: still outstanding.
    pub undelivered: u64,
    /// I-frames on time / I-frames.
    pub iframes_on_time: u64,
    /// I-frames sent.
    pub iframes: u64,
    /// Mean delivery delay of delivered frames, ms.
    pub mean_delay_ms: f64,
    /// 95th percentile delivery delay, ms.
    pub p95_delay_ms: f64,
    /// Offered video rate, bits/s.
    pub video_rate_bps: f64,
    /// Sender's counters.
    pub sender: ConnectionStats,
}

struct Settings {
    descriptor: Descriptor,
    frame_interval: Duration,
    frames: u64,
    playout: Duration,
    link: Option<LinkConfig>,
    /// Longest wait after the last frame ([`StreamArgs::drain_timeout`]).
    drain: Duration,
    /// Whether stream 0 promises every frame (full reliability).
    full_reliability: bool,
}

/// Most frames one run streams (a delivery count of one byte each is kept per frame).
const MAX_FRAMES: u64 = 10_000_000;

/// Reads and checks the flags into a run's settings; an error names the flag.
fn settings(args: &StreamArgs) -> Result<Settings> {
    let playout = parse_duration(&args.playout_deadline).context("--playout-deadline")?;
    let duration = parse_duration(&args.duration).context("--duration")?;
    if !(args.fps.is_finite() && args.fps > 0.0 && args.fps <= 1000.0) {
        bail!("--fps must be in (0, 1000], got {}", args.fps);
    }
    if args.iframe_every == 0 {
        bail!("--iframe-every must be at least 1");
    }
    if args.frame_size < 13 || args.iframe_size < 13 {
        bail!("--frame-size and --iframe-size must be at least 13 bytes (the frame header)");
    }
    let descriptor = match &args.descriptor {
        Some(path) => Descriptor::from_file(path)?,
        None => descriptor_from_flags(args, playout)?,
    };
    if descriptor.stream(0).is_none() {
        bail!("the descriptor has no stream 0 to carry the video");
    }
    let link = emulated_link(args)?;
    let frame_interval = Duration::from_secs_f64(1.0 / args.fps);
    let frames = (duration.as_secs_f64() * args.fps).round().max(1.0) as u64;
    if frames > MAX_FRAMES {
        bail!("--duration and --fps give {frames} frames; at most {MAX_FRAMES}");
    }
    let full_reliability = descriptor
        .stream(0)
        .is_some_and(|stream| stream.reliability == ReliabilityKind::Full);
    let drain = match &args.drain_timeout {
        Some(text) => parse_duration(text).context("--drain-timeout")?,
        None if full_reliability => Duration::from_secs(60),
        None => playout + Duration::from_secs(2),
    };
    Ok(Settings {
        descriptor,
        frame_interval,
        frames,
        playout,
        link,
        drain,
        full_reliability,
    })
}

/// The descriptor of a run without `--descriptor`: one stream 0 named `video`, unordered, with
/// the rate control, reliability and (unless `--no-time-control`) the playout deadline of the
/// flags; validated like a descriptor file.
fn descriptor_from_flags(args: &StreamArgs, playout: Duration) -> Result<Descriptor> {
    let rate_control = match args.rate_control {
        RateChoice::Tfrc => RateControlKind::Tfrc,
        RateChoice::Gtfrc => RateControlKind::Gtfrc,
        RateChoice::TfrcSp => RateControlKind::TfrcSp,
        RateChoice::Fixed => RateControlKind::Fixed,
    };
    let mut descriptor = Descriptor::single_stream(rate_control);
    let rate = RateValue::Text(args.target_rate.clone());
    match rate_control {
        RateControlKind::Gtfrc => descriptor.target_rate = Some(rate),
        RateControlKind::Fixed => descriptor.fixed_rate = Some(rate),
        _ => {}
    }
    let mut stream = StreamDescriptor::new(0);
    stream.name = Some("video".into());
    stream.ordering = OrderingKind::None;
    stream.reliability = match args.reliability {
        ReliabilityChoice::None => ReliabilityKind::None,
        ReliabilityChoice::Full => ReliabilityKind::Full,
        ReliabilityChoice::Partial => ReliabilityKind::Partial,
    };
    if args.reliability == ReliabilityChoice::Partial {
        stream.max_retransmissions = Some(args.max_retransmissions);
    }
    if !args.no_time_control {
        stream.deadline = Some(DurationValue::millis(playout.as_millis() as u64));
    }
    descriptor.streams = vec![stream];
    descriptor.validate()?;
    Ok(descriptor)
}

/// The path the `--emulate-*` flags describe (the same on each direction), or `None` when no
/// flag asks for loss, delay, a rate limit or reordering.
fn emulated_link(args: &StreamArgs) -> Result<Option<LinkConfig>> {
    if !(args.emulate_loss > 0.0
        || args.emulate_delay.is_some()
        || args.emulate_rate.is_some()
        || args.emulate_reorder > 0.0)
    {
        return Ok(None);
    }
    let delay = match &args.emulate_delay {
        Some(text) => parse_duration(text).context("--emulate-delay")?,
        None => Duration::ZERO,
    };
    let rate = match &args.emulate_rate {
        Some(text) => Some(
            positive_rate(text)
                .context("--emulate-rate")?
                .bits_per_second() as f64,
        ),
        None => None,
    };
    let config = LinkConfig {
        delay,
        rate_bits_per_second: rate,
        loss: args.emulate_loss,
        reorder: args.emulate_reorder,
        reorder_delay: parse_duration(&args.emulate_reorder_delay)
            .context("--emulate-reorder-delay")?,
        queue_limit: args.emulate_queue,
    };
    config
        .validate()
        .map_err(|problem| anyhow::anyhow!("--emulate-*: {problem}"))?;
    Ok(Some(config))
}

/// A frame: number, creation time (ns), I-frame flag, then padding.
fn frame(number: u64, created: Instant, iframe: bool, size: usize) -> Vec<u8> {
    let mut data = vec![0u8; size];
    data[..8].copy_from_slice(&number.to_be_bytes());
    data[8..12].copy_from_slice(&((created.as_nanos() / 1000) as u32).to_be_bytes());
    data[12] = u8::from(iframe);
    data
}

struct Tally {
    settings_playout: Duration,
    delays: Vec<f64>,
    on_time: u64,
    late_delivered: u64,
    iframes_on_time: u64,
    /// Deliveries of each frame so far, by frame number.
    deliveries: Vec<u8>,
    /// Frames delivered at least once.
    unique: u64,
    /// Deliveries beyond the first of a frame.
    duplicated: u64,
}

impl Tally {
    fn new(playout: Duration, frames: u64) -> Tally {
        Tally {
            settings_playout: playout,
            delays: Vec::new(),
            on_time: 0,
            late_delivered: 0,
            iframes_on_time: 0,
            deliveries: vec![0; frames as usize],
            unique: 0,
            duplicated: 0,
        }
    }

    /// Counts a delivered frame (its number is in its first 8 bytes); a frame delivered again
    /// is a duplicate and counts nowhere else.
    fn delivered(&mut self, data: &[u8], created: Instant, now: Instant) {
        let number = data
            .get(..8)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(u64::MAX, u64::from_be_bytes);
        let Some(count) = usize::try_from(number)
            .ok()
            .and_then(|index| self.deliveries.get_mut(index))
        else {
            return;
        };
        *count = count.saturating_add(1);
        if *count > 1 {
            self.duplicated += 1;
            return;
        }
        self.unique += 1;
        let delay = now - created;
        self.delays.push(delay.as_secs_f64() * 1000.0);
        if delay <= self.settings_playout {
            self.on_time += 1;
            if data.get(12) == Some(&1) {
                self.iframes_on_time += 1;
            }
        } else {
            self.late_delivered += 1;
        }
    }
}

fn describe(descriptor: &Descriptor) -> String {
    let stream = descriptor.stream(0).expect("checked");
    let rate = match descriptor.rate_control {
        RateControlKind::Gtfrc => format!(
            "gtfrc g={:.2} Mb/s",
            descriptor.target_rate_bytes().unwrap_or(0.0) * 8e-6
        ),
        other => other.name().to_owned(),
    };
    let reliability = match stream.reliability {
        ReliabilityKind::Partial => format!(
            "partial k={}",
            stream
                .max_retransmissions
                .map_or("deadline".into(), |k| k.to_string())
        ),
        other => format!("{other:?}").to_lowercase(),
    };
    let deadline = stream
        .deadline_duration()
        .map_or("no deadline".into(), |d| {
            format!("deadline {}ms", d.as_millis())
        });
    format!("{rate}, {reliability}, {deadline}")
}

fn finish(
    mode: &str,
    settings: &Settings,
    args: &StreamArgs,
    tally: Tally,
    sender: ConnectionStats,
    receiver_late: u64,
    receiver_dropped: u64,
) -> StreamReport {
    let iframes = (0..settings.frames)
        .filter(|n| n.is_multiple_of(u64::from(args.iframe_every)))
        .count() as u64;
    let sender_total = sender.total();
    // Late: dropped late at the sender, or wholly received (acknowledged) but not on time —
    // delivered late, dropped late at the receiver, or completed only after the receiver had
    // given it up at its deadline. What remains never arrived whole: lost.
    let arrived_not_on_time = sender_total
        .messages_acked
        .saturating_sub(tally.on_time)
        .max(tally.late_delivered + receiver_late);
    let late = (sender_total.messages_late_at_sender + arrived_not_on_time)
        .min(settings.frames - tally.on_time);
    let mut delays = tally.delays.clone();
    delays.sort_by(f64::total_cmp);
    let mean = if delays.is_empty() {
        0.0
    } else {
        delays.iter().sum::<f64>() / delays.len() as f64
    };
    let p95 = delays
        .get(((delays.len() as f64 * 0.95) as usize).min(delays.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    let per_cycle =
        args.iframe_size as f64 + (args.iframe_every - 1) as f64 * args.frame_size as f64;
    let not_delivered = settings.frames - tally.unique;
    let abandoned = given_up(&sender, receiver_dropped).min(not_delivered);
    StreamReport {
        mode: mode.into(),
        descriptor: describe(&settings.descriptor),
        frames: settings.frames,
        on_time: tally.on_time,
        late,
        lost: settings.frames - tally.on_time - late,
        delivered: tally.unique,
        duplicated: tally.duplicated,
        abandoned,
        undelivered: not_delivered - abandoned,
        iframes_on_time: tally.iframes_on_time,
        iframes,
        mean_delay_ms: mean,
        p95_delay_ms: p95,
        video_rate_bps: per_cycle / f64::from(args.iframe_every) * args.fps * 8.0,
        sender,
    }
}

/// Messages ETP gave up on: dropped late or abandoned at the sender, dropped late or expired
/// incomplete at the receiver (`receiver_dropped`).
fn given_up(sender: &ConnectionStats, receiver_dropped: u64) -> u64 {
    let total = sender.total();
    total.messages_late_at_sender + total.messages_abandoned + receiver_dropped
}

/// Whether every frame is resolved at the sender (acknowledged, abandoned or dropped late):
/// nothing more will arrive.
fn all_resolved(sender: &ConnectionStats, frames: u64) -> bool {
    let total = sender.total();
    total.messages_acked + total.messages_abandoned + total.messages_late_at_sender >= frames
}

/// The receiver's drops (late, or incomplete at the deadline).
fn receiver_dropped(stats: &ConnectionStats) -> u64 {
    let total = stats.total();
    total.messages_late_at_receiver + total.messages_expired_incomplete
}

fn frame_size(args: &StreamArgs, number: u64) -> (bool, usize) {
    let iframe = number.is_multiple_of(u64::from(args.iframe_every));
    (
        iframe,
        if iframe {
            args.iframe_size
        } else {
            args.frame_size
        },
    )
}

/// The frames of a run in virtual time: both ends in this process over the deterministic
/// in-process link ([`Harness`]), the same path each way.
fn run_simulated(args: &StreamArgs, settings: &Settings) -> Result<StreamReport> {
    let mut harness = simulated_connection(settings, args.seed)?;
    let mut tally = Tally::new(settings.playout, settings.frames);
    let start = harness.now();
    let mut created = Vec::with_capacity(settings.frames as usize);
    for number in 0..settings.frames {
        let now = start + settings.frame_interval * number as u32;
        harness.run_until(now);
        let (iframe, size) = frame_size(args, number);
        created.push(now);
        let _ = harness.client().send(
            now,
            0,
            frame(number, now, iframe, size),
            MessageOptions::default(),
        );
        harness.run_until(now + settings.frame_interval);
        tally_simulated_deliveries(&mut harness, &created, &mut tally);
    }
    // Drain: until every frame is resolved at the sender, at most `drain` after the last.
    let drain_end = harness.now() + settings.drain;
    loop {
        tally_simulated_deliveries(&mut harness, &created, &mut tally);
        if harness.now() >= drain_end || all_resolved(&harness.client().stats(), settings.frames) {
            break;
        }
        harness.run_for(Duration::from_millis(10));
    }
    let receiver_late = harness
        .server()
        .map_or(0, |server| server.stats().total().messages_late_at_receiver);
    let dropped = harness
        .server()
        .map_or(0, |server| receiver_dropped(&server.stats()));
    if std::env::var_os("ETP_STREAM_DEBUG").is_some() {
        eprintln!(
            "receiver {:?}",
            harness.server().map(|server| server.stats())
        );
        eprintln!("sender {:?}", harness.client().stats());
    }
    let sender = harness.client().stats();
    Ok(finish(
        "simulated (virtual time, in-process link)",
        settings,
        args,
        tally,
        sender,
        receiver_late,
        dropped,
    ))
}

/// A simulated client and listener joined by the emulated path (a lossless, zero-delay one
/// without `--emulate-*`), past the handshake: retried on loss (INIT, COOKIE_ECHO) for up to
/// 10 s of virtual time.
fn simulated_connection(settings: &Settings, seed: u64) -> Result<Harness> {
    let link = settings
        .link
        .clone()
        .unwrap_or_else(|| LinkConfig::delay(Duration::ZERO));
    let mut harness = Harness::new(
        settings.descriptor.clone(),
        Policy::permissive(),
        link.clone(),
        link,
        seed,
    )?;
    for _ in 0..100 {
        if harness.server().is_some() {
            break;
        }
        harness.run_for(Duration::from_millis(100));
    }
    if harness.server().is_none() {
        bail!(
            "the simulated connection could not be set up: {:?}",
            harness.client_events()
        );
    }
    Ok(harness)
}

/// Counts every frame the simulated receiver has delivered so far; `created` holds each sent
/// frame's creation time, by frame number.
fn tally_simulated_deliveries(harness: &mut Harness, created: &[Instant], tally: &mut Tally) {
    while let Some(message) = harness.server().and_then(|server| server.recv()) {
        let number = u64::from_be_bytes(message.data[..8].try_into().unwrap_or([0; 8])) as usize;
        if let Some(at) = created.get(number) {
            tally.delivered(&message.data, *at, message.completed_at);
        }
    }
}

/// The frames of a run over two local UDP sockets (the emulated path, if any, on each
/// sending side): the sender in this thread, the receiver's tally in another.
fn run_local(args: &StreamArgs, settings: &Settings) -> Result<StreamReport> {
    let options = DriverOptions {
        emulation: settings.link.clone(),
        policy: Policy::permissive(),
        seed: args.seed,
    };
    let listener = etp_udp::listen("127.0.0.1:0", &options)?;
    let address = listener.local_addr()?.to_string();
    let descriptor = settings.descriptor.clone();
    let sender_options = DriverOptions {
        seed: args.seed.wrapping_add(1),
        ..options
    };
    let session = etp_udp::connect(&address, descriptor, &sender_options)?;
    let receiver = listener.accept(Duration::from_secs(5))?;
    let epoch = std::time::Instant::now();
    let resolved = Arc::new(AtomicBool::new(false));
    let receiving = spawn_local_receiver(receiver, epoch, settings, Arc::clone(&resolved));
    send_frames(&session, args, settings, epoch);
    let drain_end = std::time::Instant::now() + settings.drain;
    while std::time::Instant::now() < drain_end && !all_resolved(&session.stats(), settings.frames)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    resolved.store(true, Ordering::Release);
    let (tally, receiver_late, dropped) = receiving
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
    let sender = session.stats();
    Ok(finish(
        &local_mode(settings.link.as_ref()),
        settings,
        args,
        tally,
        sender,
        receiver_late,
        dropped,
    ))
}

/// What the local receiver's thread hands back: its tally, the frames its ETP end dropped as
/// late, and every frame it dropped (late or incomplete at the deadline).
type ReceiverOutcome = (Tally, u64, u64);

/// The local receiver's thread: tallies frames (their creation time read from the frame, the
/// clocks being shared) until the sender says every frame is resolved (`resolved`, after which
/// what was acknowledged has arrived) or the frames' time and the drain time are over.
fn spawn_local_receiver(
    receiver: Session,
    epoch: std::time::Instant,
    settings: &Settings,
    resolved: Arc<AtomicBool>,
) -> JoinHandle<ReceiverOutcome> {
    let frames = settings.frames;
    let playout = settings.playout;
    let stop = epoch + settings.frame_interval * frames as u32 + settings.drain;
    std::thread::spawn(move || {
        let mut tally = Tally::new(playout, frames);
        loop {
            match receiver.recv_timeout(Duration::from_millis(20)) {
                Ok(Some(message)) => {
                    let now = Instant::from_nanos(epoch.elapsed().as_nanos() as u64);
                    let micros =
                        u32::from_be_bytes(message.data[8..12].try_into().unwrap_or([0; 4]));
                    let created = Instant::from_micros(u64::from(micros));
                    tally.delivered(&message.data, created, now);
                }
                // Nothing waiting: done once the sender has every frame resolved (what it
                // had acknowledged was delivered here before) or the drain time is over.
                _ if resolved.load(Ordering::Acquire) => break,
                _ => {}
            }
            if std::time::Instant::now() >= stop {
                break;
            }
        }
        let stats = receiver.stats();
        (
            tally,
            stats.total().messages_late_at_receiver,
            receiver_dropped(&stats),
        )
    })
}

/// Sends every frame of the run on stream 0 at its due time (`epoch` + its number × the frame
/// interval), stamped with its creation time on the epoch's clock. A refused frame is skipped:
/// the tally counts it as not delivered.
fn send_frames(
    session: &Session,
    args: &StreamArgs,
    settings: &Settings,
    epoch: std::time::Instant,
) {
    for number in 0..settings.frames {
        let due = epoch + settings.frame_interval * number as u32;
        std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
        let created = Instant::from_nanos(epoch.elapsed().as_nanos() as u64);
        let (iframe, size) = frame_size(args, number);
        let _ = session.send(
            0,
            frame(number, created, iframe, size),
            MessageOptions::default(),
        );
    }
}

/// The report's `mode` of a local run: the emulated path, if any.
fn local_mode(link: Option<&LinkConfig>) -> String {
    match link {
        Some(link) => format!(
            "local UDP, emulated path: one-way {} ms, {}, loss {}",
            link.delay.as_millis(),
            link.rate_bits_per_second
                .map_or("no rate limit".into(), |r| format!("{:.2} Mb/s", r * 1e-6)),
            link.loss
        ),
        None => "local UDP".into(),
    }
}

fn print(report: &StreamReport, json: bool) {
    if json {
        println!("{}", serde_json::to_string(report).unwrap_or_default());
        return;
    }
    let percent = |count: u64| 100.0 * count as f64 / report.frames.max(1) as f64;
    println!("mode:        {}", report.mode);
    println!("descriptor:  {}", report.descriptor);
    println!(
        "video:       {} frames, {:.2} Mb/s offered",
        report.frames,
        report.video_rate_bps * 1e-6
    );
    println!(
        "frames:      on time {} ({:.1} %), late {} ({:.1} %), lost {} ({:.1} %)",
        report.on_time,
        percent(report.on_time),
        report.late,
        percent(report.late),
        report.lost,
        percent(report.lost)
    );
    println!(
        "messages:    delivered {} (each once), duplicated {}, abandoned {}, undelivered {}",
        report.delivered, report.duplicated, report.abandoned, report.undelivered
    );
    println!(
        "I-frames:    {} of {} on time",
        report.iframes_on_time, report.iframes
    );
    println!(
        "delay:       mean {:.1} ms, p95 {:.1} ms",
        report.mean_delay_ms, report.p95_delay_ms
    );
    let total = report.sender.total();
    println!(
        "sender:      rate {:.2} Mb/s, p = {:.4}, RTT {:?}, packets {} (lost {}), retransmitted fragments {}, dropped late {}",
        report.sender.sending_rate.unwrap_or(0.0) * 8e-6,
        report.sender.loss_event_rate,
        report.sender.rtt.unwrap_or_default(),
        report.sender.data_packets_sent,
        report.sender.data_packets_lost,
        total.fragments_retransmitted,
        total.messages_late_at_sender
    );
}

/// Runs `tfrc stream`.
pub fn run(args: &StreamArgs) -> Result<()> {
    let settings = settings(args)?;
    if let Some(address) = &args.listen {
        return run_listen(address);
    }
    if let Some(address) = &args.connect {
        return run_connect(address, args, &settings);
    }
    let report = if args.simulate {
        run_simulated(args, &settings)?
    } else {
        run_local(args, &settings)?
    };
    print(&report, args.json);
    if settings.full_reliability && (report.delivered < report.frames || report.duplicated > 0) {
        bail!(
            "full reliability did not deliver every frame exactly once: {} of {} delivered, {} duplicated, {} abandoned, {} still outstanding after --drain-timeout {:?}",
            report.delivered,
            report.frames,
            report.duplicated,
            report.abandoned,
            report.undelivered,
            settings.drain
        );
    }
    Ok(())
}

/// `--listen`: receives one session's frames until it closes and prints what arrived (judged by
/// ETP's deadline drops only, the sender's clock not being shared).
fn run_listen(address: &str) -> Result<()> {
    let listener = etp_udp::listen(address, &DriverOptions::default())?;
    eprintln!("listening on {}", listener.local_addr()?);
    let session = listener.accept(Duration::from_secs(3600))?;
    let mut count = 0u64;
    while session.recv().is_ok() {
        count += 1;
    }
    let stats = session.stats().total();
    println!(
        "received {count} frames on time; {} late at the receiver, {} incomplete at their deadline",
        stats.messages_late_at_receiver, stats.messages_expired_incomplete
    );
    Ok(())
}

/// `--connect`: sends the run's frames to a `tfrc stream --listen`, closes, and prints the
/// sender's counters.
fn run_connect(address: &str, args: &StreamArgs, settings: &Settings) -> Result<()> {
    let session = etp_udp::connect(
        address,
        settings.descriptor.clone(),
        &DriverOptions::default(),
    )?;
    send_frames(&session, args, settings, std::time::Instant::now());
    session.close(settings.playout + Duration::from_secs(10))?;
    let stats = session.stats();
    println!(
        "sent {} frames; dropped late at the sender {}, abandoned {}, acknowledged {}",
        settings.frames,
        stats.total().messages_late_at_sender,
        stats.total().messages_abandoned,
        stats.total().messages_acked
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        stream: StreamArgs,
    }

    fn args(line: &[&str]) -> StreamArgs {
        let mut full = vec!["stream"];
        full.extend_from_slice(line);
        Command::try_parse_from(full).unwrap().stream
    }

    #[test]
    fn bad_flags_are_named() {
        for (line, flag) in [
            (&["--playout-deadline", "soon"][..], "--playout-deadline"),
            (&["--fps", "0"][..], "--fps"),
            (&["--emulate-loss", "2", "--simulate"][..], "loss"),
            (&["--emulate-rate", "fast"][..], "--emulate-rate"),
            (
                &["--rate-control", "gtfrc", "--target-rate", "zero"][..],
                "target_rate",
            ),
        ] {
            let outcome = settings(&args(line));
            assert!(outcome.is_err(), "{line:?} was accepted");
            let error = format!("{:#}", outcome.err().unwrap());
            assert!(error.contains(flag), "{error:?} should name {flag}");
        }
    }

    #[test]
    fn a_gtfrc_floor_above_the_video_rate_keeps_frames_on_time() {
        let line = [
            "--simulate",
            "--duration",
            "8s",
            "--emulate-loss",
            "0.01",
            "--emulate-delay",
            "50ms",
            "--emulate-rate",
            "2Mbps",
        ];
        let run = |extra: &[&str]| {
            let mut all = line.to_vec();
            all.extend_from_slice(extra);
            let args = args(&all);
            run_simulated(&args, &settings(&args).unwrap()).unwrap()
        };
        let tfrc = run(&["--rate-control", "tfrc"]);
        let gtfrc = run(&["--rate-control", "gtfrc", "--target-rate", "1.5Mbps"]);
        for report in [&tfrc, &gtfrc] {
            assert_eq!(report.on_time + report.late + report.lost, report.frames);
        }
        assert!(gtfrc.on_time > tfrc.on_time, "{gtfrc:?} vs {tfrc:?}");
        assert!(gtfrc.on_time as f64 > 0.95 * gtfrc.frames as f64);
    }

    /// The run: full reliability, no time control, 20 % loss each way, here with 10 %
    /// of datagrams held back 30 ms (reordering). Every frame is delivered exactly once, the
    /// run lasting until the last one is acknowledged (it reported 59 of 100 frames "lost" at
    /// a fixed close timeout). Virtual time and real UDP sockets both.
    #[test]
    fn full_reliability_delivers_every_frame_exactly_once_at_20_percent_loss() {
        let line = [
            "--reliability",
            "full",
            "--no-time-control",
            "--duration",
            "4s",
            "--emulate-loss",
            "0.2",
            "--emulate-delay",
            "20ms",
            "--emulate-reorder",
            "0.1",
            "--emulate-reorder-delay",
            "30ms",
            "--frame-size",
            "1000",
            "--iframe-size",
            "3000",
        ];
        for simulate in [true, false] {
            let mut all = line.to_vec();
            if simulate {
                all.push("--simulate");
            }
            let args = args(&all);
            let settings = settings(&args).unwrap();
            let report = if simulate {
                run_simulated(&args, &settings).unwrap()
            } else {
                run_local(&args, &settings).unwrap()
            };
            println!(
                "simulate {simulate}: {} frames, delivered {}, duplicated {}, abandoned {}, undelivered {}, retransmitted fragments {}",
                report.frames,
                report.delivered,
                report.duplicated,
                report.abandoned,
                report.undelivered,
                report.sender.total().fragments_retransmitted
            );
            assert_eq!(report.frames, 100);
            assert_eq!(report.delivered, report.frames, "{report:?}");
            assert_eq!(
                (report.duplicated, report.abandoned, report.undelivered),
                (0, 0, 0)
            );
            assert!(report.sender.total().fragments_retransmitted > 10);
        }
    }

    /// Delivering a frame twice is counted as a duplicate, not as a second frame.
    #[test]
    fn a_frame_delivered_twice_is_a_duplicate() {
        let mut tally = Tally::new(Duration::from_millis(300), 3);
        let created = Instant::ZERO;
        let now = Instant::from_millis(10);
        let one = frame(1, created, false, 20);
        tally.delivered(&one, created, now);
        tally.delivered(&one, created, now);
        tally.delivered(&frame(7, created, false, 20), created, now);
        assert_eq!((tally.unique, tally.duplicated, tally.on_time), (1, 1, 1));
    }
}
