//! A deterministic in-process lossy link between two ETP ends, in virtual time.
//!
//! [`Harness`] connects a client [`Connection`] to a [`Listener`] through two one-way
//! [`Link`]s (delay, bottleneck rate with a drop-tail queue, Bernoulli loss, random reordering),
//! all driven from one seed: the same seed gives the same run. Tests use it to check the
//! mechanisms' semantics under loss; `tfrc stream --simulate` uses it for fast, repeatable
//! figures.

use core::cmp::Reverse;
use core::time::Duration;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tfrc_proto::Instant;

use crate::connection::{Connection, Event, Policy, SetupError};
use crate::descriptor::Descriptor;
use crate::listener::{Listener, ListenerConfig, ListeningEnd};
use crate::rate::transmission_time;

/// One direction of the emulated path.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bottleneck rate in bits/s (`None` = infinite).
    pub rate_bits_per_second: Option<f64>,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// Probability that a datagram is delayed by an extra `reorder_delay` (reordering).
    pub reorder: f64,
    /// Extra delay of reordered datagrams.
    pub reorder_delay: Duration,
    /// Most datagrams waiting for the bottleneck; more are dropped (drop-tail).
    pub queue_limit: usize,
}

impl LinkConfig {
    /// A lossless link with this one-way delay and no rate limit.
    pub fn delay(delay: Duration) -> LinkConfig {
        LinkConfig {
            delay,
            rate_bits_per_second: None,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::ZERO,
            queue_limit: 100,
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(LinkConfigError::Loss(self.loss));
        }
        if !(0.0..=1.0).contains(&self.reorder) {
            return Err(LinkConfigError::Reorder(self.reorder));
        }
        if let Some(rate) = self.rate_bits_per_second {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LinkConfigError::Rate(rate));
            }
        }
        if self.queue_limit == 0 {
            return Err(LinkConfigError::EmptyQueue);
        }
        Ok(())
    }
}

/// A [`LinkConfig`] value outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinkConfigError {
    /// The loss probability is not in [0, 1].
    #[error("loss must be in [0, 1], got {0}")]
    Loss(f64),
    /// The reordering probability is not in [0, 1].
    #[error("reorder must be in [0, 1], got {0}")]
    Reorder(f64),
    /// The rate is not finite and positive.
    #[error("rate must be positive, got {0}")]
    Rate(f64),
    /// A queue of no packet.
    #[error("queue limit must be at least 1 packet")]
    EmptyQueue,
}

/// Why a [`Harness`] could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HarnessError {
    /// A link's configuration is invalid.
    #[error(transparent)]
    Link(#[from] LinkConfigError),
    /// The client's connection could not be built.
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// Counters of a link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams offered.
    pub offered: u64,
    /// Lost at random.
    pub lost: u64,
    /// Dropped by the full queue.
    pub queue_drops: u64,
    /// Delivered.
    pub delivered: u64,
}

/// One direction of the path: queue, bottleneck, delay, loss. Carries items of type `T`
/// (datagrams, or datagrams with their destination in the UDP driver).
#[derive(Debug)]
pub struct Link<T = Vec<u8>> {
    config: LinkConfig,
    rng: ChaCha8Rng,
    busy_until: Instant,
    departures: VecDeque<Instant>,
    in_flight: BinaryHeap<Reverse<(Instant, u64)>>,
    items: std::collections::HashMap<u64, T>,
    order: u64,
    stats: LinkStats,
}

