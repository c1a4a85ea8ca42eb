//! Connection set-up and tear-down: cookie, refusal, keep-alive, peer gone, close.

use core::time::Duration;
use std::net::SocketAddr;

use etp::connection::{CloseReason, ConnectionError, State};
use etp::descriptor::{Descriptor, RateControlKind, RateValue};
use etp::harness::{Harness, LinkConfig};
use etp::wire::Repr;
use etp::{Connection, Event, Listener, ListenerConfig, ListenerOutput, MessageOptions, Policy};
use tfrc_proto::Instant;

fn link() -> LinkConfig {
    LinkConfig::delay(Duration::from_millis(20))
}

#[test]
fn listener_keeps_no_state_before_the_cookie_comes_back() {
    let now = Instant::from_secs(5);
    let mut client =
        Connection::connect(now, Descriptor::single_stream(RateControlKind::Tfrc), 77, 1).unwrap();
    let mut listener = Listener::new(ListenerConfig::new([9; 16]));
    let peer: SocketAddr = "198.51.100.7:5000".parse().unwrap();
    let mut buffer = [0u8; 2048];
    let mut reply = [0u8; 2048];
    let init_length = client.poll_transmit(now, &mut buffer).unwrap();
    let init = buffer[..init_length].to_vec();
    let ListenerOutput::Reply(length) = listener.handle_datagram(now, peer, &init, &mut reply)
    else {
        panic!("INIT must be answered");
    };
    assert!(matches!(
        Repr::parse(&reply[..length]),
        Ok(Repr::InitAck { .. })
    ));
    assert_eq!(listener.stats().accepted, 0);
    client.handle_datagram(now, &reply[..length]);
    let echo_length = client.poll_transmit(now, &mut buffer).unwrap();
    let echo = buffer[..echo_length].to_vec();
    // From another address, or with a flipped cookie byte, or too late: refused.
    let other: SocketAddr = "198.51.100.8:5000".parse().unwrap();
    assert!(matches!(
        listener.handle_datagram(now, other, &echo, &mut reply),
        ListenerOutput::Ignore(_)
    ));
    for byte in [10, 20, 30] {
        let mut forged = echo.clone();
        forged[byte] ^= 1;
        assert!(matches!(
            listener.handle_datagram(now, peer, &forged, &mut reply),
            ListenerOutput::Ignore(_)
        ));
    }
    let late = now + Duration::from_secs(11);
    assert!(matches!(
        listener.handle_datagram(late, peer, &echo, &mut reply),
        ListenerOutput::Ignore(_)
    ));
    assert_eq!(listener.stats().bad_cookies, 5);
    // The genuine echo creates the connection.
    let ListenerOutput::Accept(mut server) = listener.handle_datagram(now, peer, &echo, &mut reply)
    else {
        panic!("a valid cookie must be accepted");
    };
    let length = server.poll_transmit(now, &mut buffer).unwrap();
    client.handle_datagram(now, &buffer[..length]);
    assert_eq!(client.state(), State::Established);
    assert_eq!(client.poll_event(), Some(Event::Connected));
}

#[test]
fn a_refused_descriptor_is_reported_with_its_reason() {
    let mut descriptor = Descriptor::single_stream(RateControlKind::Gtfrc);
    descriptor.target_rate = Some(RateValue::Text("50Mbps".into()));
    let policy = Policy {
        max_rate_bits_per_second: Some(10e6),
        allow_unpaced: false,
    };
    let mut harness = Harness::new(descriptor, policy, link(), link(), 1).unwrap();
    harness.run_for(Duration::from_secs(1));
    let Some(Event::Closed(CloseReason::Error(ConnectionError::Refused(reason)))) =
        harness.client_events().last().cloned()
    else {
        panic!("expected a refusal, got {:?}", harness.client_events());
    };
    assert!(
        reason.contains("descriptor refused") && reason.contains("limit"),
        "{reason}"
    );
    assert!(harness.server().is_none());
    // Unpaced sessions are refused by the default policy too.
    let descriptor = Descriptor::single_stream(RateControlKind::None);
    let mut harness = Harness::new(descriptor, Policy::default(), link(), link(), 2).unwrap();
    harness.run_for(Duration::from_secs(1));
    assert!(matches!(
        harness.client_events().last(),
        Some(Event::Closed(CloseReason::Error(ConnectionError::Refused(reason)))) if reason.contains("none")
    ));
}

#[test]
fn no_answer_means_handshake_timeout() {
    let dead = LinkConfig {
        loss: 1.0,
        ..link()
    };
    let mut harness = Harness::new(
        Descriptor::single_stream(RateControlKind::Tfrc),
        Policy::default(),
        dead,
        link(),
        3,
    )
    .unwrap();
    harness.run_for(Duration::from_secs(10));
    assert_eq!(
        harness.client_events().last(),
        Some(&Event::Closed(CloseReason::Error(
            ConnectionError::HandshakeTimeout(5)
        )))
    );
}

#[test]
fn keepalives_hold_an_idle_session_and_silence_means_peer_gone() {
    let mut harness = Harness::new(
        Descriptor::single_stream(RateControlKind::Tfrc),
        Policy::default(),
        link(),
        link(),
        4,
    )
    .unwrap();
    harness.run_for(Duration::from_secs(30));
    assert_eq!(harness.client().state(), State::Established);
    assert!(harness.client().stats().keepalives_sent >= 20);
    // Now the peer disappears: nothing is answered any more.
    let server = harness.server().unwrap();
    let now = Instant::from_secs(40);
    server.handle_timeout(now);
    assert_eq!(
        server.poll_event(),
        Some(Event::Closed(CloseReason::Error(
            ConnectionError::PeerGone(Duration::from_secs(10))
        )))
    );
}

#[test]
fn close_delivers_what_was_queued_then_ends_both_sides() {
    let mut harness = Harness::new(
        Descriptor::single_stream(RateControlKind::Tfrc),
        Policy::default(),
        link(),
        link(),
        5,
    )
    .unwrap();
    harness.run_for(Duration::from_millis(200));
    let now = harness.now();
    for index in 0..20u8 {
        harness
            .client()
            .send(now, 0, vec![index; 3000], MessageOptions::default())
            .unwrap();
    }
    harness.client().close(now);
    assert!(harness
        .client()
        .send(now, 0, vec![1], MessageOptions::default())
        .is_err());
    harness.run_for(Duration::from_secs(20));
    let mut count = 0;
    while let Some(message) = harness.server().unwrap().recv() {
        assert_eq!(message.data, vec![count; 3000]);
        count += 1;
    }
    assert_eq!(count, 20);
    assert_eq!(harness.client().state(), State::Closed);
    assert_eq!(
        harness.client_events().last(),
        Some(&Event::Closed(CloseReason::Local))
    );
    assert!(matches!(
        harness.server_events().last(),
        Some(Event::Closed(CloseReason::Peer(_)))
    ));
}
