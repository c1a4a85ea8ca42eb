//! The testbed's event loop: packets read from the hosts' TUN devices cross the emulated link
//! directions of their route and are written to the destination's TUN device; the tracked
//! flows are counted, `links.csv` and the pcap capture written on the way.

use core::time::Duration;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tfrc_proto::Instant;
use tfrc_sim::pcap::PcapWriter;
use tfrc_sim::FlowId;

use super::ipv4::{classify, ipv4_ecn, set_ipv4_ecn};
use super::running::TestbedReport;
use super::{FlowLog, FlowTotals, TrackedFlow};
use crate::error::{IoContext, Result};
use crate::linklog::{LinkLog, LinkName};
use crate::network::{Delivered, Network};
use crate::realtime::unix_nanos_now;
use crate::realtime::{Clock, Waiter, DEFAULT_SPIN_MARGIN};

/// The emulator loop of a testbed: what `up` hands to its thread.
pub(super) struct Emulator {
    /// The TUN device of each host (host order).
    pub(super) tuns: Vec<File>,
    /// The flows counted for `flows.csv`.
    pub(super) tracked: Vec<TrackedFlow>,
    /// Interval of the tracked flows' counts.
    pub(super) flow_interval: Duration,
    /// Where the counts go (read by the testbed's owner).
    pub(super) flow_log: Arc<std::sync::Mutex<FlowLog>>,
    /// Set to the emulator's time zero once it serves.
    pub(super) started: Arc<std::sync::OnceLock<std::time::Instant>>,
    /// `routes[source host][destination host]`: link directions, `None` if unroutable.
    pub(super) routes: Vec<Vec<Option<Arc<[usize]>>>>,
    /// Destination: (source host, destination host, flow id).
    pub(super) network: Network<(usize, usize, FlowId)>,
    /// Names of the link directions (`links.csv`).
    pub(super) names: Vec<LinkName>,
    /// `links.csv` and its interval.
    pub(super) links_csv: Option<(PathBuf, Duration)>,
    /// The pcap capture of the packets leaving their route.
    pub(super) pcap: Option<PathBuf>,
    /// `SCHED_FIFO` priority of the emulator thread.
    pub(super) realtime_priority: Option<i32>,
}

/// What one run of the loop keeps from round to round.
struct Serving {
    clock: Clock,
    /// Cumulative counts of the tracked flows.
    totals: Vec<FlowTotals>,
    /// When the next `flows.csv` interval ends.
    next_flow_row: Instant,
    report: TestbedReport,
    link_log: Option<LinkLog>,
    pcap: Option<PcapWriter>,
    buffer: Vec<u8>,
    delivered: Vec<Delivered<(usize, usize, FlowId)>>,
}

impl Emulator {
    /// Serves the TUN devices until `stop`: reads what the hosts send, carries it through the
    /// emulated links, writes what arrives; returns the counters.
    pub(super) fn serve(mut self, stop: &AtomicBool) -> Result<TestbedReport> {
        if let Some(priority) = self.realtime_priority {
            tfrc_udp::pacing::set_realtime_priority(priority)
                .context("cannot use real-time scheduling (needs root or CAP_SYS_NICE)")?;
        }
        let origin = std::time::Instant::now();
        let clock = Clock::from_origin(origin);
        let _ = self.started.set(origin);
        let waiter = Waiter::new(clock, DEFAULT_SPIN_MARGIN);
        let fds: Vec<RawFd> = self.tuns.iter().map(AsRawFd::as_raw_fd).collect();
        let mut serving = Serving {
            clock,
            totals: vec![FlowTotals::default(); self.tracked.len()],
            next_flow_row: Instant::ZERO + self.flow_interval,
            report: TestbedReport::default(),
            link_log: match &self.links_csv {
                Some((path, interval)) => {
                    Some(LinkLog::create(path, self.names.clone(), *interval)?)
                }
                None => None,
            },
            pcap: match &self.pcap {
                Some(path) => Some(PcapWriter::create(path)?),
                None => None,
            },
            buffer: vec![0u8; 65_536],
            delivered: Vec::new(),
        };
        while !stop.load(Ordering::Relaxed) {
            let _ = waiter.wait(&fds, self.next_deadline(&serving));
            for source in 0..self.tuns.len() {
                self.read_host(source, &mut serving);
            }
            let now = clock.now();
            self.deliver_due(now, &mut serving)?;
            if let Some(log) = &mut serving.link_log {
                log.write_due(now, &self.network.samples())?;
            }
            self.record_flow_counts(now, &mut serving);
        }
        if let Some(log) = &mut serving.link_log {
            log.flush()?;
        }
        if let Some(writer) = serving.pcap.take() {
            writer.finish()?;
        }
        let mut report = serving.report;
        report.seconds = clock.now().as_nanos() as f64 / 1e9;
        report.links = self
            .network
            .samples()
            .iter()
            .map(|sample| sample.counters)
            .collect();
        Ok(report)
    }