impl<T> Link<T> {
    /// A link; `seed` drives its losses and reordering.
    pub fn new(config: LinkConfig, seed: u64) -> Link<T> {
        Link {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            busy_until: Instant::ZERO,
            departures: VecDeque::new(),
            in_flight: BinaryHeap::new(),
            items: std::collections::HashMap::new(),
            order: 0,
            stats: LinkStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Offers an item of `length` bytes at `now`.
    pub fn push(&mut self, now: Instant, length: usize, item: T) {
        self.stats.offered += 1;
        if self.config.loss > 0.0 && self.rng.gen_bool(self.config.loss) {
            self.stats.lost += 1;
            return;
        }
        let departure = match self.config.rate_bits_per_second {
            Some(rate) => {
                while self.departures.front().is_some_and(|time| *time <= now) {
                    self.departures.pop_front();
                }
                if self.departures.len() >= self.config.queue_limit {
                    self.stats.queue_drops += 1;
                    return;
                }
                let start = self.busy_until.max(now);
                let done = start + transmission_time(length, rate / 8.0);
                self.busy_until = done;
                self.departures.push_back(done);
                done
            }
            None => now,
        };
        let mut arrival = departure + self.config.delay;
        if self.config.reorder > 0.0 && self.rng.gen_bool(self.config.reorder) {
            arrival += self.config.reorder_delay;
        }
        self.order += 1;
        self.in_flight.push(Reverse((arrival, self.order)));
        self.items.insert(self.order, item);
    }

    /// When the next datagram arrives.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.in_flight.peek().map(|Reverse((time, _))| *time)
    }

    /// The next item arrived by `now`.
    pub fn pop_arrived(&mut self, now: Instant) -> Option<T> {
        if self.next_arrival()? > now {
            return None;
        }
        let Reverse((_, order)) = self.in_flight.pop()?;
        self.stats.delivered += 1;
        self.items.remove(&order)
    }
}

/// Wake-ups asked for at the instant of the step that asked, in a row, after which the next is
/// moved 1 µs later.
const SAME_INSTANT_LIMIT: u32 = 1000;

/// Keeps a virtual-time loop moving: an end that asks to act at the instant it just acted at,
/// over and over, without doing anything, would hold the loop at that instant for ever; after
/// [`SAME_INSTANT_LIMIT`] such wake-ups in a row the next one is moved 1 µs later and counted as
/// a stall (a bug indicator: tests expect none). The harness and the simulator's ETP media
/// flows use it.
#[derive(Debug, Default)]
pub struct StallGuard {
    at: Option<Instant>,
    repeats: u32,
    stalls: u64,
}

impl StallGuard {
    /// The wake-up `want` asked for at `now`, or 1 µs past `now` when `now` was asked for too
    /// often in a row.
    pub fn check(&mut self, now: Instant, want: Instant) -> Instant {
        if want > now {
            self.at = None;
            self.repeats = 0;
            return want;
        }
        if self.at == Some(now) {
            self.repeats += 1;
        } else {
            self.at = Some(now);
            self.repeats = 0;
        }
        if self.repeats >= SAME_INSTANT_LIMIT {
            self.repeats = 0;
            self.stalls += 1;
            return now + Duration::from_micros(1);
        }
        want
    }

