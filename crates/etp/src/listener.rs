//! The listening side of connection set-up, with a cookie: no state is kept for a requester
//! until it proves it receives at its address.
//!
//! 1. INIT (connection id, client tag, descriptor) → the listener checks the descriptor against
//!    its [`Policy`] and answers either ERROR ("descriptor refused: …") or INIT_ACK with a cookie:
//!    a keyed SipHash-2-4 MAC over the requester's address, connection id, tag, issue time and
//!    descriptor. Nothing is stored.
//! 2. COOKIE_ECHO (cookie, tag, descriptor) → the listener recomputes the MAC, checks the
//!    cookie's age, checks the descriptor again and only then creates the [`Connection`], which
//!    answers COOKIE_ACK.

use core::hash::Hasher;
use core::time::Duration;
use std::net::SocketAddr;

use siphasher::sip::SipHasher24;
use tfrc_proto::Instant;

use crate::connection::{close_code, Connection, Policy, PolicyError};
use crate::descriptor::Descriptor;
use crate::wire::{Repr, COOKIE_LEN};

/// Listener settings.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Key of the cookie MAC; draw it at random (the UDP driver uses the OS source).
    pub secret: [u8; 16],
    /// What the listener accepts.
    pub policy: Policy,
    /// How long a cookie stays valid.
    pub cookie_lifetime: Duration,
}

impl ListenerConfig {
    /// A listener with this secret, the default policy and a 10 s cookie lifetime.
    pub fn new(secret: [u8; 16]) -> ListenerConfig {
        ListenerConfig {
            secret,
            policy: Policy::default(),
            cookie_lifetime: Duration::from_secs(10),
        }
    }
}

/// Listener counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerStats {
    /// INITs answered with a cookie.
    pub cookies_sent: u64,
    /// Connections created.
    pub accepted: u64,
    /// Requests refused (descriptor).
    pub refused: u64,
    /// Bad or stale cookies.
    pub bad_cookies: u64,
    /// Other datagrams ignored.
    pub ignored: u64,
}

