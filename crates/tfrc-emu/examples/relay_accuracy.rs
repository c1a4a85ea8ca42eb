//! Accuracy benchmark of the relay (run by `bench/emu/run.sh`).
//!
//! For each link rate: (1) timestamped probes at half the link rate (no queueing), whose
//! one-way delay is compared with the ideal `delay + serialization time` — the added-delay
//! error; (2) a saturating load (150 % of the rate) whose delivered rate, measured at the
//! receiver over the middle of the run, is compared with the configured rate. Prints one
//! Markdown row per rate.
//!
//! Times are the real-time clock: the source stamps each probe just before its `send`, and the
//! sink takes the kernel's receive time stamp (`SO_TIMESTAMPNS`), so that a sink thread waiting
//! for a CPU on a busy machine does not count against the relay.
//!
//! Usage: `relay_accuracy [SECONDS_PER_RUN] [RATE_MBPS …]`

use core::time::Duration;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tfrc_udp::batch::{Offload, ReceiveBuffers};

use tfrc_emu::element_syntax::{LinkFlags, LinkSpec};
use tfrc_emu::realtime::{unix_nanos_now, Clock, Waiter, Wake};
use tfrc_emu::relay::{self, RelayConfig};

const WIRE_BYTES: u64 = 1000;
const PAYLOAD: usize = 972;
const DELAY_MS: u64 = 10;

/// The relay's spin margin: SPIN_US, else the relay's default.
fn spin_margin() -> Duration {
    std::env::var("SPIN_US")
        .ok()
        .and_then(|text| text.parse().ok())
        .map_or(
            tfrc_emu::realtime::DEFAULT_SPIN_MARGIN,
            Duration::from_micros,
        )
}

/// The machine's own wake-up lateness under the relay's waiting: a thread at the relay's
/// priority waits, with the relay's [`Waiter`] and spin margin and nothing else to do, for
/// deadlines one serialization time apart (the link's departures at full load), for `seconds`.
/// The 99th percentile of how late each wait returns: the floor under the relay's delay error.
fn wakeup_floor_p99_us(rate_bps: u64, seconds: f64, realtime: bool) -> f64 {
    let interval = Duration::from_nanos((WIRE_BYTES * 8 * 1_000_000_000 / rate_bps).max(1));
    let probe = std::thread::spawn(move || {
        if realtime {
            let _ = tfrc_udp::pacing::set_realtime_priority(10);
        }
        let waiter = Waiter::new(Clock::new(), spin_margin());
        let clock = waiter.clock();
        // Every deadline counted: one that passed while the thread was not running is served
        // at once, with its own lateness, as the relay forwards the packets that fell due.
        let summary = tfrc_udp::pacing::probe_deadlines(
            || clock.now(),
            |deadline| {
                while waiter.wait(&[], Some(deadline)) != Wake::Deadline || clock.now() < deadline {
                }
            },
            interval,
            Duration::from_secs_f64(seconds),
        );
        summary.p99_us
    });
    probe.join().expect("probe thread")
}

type RelayHandle = std::thread::JoinHandle<tfrc_emu::Result<relay::RelayReport>>;

fn relay_for(
    rate_bps: u64,
    sink: SocketAddr,
    realtime: bool,
) -> (SocketAddr, Arc<AtomicBool>, RelayHandle) {
    let rate = vec![format!("{rate_bps}")];
    let delay = vec![format!("{DELAY_MS}ms")];
    let queue = vec!["droptail:1000".to_string()];
    let link = LinkSpec::from_flags(&LinkFlags {
        rate: &rate,
        delay: &delay,
        queue: &queue,
        ..LinkFlags::default()
    })
    .expect("valid link");
    let stop = Arc::new(AtomicBool::new(false));
    let mut config = RelayConfig::new("127.0.0.1:0".parse().unwrap(), sink, link);
    config.realtime_priority = realtime.then_some(10);
    config.spin_margin = spin_margin();
    let (address, handle) = relay::spawn(config, stop.clone()).expect("relay");
    (address, stop, handle)
}

/// Sends `count` payloads to `target`, one every `interval` (kernel sleeps, no spinning, so
/// the source leaves the CPUs to the relay); each payload carries its send time (real-time
/// clock, ns since the Unix epoch). Late sends bunch packets: the error computation accounts
/// for the queueing that causes.
fn paced_source(target: SocketAddr, interval: Duration, count: u64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(target).unwrap();
        let mut payload = vec![0u8; PAYLOAD];
        let start = Instant::now();
        tfrc_udp::pacing::lower_timer_slack();
        for index in 0..count {
            let due = start + interval.mul_f64(index as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let sent = unix_nanos_now() as u64;
            payload[..8].copy_from_slice(&sent.to_le_bytes());
            let _ = socket.send(&payload);
        }
    })
}

fn percentile(sorted: &[i64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize] as f64
}