    /// When the loop must wake without a packet: the links' next event, the next `links.csv`
    /// row or the next flow count, whichever is first.
    fn next_deadline(&self, serving: &Serving) -> Option<Instant> {
        let mut deadline = self.network.poll_timeout();
        if let Some(log) = &serving.link_log {
            deadline = Some(deadline.map_or(log.next_due(), |at| at.min(log.next_due())));
        }
        if !self.tracked.is_empty() {
            let next = serving.next_flow_row;
            deadline = Some(deadline.map_or(next, |at| at.min(next)));
        }
        deadline
    }

    /// The index of the tracked flow a packet belongs to, if any.
    fn tracked_index(&self, source: usize, destination: usize, flow: FlowId) -> Option<usize> {
        self.tracked.iter().position(|tracked| {
            tracked.flow == flow && tracked.from == source && tracked.to == destination
        })
    }

    /// Reads up to 64 packets host `source` sent and puts them on their route; packets for no
    /// testbed host, or with no route, are counted and dropped. A tracked flow's packets are
    /// counted as sent (and in its 100 ms bin).
    fn read_host(&mut self, source: usize, serving: &mut Serving) {
        for _ in 0..64 {
            // Non-blocking: an error (EAGAIN) means nothing more to read.
            let length = match (&self.tuns[source]).read(&mut serving.buffer) {
                Ok(length) if length > 0 => length,
                _ => break,
            };
            let now = serving.clock.now();
            serving.report.packets_in += 1;
            let packet = &serving.buffer[..length];
            let Some((destination, flow)) = classify(packet) else {
                serving.report.foreign_packets += 1;
                continue;
            };
            let Some(route) = self
                .routes
                .get(source)
                .and_then(|row| row.get(destination))
                .and_then(Clone::clone)
            else {
                serving.report.unroutable_packets += 1;
                continue;
            };
            if let Some(index) = self.tracked_index(source, destination, flow) {
                serving.totals[index].sent_bytes += length as u64;
                serving.totals[index].sent_packets += 1;
                let bin = (now.as_nanos() / 100_000_000) as usize;
                let mut log = self.flow_log.lock().unwrap_or_else(|p| p.into_inner());
                let bins = &mut log.sent_per_100ms[index];
                if bins.len() <= bin {
                    bins.resize(bin + 1, 0);
                }
                bins[bin] += 1;
            }
            let _ = self.network.send(
                now,
                flow,
                length as u32,
                ipv4_ecn(packet),
                packet.to_vec(),
                route,
                (source, destination, flow),
            );
        }
    }

    /// Writes the packets the links deliver by `now` to their destination's TUN device, with
    /// the ECN field the links left (CE if marked), counting tracked flows' packets as
    /// received and capturing them.
    fn deliver_due(&mut self, now: Instant, serving: &mut Serving) -> Result<()> {
        self.network.deliver_due(now, &mut serving.delivered);
        for mut packet in serving.delivered.drain(..) {
            let ecn = packet.meta.ecn_field();
            set_ipv4_ecn(&mut packet.body, ecn);
            let (source, destination, flow) = packet.destination;
            if let Some(index) = self.tracked_index(source, destination, flow) {
                serving.totals[index].recv_bytes += packet.body.len() as u64;
                serving.totals[index].recv_packets += 1;
            }
            let written = (&self.tuns[destination]).write(&packet.body);
            if matches!(written, Ok(written) if written > 0) {
                serving.report.packets_out += 1;
            }
            if let Some(writer) = &mut serving.pcap {
                writer.write_packet(unix_nanos_now(), &packet.body)?;
            }
        }
        Ok(())
    }

    /// Samples the receivers' goodput counters into the totals and publishes them: one row per
    /// interval ended by `now`, and the totals so far.
    fn record_flow_counts(&self, now: Instant, serving: &mut Serving) {
        if self.tracked.is_empty() {
            return;
        }
        for (totals, tracked) in serving.totals.iter_mut().zip(&self.tracked) {
            if let Some(counter) = &tracked.delivered_payload {
                totals.goodput_bytes = counter.load(Ordering::Relaxed);
            }
        }
        let mut log = self.flow_log.lock().unwrap_or_else(|p| p.into_inner());
        while serving.next_flow_row <= now {
            log.intervals.push(serving.totals.clone());
            serving.next_flow_row += self.flow_interval;
        }
        log.totals.clone_from(&serving.totals);
    }
}
