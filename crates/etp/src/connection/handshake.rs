//! The control phases of a [`Connection`]: set-up, descriptor changes and close.
//!
//! - Set-up: the client's INIT is answered by the listener's INIT_ACK carrying a cookie; the
//!   client echoes it (COOKIE_ECHO) and is established at the COOKIE_ACK, or at the first
//!   packet of the established peer if the COOKIE_ACK was lost.
//! - Descriptor changes: RECONFIGURE / RECONFIGURE_ACK, checked against the change rules and
//!   the local [`Policy`](super::Policy), then applied at both ends without reconnecting
//!   (rate control, scheduler and streams).
//! - Close: CLOSE once the send buffer is drained, CLOSE_ACK, and the final state.

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

use rand::Rng;
use tfrc_proto::Instant;

use crate::descriptor::{Descriptor, RateControlKind};
use crate::mechanisms;
use crate::rate;
use crate::wire::{self, Repr, COOKIE_LEN};

use super::send::StreamOut;
use super::{
    close_code, encode, tfrc_packet_size, CloseReason, Connection, Event, Request, State,
    HANDSHAKE_INTERVAL,
};

/// `text` cut to at most [`wire::MAX_REASON_LEN`] bytes on a character boundary, for the reason
/// field of a RECONFIGURE_ACK.
fn reason_bytes(text: &str) -> Vec<u8> {
    let mut end = text.len().min(wire::MAX_REASON_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.as_bytes()[..end].to_vec()
}

impl Connection {
    /// A first RTT sample from the handshake: it arms the loss timers and the deadline mapping
    /// before any data is acknowledged.
    pub(super) fn note_handshake_rtt(&mut self, rtt: Duration) {
        let rtt = rtt.max(Duration::from_micros(1));
        self.min_rtt = Some(rtt);
        self.latest_rtt = Some(rtt);
        self.smoothed_rtt = Some(rtt);
    }

    // ----- close -----

    /// Starts the close handshake once the application asked for it and every queued message
    /// is acknowledged or abandoned: CLOSE is then repeated until CLOSE_ACK. Called again after
    /// each ACK and timer until then.
    pub(super) fn maybe_start_close(&mut self, now: Instant) {
        if self.close_wanted && self.state == State::Established && self.buffered_bytes == 0 {
            self.state = State::Closing;
            self.close_request = Some(Request {
                packet: encode(&Repr::Close {
                    connection_id: self.connection_id,
                    code: close_code::NORMAL,
                    reason: b"closed by the application",
                }),
                next_at: now,
                attempts: 0,
            });
        }
    }

    /// Ends the connection, once: records `reason` and reports it as [`Event::Closed`].
    pub(super) fn finish(&mut self, reason: CloseReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.close_reason = Some(reason.clone());
            self.events.push_back(Event::Closed(reason));
        }
    }

    // ----- descriptor application -----

    /// Rebuilds the per-stream sending state for `descriptor`: new streams are created, kept
    /// ones get their new mechanisms and ordering domain (a domain already in use keeps its
    /// ordering), and the messages waiting on streams no longer described are abandoned.
    pub(super) fn apply_streams(&mut self, descriptor: &Descriptor) {
        let mut kept = BTreeMap::new();
        for stream in &descriptor.streams {
            let (domain, ordered) = descriptor.ordering_domain(stream);
            let mut out = match self.streams.remove(&stream.id) {
                Some(existing) => existing,
                None => StreamOut {
                    descriptor: stream.clone(),
                    mechanisms: mechanisms::for_stream(stream),
                    domain,
                    ordered,
                    new_messages: VecDeque::new(),
                    retransmissions: VecDeque::new(),
                },
            };
            out.descriptor = stream.clone();
            out.mechanisms = mechanisms::for_stream(stream);
            if self
                .domains_out
                .get(&domain)
                .is_some_and(|existing| existing.ordered != ordered)
            {
                // A domain keeps its ordering for life; a stream changing ordering moves to its
                // own fresh domain id only if free, else keeps the old one.
                out.ordered = self.domains_out[&domain].ordered;
            } else {
                out.domain = domain;
                out.ordered = ordered;
            }
            self.stats.streams.entry(stream.id).or_default();
            kept.insert(stream.id, out);
        }
        // Streams no longer described: their waiting messages are abandoned.
        let removed: Vec<StreamOut> = core::mem::take(&mut self.streams).into_values().collect();
        self.streams = kept;
        for stream in removed {
            for (domain, number) in stream.new_messages {
                self.abandon(domain, number, false);
            }
            for piece in stream.retransmissions {
                self.abandon(piece.domain, piece.message, false);
            }
        }
    }

    /// Switches to `descriptor` (already checked). Between TFRC and gTFRC only the target rate
    /// changes, so the rate estimate survives; otherwise the rate control is rebuilt under a new
    /// epoch unless it stays `fixed` at the same rate. The scheduler and the streams follow. On
    /// an error nothing has changed.
    fn apply_descriptor(&mut self, now: Instant, descriptor: Descriptor) -> Result<(), String> {
        let old = self.rate.kind();
        let new = descriptor.rate_control;
        let tfrc_family = |kind| matches!(kind, RateControlKind::Tfrc | RateControlKind::Gtfrc);
        let same_fixed = old == RateControlKind::Fixed
            && new == RateControlKind::Fixed
            && descriptor.fixed_rate_bytes() == self.descriptor.fixed_rate_bytes();
        if tfrc_family(old) && tfrc_family(new) {
            let target = (new == RateControlKind::Gtfrc)
                .then(|| descriptor.target_rate_bytes())
                .flatten();
            if !self.rate.set_target_rate(target) {
                return Err("the target rate was refused by the rate control".into());
            }
        } else if old != new || !same_fixed {
            let nonce = self.rng.gen();
            self.rate = rate::build(
                new,
                descriptor.target_rate_bytes(),
                descriptor.fixed_rate_bytes(),
                tfrc_packet_size(&descriptor),
                self.connection_id,
                nonce,
                now,
            )
            .map_err(|error| error.to_string())?;
            self.epoch = self.epoch.wrapping_add(1);
        }
        if descriptor.scheduler != self.descriptor.scheduler {
            self.scheduler = mechanisms::scheduler_for(descriptor.scheduler);
        }
        self.apply_streams(&descriptor);
        self.descriptor = descriptor;
        Ok(())
    }

    // ----- set-up -----

    /// True once the client echoes the cookie: the listener may then have created its side.
    pub(super) fn handshake_cookie_sent(&self) -> bool {
        self.handshake.as_ref().is_some_and(|request| {
            Repr::parse(&request.packet).is_ok_and(|repr| matches!(repr, Repr::CookieEcho { .. }))
        })
    }

    /// INIT_ACK: checks the client tag, takes an RTT sample if it answers the only INIT sent,
    /// and replaces the INIT with the COOKIE_ECHO.
    pub(super) fn on_init_ack(&mut self, now: Instant, client_tag: u32, cookie: [u8; COOKIE_LEN]) {
        if self.state != State::Connecting || client_tag != self.client_tag {
            self.stats.malformed_received += 1;
            return;
        }
        if let Some(request) = &self.handshake {
            // Only an unambiguous sample: the first INIT answered.
            if request.attempts == 1 {
                let sent_at = request.next_at - HANDSHAKE_INTERVAL;
                self.note_handshake_rtt(now - sent_at);
            }
        }
        let echo = encode(&Repr::CookieEcho {
            connection_id: self.connection_id,
            cookie,
            client_tag: self.client_tag,
            descriptor: self.descriptor.to_json().as_bytes(),
        });
        self.handshake = Some(Request {
            packet: echo,
            next_at: now,
            attempts: 0,
        });
    }

    /// The client's handshake is over: data may flow.
    pub(super) fn establish(&mut self) {
        if self.state == State::Connecting {
            self.state = State::Established;
            self.handshake = None;
            self.events.push_back(Event::Connected);
        }
    }

    // ----- descriptor changes -----

    /// RECONFIGURE from the peer. A repeat of its last change gets the same answer again and an
    /// older one is ignored; a new one is checked (change rules, [`Policy`](super::Policy)),
    /// applied, and answered with RECONFIGURE_ACK.
    pub(super) fn on_reconfigure(&mut self, now: Instant, change_id: u32, descriptor: &[u8]) {
        if let Some((last, accepted, reason)) = &self.peer_change {
            if change_id <= *last {
                if change_id == *last {
                    let answer = encode(&Repr::ReconfigureAck {
                        connection_id: self.connection_id,
                        change_id,
                        accepted: *accepted,
                        reason: reason.as_bytes(),
                    });
                    self.control.push_back(answer);
                }
                return;
            }
        }
        let outcome = Descriptor::from_json_bytes(descriptor)
            .map_err(|error| error.to_string())
            .and_then(|new| {
                new.check_change_from(&self.descriptor)
                    .map_err(|error| error.to_string())?;
                self.policy.check(&new).map_err(|error| error.to_string())?;
                Ok(new)
            })
            .and_then(|new| self.apply_descriptor(now, new));
        let (accepted, reason) = match outcome {
            Ok(()) => {
                self.events.push_back(Event::Reconfigured {
                    change_id,
                    by_peer: true,
                });
                (true, String::new())
            }
            Err(reason) => (false, format!("descriptor refused: {reason}")),
        };
        let answer = encode(&Repr::ReconfigureAck {
            connection_id: self.connection_id,
            change_id,
            accepted,
            reason: &reason_bytes(&reason),
        });
        self.control.push_back(answer);
        self.peer_change = Some((change_id, accepted, reason));
    }

    /// RECONFIGURE_ACK for this side's pending change: applies the descriptor if the peer
    /// accepted it and reports the outcome as an event. An answer to another change is ignored.
    pub(super) fn on_reconfigure_ack(
        &mut self,
        now: Instant,
        change_id: u32,
        accepted: bool,
        reason: &[u8],
    ) {
        let Some(pending) = self.pending_change.take() else {
            return;
        };
        if pending.change_id != change_id {
            self.pending_change = Some(pending);
            return;
        }
        if accepted {
            match self.apply_descriptor(now, pending.descriptor) {
                Ok(()) => self.events.push_back(Event::Reconfigured {
                    change_id,
                    by_peer: false,
                }),
                Err(reason) => self.events.push_back(Event::ReconfigureRefused {
                    change_id,
                    reason: format!("accepted by the peer but not applicable here: {reason}"),
                }),
            }
        } else {
            self.events.push_back(Event::ReconfigureRefused {
                change_id,
                reason: String::from_utf8_lossy(reason).into_owned(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Policy;
    use crate::descriptor::RateValue;

    /// An established listener's side with `policy`.
    fn established(descriptor: Descriptor, policy: Policy) -> Connection {
        let now = Instant::from_secs(1);
        let mut connection =
            Connection::accept(now, descriptor, 9, 0x1234, 42, policy, None).unwrap();
        connection.control.clear();
        connection.events.clear();
        connection
    }

    /// A gTFRC descriptor with target rate `bits` bit/s.
    fn gtfrc(bits: f64) -> Descriptor {
        let mut descriptor = Descriptor::single_stream(RateControlKind::Gtfrc);
        descriptor.target_rate = Some(RateValue::BitsPerSecond(bits));
        descriptor
    }

    /// A fixed-rate descriptor at `bits` bit/s.
    fn fixed(bits: f64) -> Descriptor {
        let mut descriptor = Descriptor::single_stream(RateControlKind::Fixed);
        descriptor.fixed_rate = Some(RateValue::BitsPerSecond(bits));
        descriptor
    }

    #[test]
    fn reason_bytes_are_cut_at_the_limit_on_a_character_boundary() {
        assert_eq!(reason_bytes("short"), b"short");
        let even = "é".repeat(wire::MAX_REASON_LEN);
        assert_eq!(reason_bytes(&even).len(), wire::MAX_REASON_LEN);
        // Shifted by one byte, the limit falls inside a two-byte character.
        let odd = format!("a{even}");
        let cut = reason_bytes(&odd);
        assert_eq!(cut.len(), wire::MAX_REASON_LEN - 1);
        assert!(core::str::from_utf8(&cut).is_ok());
    }

    #[test]
    fn init_ack_of_the_only_init_gives_an_rtt_sample_and_starts_the_cookie_echo() {
        let start = Instant::from_secs(1);
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let mut connection = Connection::connect(start, descriptor, 9, 42).unwrap();
        let mut buffer = [0u8; 1500];
        assert!(connection.poll_transmit(start, &mut buffer).is_some());
        let answered = start + Duration::from_millis(30);
        let cookie = [7u8; COOKIE_LEN];
        connection.on_init_ack(answered, connection.client_tag ^ 1, cookie);
        assert_eq!(connection.stats.malformed_received, 1);
        assert!(!connection.handshake_cookie_sent());
        connection.on_init_ack(answered, connection.client_tag, cookie);
        assert!(connection.handshake_cookie_sent());
        assert_eq!(connection.smoothed_rtt, Some(Duration::from_millis(30)));
        let length = connection.poll_transmit(answered, &mut buffer).unwrap();
        assert!(matches!(
            Repr::parse(&buffer[..length]),
            Ok(Repr::CookieEcho { cookie: echoed, .. }) if echoed == cookie
        ));
        assert_eq!(connection.state(), State::Connecting);
        connection.establish();
        assert_eq!(connection.state(), State::Established);
        assert!(connection.handshake.is_none());
        assert_eq!(connection.poll_event(), Some(Event::Connected));
    }

    #[test]
    fn init_ack_after_a_repeated_init_gives_no_rtt_sample() {
        let start = Instant::from_secs(1);
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let mut connection = Connection::connect(start, descriptor, 9, 42).unwrap();
        let mut buffer = [0u8; 1500];
        let repeated = start + HANDSHAKE_INTERVAL;
        assert!(connection.poll_transmit(start, &mut buffer).is_some());
        assert!(connection.poll_transmit(repeated, &mut buffer).is_some());
        let tag = connection.client_tag;
        connection.on_init_ack(repeated + Duration::from_millis(30), tag, [7; COOKIE_LEN]);
        assert!(connection.handshake_cookie_sent());
        assert_eq!(connection.smoothed_rtt, None);
    }

    #[test]
    fn a_repeated_reconfigure_gets_the_same_answer_and_is_applied_once() {
        let now = Instant::from_secs(2);
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let mut connection = established(descriptor, Policy::permissive());
        let mut new = connection.descriptor().clone();
        new.streams[0].priority = 3;
        let json = new.to_json();
        connection.on_reconfigure(now, 1, json.as_bytes());
        assert_eq!(
            connection.poll_event(),
            Some(Event::Reconfigured {
                change_id: 1,
                by_peer: true
            })
        );
        assert_eq!(connection.descriptor().streams[0].priority, 3);
        let answer = connection.control.pop_front().unwrap();
        assert!(matches!(
            Repr::parse(&answer),
            Ok(Repr::ReconfigureAck {
                change_id: 1,
                accepted: true,
                ..
            })
        ));
        connection.on_reconfigure(now, 1, json.as_bytes());
        assert_eq!(connection.control.pop_front(), Some(answer));
        assert_eq!(connection.poll_event(), None);
        // An older change is not answered at all.
        connection.on_reconfigure(now, 0, json.as_bytes());
        assert!(connection.control.is_empty());
    }

    #[test]
    fn a_change_the_policy_refuses_is_answered_with_the_reason_and_not_applied() {
        let now = Instant::from_secs(2);
        let policy = Policy {
            max_rate_bits_per_second: Some(1e6),
            allow_unpaced: false,
        };
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let mut connection = established(descriptor, policy);
        connection.on_reconfigure(now, 1, gtfrc(2e6).to_json().as_bytes());
        let answer = connection.control.pop_front().unwrap();
        let Ok(Repr::ReconfigureAck {
            change_id: 1,
            accepted: false,
            reason,
            ..
        }) = Repr::parse(&answer)
        else {
            panic!("not a refusal of change 1");
        };
        let reason = core::str::from_utf8(reason).unwrap();
        assert!(reason.contains("above this peer's limit"), "{reason}");
        assert_eq!(connection.poll_event(), None);
        assert_eq!(connection.rate.kind(), RateControlKind::Tfrc);
        assert_eq!(connection.descriptor().rate_control, RateControlKind::Tfrc);
    }

    #[test]
    fn only_leaving_the_tfrc_family_or_the_fixed_rate_starts_a_new_epoch() {
        let now = Instant::from_secs(2);
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let mut connection = established(descriptor, Policy::permissive());
        connection.apply_descriptor(now, gtfrc(1e6)).unwrap();
        assert_eq!(connection.rate.kind(), RateControlKind::Gtfrc);
        assert_eq!(connection.epoch, 0);
        connection.apply_descriptor(now, fixed(1e6)).unwrap();
        assert_eq!(connection.rate.kind(), RateControlKind::Fixed);
        assert_eq!(connection.epoch, 1);
        connection.apply_descriptor(now, fixed(1e6)).unwrap();
        assert_eq!(connection.epoch, 1);
        connection.apply_descriptor(now, fixed(2e6)).unwrap();
        assert_eq!(connection.epoch, 2);
        assert_eq!(connection.descriptor().fixed_rate_bytes(), Some(2e6 / 8.0));
    }
}