/// What to do with a datagram that belongs to no connection.
#[derive(Debug)]
pub enum ListenerOutput {
    /// Send `reply[..n]` back to the requester.
    Reply(usize),
    /// A new connection; its first `poll_transmit` is the COOKIE_ACK.
    Accept(Box<Connection>),
    /// Dropped, for this reason.
    Ignore(&'static str),
}

/// The stateless half of connection set-up.
#[derive(Debug)]
pub struct Listener {
    config: ListenerConfig,
    stats: ListenerStats,
}

fn address_bytes(peer: &SocketAddr) -> Vec<u8> {
    let mut bytes = match peer.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    bytes.extend_from_slice(&peer.port().to_be_bytes());
    bytes
}

impl Listener {
    /// A listener.
    pub fn new(config: ListenerConfig) -> Listener {
        Listener {
            config,
            stats: ListenerStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> ListenerStats {
        self.stats
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.config.policy
    }

    fn mac(
        &self,
        peer: &SocketAddr,
        connection_id: u32,
        client_tag: u32,
        issued_at: u64,
        descriptor: &[u8],
    ) -> u64 {
        let mut hasher = SipHasher24::new_with_key(&self.config.secret);
        hasher.write(&address_bytes(peer));
        hasher.write(&connection_id.to_be_bytes());
        hasher.write(&client_tag.to_be_bytes());
        hasher.write(&issued_at.to_be_bytes());
        hasher.write(&(descriptor.len() as u64).to_be_bytes());
        hasher.write(descriptor);
        hasher.finish()
    }

    fn refuse(&mut self, connection_id: u32, reason: &str, reply: &mut [u8]) -> ListenerOutput {
        self.stats.refused += 1;
        let text = format!("descriptor refused: {reason}");
        let mut end = text.len().min(crate::wire::MAX_REASON_LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let repr = Repr::Error {
            connection_id,
            code: close_code::DESCRIPTOR_REFUSED,
            reason: &text.as_bytes()[..end],
        };
        match repr.emit(reply) {
            Ok(length) => ListenerOutput::Reply(length),
            Err(_) => ListenerOutput::Ignore("reply buffer too small"),
        }
    }

    /// Handles a datagram from `peer` that no existing connection claimed.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        bytes: &[u8],
        reply: &mut [u8],
    ) -> ListenerOutput {
        let Ok(repr) = Repr::parse(bytes) else {
            self.stats.ignored += 1;
            return ListenerOutput::Ignore("malformed datagram");
        };
        match repr {
            Repr::Init {
                connection_id,
                client_tag,
                descriptor,
            } => self.on_init(now, peer, (connection_id, client_tag), descriptor, reply),
            Repr::CookieEcho {
                connection_id,
                cookie,
                client_tag,
                descriptor,
            } => self.on_cookie_echo(
                now,
                peer,
                (connection_id, client_tag),
                (&cookie, descriptor),
                reply,
            ),
            _ => {
                self.stats.ignored += 1;
                ListenerOutput::Ignore("not a connection request")
            }
        }
    }

    /// INIT: refuses a descriptor the policy does not accept, else answers with a cookie that
    /// binds the peer, the ids, the time and the descriptor (no state is kept).
    fn on_init(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        (connection_id, client_tag): (u32, u32),
        descriptor: &[u8],
        reply: &mut [u8],
    ) -> ListenerOutput {
        let checked = Descriptor::from_json_bytes(descriptor)
            .map_err(PolicyError::from)
            .and_then(|parsed| self.config.policy.check(&parsed));
        if let Err(reason) = checked {
            return self.refuse(connection_id, &reason.to_string(), reply);
        }
        let issued_at = now.as_nanos() / 1_000_000;
        let mac = self.mac(&peer, connection_id, client_tag, issued_at, descriptor);
        let mut cookie = [0u8; COOKIE_LEN];
        cookie[..8].copy_from_slice(&issued_at.to_be_bytes());
        cookie[16..].copy_from_slice(&mac.to_be_bytes());
        let answer = Repr::InitAck {
            connection_id,
            client_tag,
            cookie,
        };
        match answer.emit(reply) {
            Ok(length) => {
                self.stats.cookies_sent += 1;
                ListenerOutput::Reply(length)
            }
            Err(_) => ListenerOutput::Ignore("reply buffer too small"),
        }
    }

    /// COOKIE_ECHO: a valid, fresh cookie proves the peer's address; the descriptor is checked
    /// again and the connection created, seeded from the cookie's MAC.
    fn on_cookie_echo(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        (connection_id, client_tag): (u32, u32),
        (cookie, descriptor): (&[u8; COOKIE_LEN], &[u8]),
        reply: &mut [u8],
    ) -> ListenerOutput {
        let mut issued = [0u8; 8];
        issued.copy_from_slice(&cookie[..8]);
        let issued_at = u64::from_be_bytes(issued);
        let mut mac = [0u8; 8];
        mac.copy_from_slice(&cookie[16..]);
        let expected = self.mac(&peer, connection_id, client_tag, issued_at, descriptor);
        let now_ms = now.as_nanos() / 1_000_000;
        let lifetime = self.config.cookie_lifetime.as_millis() as u64;
        let reserved_clear = cookie[8..16].iter().all(|byte| *byte == 0);
        if u64::from_be_bytes(mac) != expected
            || !reserved_clear
            || issued_at > now_ms
            || now_ms - issued_at > lifetime
        {
            self.stats.bad_cookies += 1;
            return ListenerOutput::Ignore("invalid or stale cookie");
        }
        let parsed = match Descriptor::from_json_bytes(descriptor)
            .map_err(PolicyError::from)
            .and_then(|parsed| self.config.policy.check(&parsed).map(|()| parsed))
        {
            Ok(parsed) => parsed,
            Err(reason) => return self.refuse(connection_id, &reason.to_string(), reply),
        };
        let mut seed_hasher = SipHasher24::new_with_key(&self.config.secret);
        seed_hasher.write(b"connection seed");
        seed_hasher.write(&expected.to_be_bytes());
        match Connection::accept(
            now,
            parsed,
            connection_id,
            client_tag,
            seed_hasher.finish(),
            self.config.policy.clone(),
            (now_ms > issued_at).then(|| Duration::from_millis(now_ms - issued_at)),
        ) {
            Ok(connection) => {
                self.stats.accepted += 1;
                ListenerOutput::Accept(Box::new(connection))
            }
            Err(reason) => self.refuse(connection_id, &reason.to_string(), reply),
        }
    }
}

/// The listening side of one client in a run without sockets (the [`crate::harness`], the
/// simulator): a [`Listener`] and the connection it accepts. A datagram of the accepted
/// connection goes to it; anything else (an INIT, repeated or not, a COOKIE_ECHO before the
/// connection exists) goes to the listener, whose reply the caller sends back.
#[derive(Debug)]
pub struct ListeningEnd {
    listener: Listener,
    connection: Option<Connection>,
    client_address: SocketAddr,
}

impl ListeningEnd {
    /// A listener with `config` for the client at `client_address` (the cookie's address).
    pub fn new(config: ListenerConfig, client_address: SocketAddr) -> ListeningEnd {
        ListeningEnd {
            listener: Listener::new(config),
            connection: None,
            client_address,
        }
    }

    /// The listener.
    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// The accepted connection, once the handshake reached the listener.
    pub fn connection(&self) -> Option<&Connection> {
        self.connection.as_ref()
    }

    /// The accepted connection, to drive it.
    pub fn connection_mut(&mut self) -> Option<&mut Connection> {
        self.connection.as_mut()
    }

    /// A datagram from the client at `now`. Returns the length of the listener's reply written
    /// into `buffer`, if it has one to send back.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        bytes: &[u8],
        buffer: &mut [u8],
    ) -> Option<usize> {
        if let Some(connection) = &mut self.connection {
            let claimed = crate::wire::Packet::new_checked(bytes).is_ok_and(|packet| {
                packet.connection_id() == connection.connection_id()
                    && packet.packet_type() != crate::wire::PacketType::Init
            });
            if claimed {
                connection.handle_datagram(now, bytes);
                return None;
            }
        }
        match self
            .listener
            .handle_datagram(now, self.client_address, bytes, buffer)
        {
            ListenerOutput::Reply(length) => Some(length),
            ListenerOutput::Accept(connection) => {
                self.connection = Some(*connection);
                None
            }
            ListenerOutput::Ignore(_) => None,
        }
    }
}