/// Receives until nothing came for 500 ms; calls `each` with every datagram and its kernel
/// receive time (ns since the Unix epoch).
fn receive_stamped(sink: &UdpSocket, mut each: impl FnMut(&[u8], i64)) {
    let offload = Offload::new(sink, true).expect("sink offloads");
    let mut buffers = ReceiveBuffers::new();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(500) {
        if offload.receive(sink, &mut buffers).is_err() {
            tfrc_udp::pacing::poll_readable(
                Some(std::os::fd::AsRawFd::as_raw_fd(sink)),
                Some(Duration::from_millis(100)),
            );
            continue;
        }
        quiet_since = Instant::now();
        for datagram in buffers.datagrams() {
            let stamp = datagram
                .kernel_time
                .map_or(unix_nanos_now(), |stamp| stamp.as_nanos());
            each(datagram.bytes, stamp as i64);
        }
    }
}

struct DelayResult {
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    received: usize,
    sent: u64,
}

/// Added-delay error: each probe's measured one-way delay minus the ideal one of a FIFO link of
/// this rate and delay fed with the probes' actual send times (so a late source, which bunches
/// probes and queues them, is not counted against the emulator).
fn delay_error(rate_bps: u64, seconds: f64, realtime: bool) -> DelayResult {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (relay_address, stop, handle) = relay_for(rate_bps, sink.local_addr().unwrap(), realtime);
    let serialization_ns = WIRE_BYTES * 8 * 1_000_000_000 / rate_bps;
    let interval = Duration::from_nanos(serialization_ns * 2);
    let count = ((seconds / interval.as_secs_f64()) as u64).clamp(50, 200_000);
    let source = paced_source(relay_address, interval, count);
    let mut probes: Vec<(i64, i64)> = Vec::with_capacity(count as usize);
    receive_stamped(&sink, |bytes, received| {
        if bytes.len() >= 8 {
            let sent = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as i64;
            probes.push((sent, received));
        }
    });
    source.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let _ = handle.join();
    probes.sort_unstable();
    let mut finish = i64::MIN;
    let mut errors: Vec<i64> = probes
        .iter()
        .map(|&(sent, received)| {
            finish = finish.max(sent) + serialization_ns as i64;
            received - (finish + (DELAY_MS * 1_000_000) as i64)
        })
        .collect();
    errors.sort_unstable();
    DelayResult {
        p50_us: percentile(&errors, 0.5) / 1000.0,
        p99_us: percentile(&errors, 0.99) / 1000.0,
        max_us: errors.last().copied().unwrap_or(0) as f64 / 1000.0,
        received: errors.len(),
        sent: count,
    }
}

/// Delivered wire rate under a 150 % load, over the middle 60 % of the run.
fn delivered_rate(rate_bps: u64, seconds: f64, realtime: bool) -> f64 {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (relay_address, stop, handle) = relay_for(rate_bps, sink.local_addr().unwrap(), realtime);
    let serialization_ns = WIRE_BYTES * 8 * 1_000_000_000 / rate_bps;
    let interval = Duration::from_nanos(serialization_ns * 2 / 3);
    let count = (seconds / interval.as_secs_f64()) as u64;
    let origin = unix_nanos_now() as i64;
    let source = paced_source(relay_address, interval, count);
    let mut arrivals = Vec::with_capacity(count as usize);
    receive_stamped(&sink, |_, received| {
        arrivals.push((received - origin) as f64 / 1e9);
    });
    source.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let _ = handle.join();
    let (from, to) = (seconds * 0.2, seconds * 0.8);
    let inside = arrivals.iter().filter(|&&at| at >= from && at < to).count();
    inside as f64 * WIRE_BYTES as f64 * 8.0 / (to - from)
}

fn main() {
    let realtime = std::env::var_os("REALTIME").is_some();
    let mut arguments = std::env::args().skip(1);
    let seconds: f64 = arguments
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3.0);
    let rates: Vec<u64> = {
        let given: Vec<u64> = arguments.filter_map(|text| text.parse().ok()).collect();
        if given.is_empty() {
            vec![1, 10, 100, 200, 400]
        } else {
            given
        }
    };
    println!(
        "relay thread: {}",
        if realtime {
            "SCHED_FIFO 10"
        } else {
            "normal priority"
        }
    );
    println!();
    println!("| link rate | probes received | delay error p50 (µs) | p99 (µs) | max (µs) | delivered rate at 150 % load | error | wake-up probe p99 (µs) | p99 ÷ probe p99 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for mbps in rates {
        let rate_bps = mbps * 1_000_000;
        let delay = delay_error(rate_bps, seconds, realtime);
        let floor = wakeup_floor_p99_us(rate_bps, seconds.min(2.0), realtime);
        let delivered = delivered_rate(rate_bps, seconds, realtime);
        println!(
            "| {mbps} Mb/s | {}/{} | {:.1} | {:.1} | {:.1} | {:.3} Mb/s | {:+.2} % | {:.1} | {:.2}x |",
            delay.received,
            delay.sent,
            delay.p50_us,
            delay.p99_us,
            delay.max_us,
            delivered / 1e6,
            (delivered / rate_bps as f64 - 1.0) * 100.0,
            floor,
            delay.p99_us / floor.max(0.001)
        );
    }
}
