//! Short TCP transfers (a TCP flow with `downloads`): RFC 8868 §5.1's short TCP flows, "30
//! connections start simultaneously fetching small (30-50 KB) amounts of data, evenly
//! distributed", then "The idle period between bursts of starting a group of TCP flows is
//! typically derived from an exponential distribution with the mean value of 10 seconds."
//!
//! A group is a set of fresh TCP connections (sender and sink each), started together, each
//! with its transfer size drawn uniformly; when the last one has all its data acknowledged, an
//! idle period drawn from the exponential distribution follows, then the next group. Packets
//! name their connection by group and index, so a stray segment of an old group is ignored.

use rand::Rng;
use tfrc_proto::Instant;
use tfrc_scenario::{DownloadPhase, DownloadsSpec};
use tfrc_tcp::{Ack, ConfigError, Segment, SenderConfig, SinkConfig, TcpSender, TcpSink};

use crate::rng::{element_rng, exponential, ElementRng};

/// Bits of a connection id that number the connection within its group (groups have at most
/// 1000 connections, the scenario's limit).
const INDEX_BITS: u32 = 10;

/// One transfer: its sender and sink, and whether all its data were acknowledged.
struct Connection {
    sender: TcpSender,
    sink: TcpSink,
    done: bool,
}

/// The connections of one short-TCP flow and the schedule of its groups.
pub(super) struct Downloads {
    config: SenderConfig,
    sink_config: SinkConfig,
    spec: DownloadsSpec,
    rng: ElementRng,
    /// The current group's connections.
    connections: Vec<Connection>,
    /// Groups started so far; the current one is `groups - 1`.
    groups: u32,
    /// When the next group starts (`None` while one runs).
    next_group: Option<Instant>,
}

impl Downloads {
    /// A source whose first group starts at `start` (or after an idle period, with
    /// `first = "off"`), its random sizes and idle times from `seed`.
    pub(super) fn new(
        config: SenderConfig,
        sink_config: SinkConfig,
        spec: DownloadsSpec,
        seed: u64,
        start: Instant,
    ) -> Downloads {
        let mut rng = element_rng(seed);
        let first = match spec.first {
            DownloadPhase::On => start,
            DownloadPhase::Off => start + idle_time(&mut rng, &spec),
        };
        Downloads {
            config,
            sink_config,
            spec,
            rng,
            connections: Vec::new(),
            groups: 0,
            next_group: Some(first),
        }
    }

    fn start_group(&mut self) -> Result<(), ConfigError> {
        let segment = u64::from(self.config.segment_size.max(1));
        let mut connections = Vec::with_capacity(self.spec.connections as usize);
        for _ in 0..self.spec.connections {
            let size = self.rng.gen_range(self.spec.min_size..=self.spec.max_size);
            let mut config = self.config.clone();
            config.packet_limit = Some(size.div_ceil(segment));
            connections.push(Connection {
                sender: TcpSender::new(config)?,
                sink: TcpSink::new(self.sink_config.clone())?,
                done: false,
            });
        }
        self.connections = connections;
        self.groups += 1;
        Ok(())
    }

    fn id(&self, index: usize) -> u32 {
        ((self.groups - 1) << INDEX_BITS) | index as u32
    }

    /// The current group's connection named by `id`, if it is one.
    fn connection(&mut self, id: u32) -> Option<&mut Connection> {
        let current = self.groups.checked_sub(1)?;
        if id >> INDEX_BITS != current {
            return None;
        }
        self.connections
            .get_mut((id & ((1 << INDEX_BITS) - 1)) as usize)
    }

    /// The senders' side at `now`: starts a group that is due (unless the flow has stopped,
    /// `active` false), lets every sender act, hands each segment to `send` with its
    /// connection id, and schedules the idle period after a group's last transfer. Returns
    /// when to be woken next.
    pub(super) fn poll_senders(
        &mut self,
        now: Instant,
        active: bool,
        send: &mut impl FnMut(u32, Segment),
    ) -> Result<Option<Instant>, ConfigError> {
        if active && self.next_group.is_some_and(|at| at <= now) {
            self.next_group = None;
            self.start_group()?;
        }
        let mut want: Option<Instant> = None;
        let mut running = 0;
        for index in 0..self.connections.len() {
            let id = self.id(index);
            let connection = &mut self.connections[index];
            if !connection.done {
                connection.sender.handle_timeout(now);
                while let Some(segment) = connection.sender.poll_transmit(now) {
                    send(id, segment);
                }
            }
            if !connection.done && connection.sender.is_finished() {
                connection.done = true;
            }
            if !connection.done {
                running += 1;
                want = [want, connection.sender.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min();
            }
        }
        if running == 0 && self.next_group.is_none() && active {
            let idle = idle_time(&mut self.rng, &self.spec);
            self.next_group = Some(now + idle);
        }
        if active {
            want = [want, self.next_group].into_iter().flatten().min();
        }
        Ok(want)
    }

    /// An ACK for connection `id` arrived.
    pub(super) fn handle_ack(&mut self, now: Instant, id: u32, ack: &Ack) {
        if let Some(connection) = self.connection(id) {
            if !connection.done {
                let _ = connection.sender.handle_ack(now, ack);
            }
        }
    }

    /// A segment for connection `id` arrived; returns the payload bytes its sink delivered in
    /// order (goodput).
    pub(super) fn handle_segment(&mut self, now: Instant, id: u32, segment: &Segment) -> u64 {
        let Some(connection) = self.connection(id) else {
            return 0;
        };
        let before = connection.sink.delivered_bytes();
        let _ = connection.sink.handle_segment(now, segment);
        connection.sink.delivered_bytes() - before
    }

    /// The sinks' side at `now`: their timers, and every ACK they have ready handed to `send`
    /// with its connection id. Returns when to be woken next.
    pub(super) fn poll_sinks(
        &mut self,
        now: Instant,
        send: &mut impl FnMut(u32, Ack),
    ) -> Option<Instant> {
        let mut want: Option<Instant> = None;
        for index in 0..self.connections.len() {
            let id = self.id(index);
            let sink = &mut self.connections[index].sink;
            if sink.poll_timeout().is_some_and(|at| at <= now) {
                sink.handle_timeout(now);
            }
            while let Some(ack) = sink.poll_ack() {
                send(id, ack);
            }
            want = [want, sink.poll_timeout()].into_iter().flatten().min();
        }
        want
    }

    /// The flow stopped at `now`: no new data after this (transfers in progress stop as an
    /// ns-2 FTP source does: what was sent is still retransmitted until acknowledged).
    pub(super) fn stop(&mut self, now: Instant) {
        for connection in &mut self.connections {
            connection.sender.stop(now);
        }
    }
}

fn idle_time(rng: &mut ElementRng, spec: &DownloadsSpec) -> core::time::Duration {
    tfrc_proto::time::duration_from_secs(exponential(rng, spec.idle.as_secs_f64()))
}