    /// Wake-ups moved so far.
    pub fn stalls(&self) -> u64 {
        self.stalls
    }
}

/// A client and a listener joined by two links, in virtual time.
#[derive(Debug)]
pub struct Harness {
    now: Instant,
    client: Connection,
    server: ListeningEnd,
    to_server: Link,
    to_client: Link,
    buffer: Vec<u8>,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    stall_guard: StallGuard,
}

impl Harness {
    /// A client asking for `descriptor`, a listener with `policy`, and the two links.
    pub fn new(
        descriptor: Descriptor,
        policy: Policy,
        to_server: LinkConfig,
        to_client: LinkConfig,
        seed: u64,
    ) -> Result<Harness, HarnessError> {
        to_server.validate()?;
        to_client.validate()?;
        let now = Instant::from_millis(1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let client = Connection::connect(now, descriptor, rng.gen(), rng.gen())?;
        let mut config = ListenerConfig::new(rng.gen());
        config.policy = policy;
        let client_address = SocketAddr::from(([192, 0, 2, 1], 4000));
        Ok(Harness {
            now,
            client,
            server: ListeningEnd::new(config, client_address),
            to_server: Link::new(to_server, rng.gen()),
            to_client: Link::new(to_client, rng.gen()),
            buffer: vec![0u8; 70_000],
            client_events: Vec::new(),
            server_events: Vec::new(),
            stall_guard: StallGuard::default(),
        })
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The connecting end.
    pub fn client(&mut self) -> &mut Connection {
        &mut self.client
    }

    /// The accepted end, once the handshake reached the listener.
    pub fn server(&mut self) -> Option<&mut Connection> {
        self.server.connection_mut()
    }

    /// Both ends.
    pub fn ends(&mut self) -> (&mut Connection, Option<&mut Connection>) {
        (&mut self.client, self.server.connection_mut())
    }

    /// The listener.
    pub fn listener(&self) -> &Listener {
        self.server.listener()
    }

    /// Counters of the client → server link.
    pub fn to_server_stats(&self) -> LinkStats {
        self.to_server.stats()
    }

    /// Counters of the server → client link.
    pub fn to_client_stats(&self) -> LinkStats {
        self.to_client.stats()
    }

    /// How often an end kept asking to run at the same instant without progress and the harness
    /// stepped over it (a bug indicator: tests expect 0).
    pub fn stalls(&self) -> u64 {
        self.stall_guard.stalls()
    }

    /// Events seen so far at the client (drained from the connection as the harness runs).
    pub fn client_events(&self) -> &[Event] {
        &self.client_events
    }

    /// Events seen so far at the server.
    pub fn server_events(&self) -> &[Event] {
        &self.server_events
    }

    fn flush(&mut self) {
        let now = self.now;
        while let Some(length) = self.client.poll_transmit(now, &mut self.buffer) {
            self.to_server
                .push(now, length, self.buffer[..length].to_vec());
        }
        if let Some(server) = self.server.connection_mut() {
            while let Some(length) = server.poll_transmit(now, &mut self.buffer) {
                self.to_client
                    .push(now, length, self.buffer[..length].to_vec());
            }
        }
        while let Some(event) = self.client.poll_event() {
            self.client_events.push(event);
        }
        if let Some(server) = self.server.connection_mut() {
            while let Some(event) = server.poll_event() {
                self.server_events.push(event);
            }
        }
    }

    fn deliver(&mut self) {
        let now = self.now;
        while let Some(bytes) = self.to_server.pop_arrived(now) {
            if let Some(length) = self.server.handle_datagram(now, &bytes, &mut self.buffer) {
                self.to_client
                    .push(now, length, self.buffer[..length].to_vec());
            }
        }
        while let Some(bytes) = self.to_client.pop_arrived(now) {
            self.client.handle_datagram(now, &bytes);
        }
    }

    /// Runs until `until` (virtual time), moving datagrams and firing timers.
    pub fn run_until(&mut self, until: Instant) {
        loop {
            self.flush();
            let next = [
                self.to_server.next_arrival(),
                self.to_client.next_arrival(),
                self.client.poll_timeout(),
                self.server.connection().and_then(Connection::poll_timeout),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|next| *next <= until) else {
                self.now = self.now.max(until);
                return;
            };
            self.now = self.stall_guard.check(self.now, next).max(self.now);
            self.deliver();
            let now = self.now;
            if self.client.poll_timeout().is_some_and(|time| time <= now) {
                self.client.handle_timeout(now);
            }
            if let Some(server) = self.server.connection_mut() {
                if server.poll_timeout().is_some_and(|time| time <= now) {
                    server.handle_timeout(now);
                }
            }
        }
    }

    /// Runs for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) {
        self.run_until(self.now + duration);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link value out of its domain is refused with a typed error whose text names the
    /// value and its domain; a harness with such a link is refused the same.
    #[test]
    fn bad_link_values_are_named() {
        let lossy = LinkConfig {
            loss: 1.5,
            ..LinkConfig::delay(Duration::ZERO)
        };
        assert_eq!(lossy.validate(), Err(LinkConfigError::Loss(1.5)));
        assert_eq!(
            lossy.validate().unwrap_err().to_string(),
            "loss must be in [0, 1], got 1.5"
        );
        let empty = LinkConfig {
            queue_limit: 0,
            ..LinkConfig::delay(Duration::ZERO)
        };
        assert_eq!(
            empty.validate().unwrap_err().to_string(),
            "queue limit must be at least 1 packet"
        );
        let error = Harness::new(
            Descriptor::single_stream(crate::descriptor::RateControlKind::Tfrc),
            Policy::permissive(),
            lossy,
            LinkConfig::delay(Duration::ZERO),
            1,
        )
        .err()
        .unwrap();
        assert_eq!(error, HarnessError::Link(LinkConfigError::Loss(1.5)));
    }
    use crate::descriptor::{RateControlKind, RateValue, ReliabilityKind};
    use crate::MessageOptions;

    #[test]
    fn an_idle_and_a_busy_run_take_few_steps() {
        let mut descriptor = Descriptor::single_stream(RateControlKind::Fixed);
        descriptor.fixed_rate = Some(RateValue::Text("8Mbps".into()));
        descriptor.streams[0].reliability = ReliabilityKind::None;
        let link = LinkConfig {
            loss: 0.2,
            reorder: 0.2,
            reorder_delay: Duration::from_millis(15),
            ..LinkConfig::delay(Duration::from_millis(10))
        };
        let mut harness =
            Harness::new(descriptor, Policy::permissive(), link.clone(), link, 1).unwrap();
        harness.run_for(Duration::from_secs(3));
        let now = harness.now();
        for _ in 0..20 {
            harness
                .client()
                .send(now, 0, vec![1; 5000], MessageOptions::default())
                .unwrap();
        }
        let started = std::time::Instant::now();
        harness.run_for(Duration::from_secs(20));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(harness.stalls(), 0);
    }
}
