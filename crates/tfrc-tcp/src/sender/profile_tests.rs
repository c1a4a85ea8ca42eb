//! Unit tests of the rules that tell Linux's TCP (the default of CUBIC and BBR) from ns-3.37's
//! (`SenderConfig::ns3`): the timer after a timeout and in recovery, and ssthresh at repeated
//! timeouts.

use super::tests::{at, deliver, drain, sack_the_three_after_the_first, sequences};
use super::*;
use crate::{SackBlock, SinkConfig, TcpSink};

/// A CUBIC sender of `config`'s profile whose first flight was acknowledged at 100 ms (an RTT
/// sample of 100 ms), its sink, and the second flight, sent at 100 ms.
fn cubic_after_one_round(config: SenderConfig) -> (TcpSender, TcpSink, Vec<Segment>) {
    let mut sender = TcpSender::new(config).unwrap();
    let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Cubic)).unwrap();
    let first = drain(&mut sender, at(0));
    for ack in deliver(&mut sink, at(50), &first, &[]) {
        sender.handle_ack(at(100), &ack).unwrap();
    }
    let second = drain(&mut sender, at(100));
    (sender, sink, second)
}

/// A sender of `config` with a first window of `window` packets (ssthresh too), sent at 0.
fn first_flight_sent(mut config: SenderConfig, window: u32) -> TcpSender {
    config.initial_window = window;
    config.initial_slow_start_threshold = Some(window);
    let mut sender = TcpSender::new(config).unwrap();
    let _ = drain(&mut sender, at(0));
    sender
}

/// The Linux profile without its own ways to end a backoff (RACK-TLP's probe, timestamps).
fn linux_without_probe_or_timestamps() -> SenderConfig {
    let mut config = SenderConfig::new(Variant::Cubic);
    config.rack_tlp = false;
    config.timestamps = false;
    config
}

#[test]
fn ns3_ends_the_backoff_with_the_first_ack_of_new_data() {
    // ns-3.37 `NewAck`: "On receiving a "New" ack we restart retransmission timer .. RFC 6298",
    // m_rto recomputed from the estimator without the doubling. Linux and RFC 6298 with Karn's
    // algorithm keep the backoff until an RTT sample, which a retransmission does not give.
    for (config, backoff_after) in [
        (SenderConfig::ns3(Variant::Cubic), 1),
        (linux_without_probe_or_timestamps(), 2),
    ] {
        let (mut sender, mut sink, lost) = cubic_after_one_round(config);
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        assert_eq!(sender.backoff(), 2);
        let resent = drain(&mut sender, deadline);
        assert_eq!(resent[0].sequence, lost[0].sequence);
        let acks = deliver(
            &mut sink,
            deadline + Duration::from_millis(50),
            &resent[..1],
            &[],
        );
        let back = deadline + Duration::from_millis(100);
        sender.handle_ack(back, acks.last().unwrap()).unwrap();
        assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
        assert_eq!(sender.backoff(), backoff_after);
        assert_eq!(
            sender.poll_timeout(),
            Some(back + sender.retransmission_timeout())
        );
    }
}

#[test]
fn ns3_restarts_the_timer_on_the_first_partial_ack_only() {
    // ns-3.37 `ProcessAck` in recovery: `NewAck(ackNumber, m_isFirstPartialAck)`, "and this
    // is NOT the first (RTO will not be reset)"; RFC 6298 §5.3 restarts it on every ACK of new
    // data, as Linux does.
    for (config, impatient) in [
        (SenderConfig::ns3(Variant::Sack), true),
        (SenderConfig::new(Variant::Sack), false),
    ] {
        let mut config = config;
        config.initial_window = 20;
        config.initial_slow_start_threshold = Some(20);
        let mut sender = TcpSender::new(config).unwrap();
        let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Sack)).unwrap();
        let segments = drain(&mut sender, at(0));
        let acks = deliver(&mut sink, at(50), &segments, &[3, 7, 12]);
        let mut resent = Vec::new();
        for ack in &acks {
            sender.handle_ack(at(100), ack).unwrap();
            resent.extend(drain(&mut sender, at(100)));
        }
        assert!(sender.in_recovery());
        let retransmissions: Vec<Segment> = resent
            .into_iter()
            .filter(|segment| segment.retransmission)
            .collect();
        assert_eq!(sequences(&retransmissions), vec![3, 7, 12]);
        // The resent packets arrive one by one: three partial ACKs (7, 12, 20; the recovery's
        // point lies beyond the packets limited transmit sent).
        let mut deadlines = Vec::new();
        for (k, segment) in retransmissions.iter().enumerate() {
            let now = at(200 + 10 * k as u64);
            for ack in deliver(&mut sink, now, core::slice::from_ref(segment), &[]) {
                sender.handle_ack(now, &ack).unwrap();
            }
            assert!(sender.in_recovery());
            deadlines.push(sender.poll_timeout().unwrap());
        }
        let rto = sender.retransmission_timeout();
        assert_eq!(
            deadlines[0],
            at(200) + rto,
            "the first partial ACK restarts it"
        );
        if impatient {
            assert_eq!(deadlines[1..], [deadlines[0]; 2], "the others do not");
        } else {
            assert_eq!(deadlines[1..], [at(210) + rto, at(220) + rto]);
        }
    }
}

#[test]
fn linux_takes_ssthresh_once_per_loss_and_ns3_at_every_timeout() {
    // Linux `tcp_enter_loss`: "Reduce ssthresh if it has not yet been made inside this
    // window": a second timeout before any ACK moves the cumulative ACK keeps it; ns-3.37 (and
    // ns-2) take it from the one-packet window again.
    for (config, second_timeout_ssthresh) in [
        (linux_without_probe_or_timestamps(), 14),
        (SenderConfig::ns3(Variant::Cubic), 2),
    ] {
        let (mut sender, mut sink, lost) = cubic_after_one_round(config);
        // Slow start: 10 packets acknowledged, 20 in the window.
        assert_eq!(sender.congestion_window(), 20.0);
        let first = sender.poll_timeout().unwrap();
        sender.handle_timeout(first);
        // RFC 9438 §4.6: β_cubic = 0.7.
        assert_eq!(sender.slow_start_threshold(), 14);
        let resent = drain(&mut sender, first);
        assert_eq!(sequences(&resent), vec![lost[0].sequence]);
        // The retransmission is lost too.
        let second = sender.poll_timeout().unwrap();
        sender.handle_timeout(second);
        assert_eq!(sender.stats().timeouts, 2);
        assert_eq!(sender.slow_start_threshold(), second_timeout_ssthresh);
        // An ACK that moves the cumulative ACK, then a third timeout: Linux reduces again
        // (`TCP_CA_Loss && !icsk_retransmits`), from the window of that moment.
        let resent = drain(&mut sender, second);
        let now = second + Duration::from_millis(100);
        for ack in deliver(&mut sink, now, &resent[..1], &[]) {
            sender.handle_ack(now, &ack).unwrap();
        }
        let window = sender.congestion_window();
        let third = sender.poll_timeout().unwrap();
        sender.handle_timeout(third);
        assert_eq!(
            sender.slow_start_threshold(),
            ((window * 0.7) as u32).max(2),
            "window {window}"
        );
    }
}

#[test]
fn linux_keeps_ssthresh_at_a_timeout_during_fast_recovery() {
    // `icsk_ca_state == TCP_CA_Recovery` with `high_seq` after `snd_una`: the recovery has
    // reduced it already. ns-3.37 reduces it again (its test is `m_congState != CA_LOSS`).
    for (mut config, reduced_again) in [
        (linux_without_probe_or_timestamps(), false),
        (SenderConfig::ns3(Variant::Cubic), true),
    ] {
        config.hystart = false;
        let mut sender = first_flight_sent(config, 20);
        sack_the_three_after_the_first(&mut sender, at(100));
        assert!(sender.in_recovery());
        assert_eq!(sender.slow_start_threshold(), 14);
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        let expected = if reduced_again { 9 } else { 14 };
        assert_eq!(sender.slow_start_threshold(), expected);
    }
}

#[test]
fn ns3_does_not_restart_the_timer_on_the_fast_retransmit() {
    // ns-3.37 `SendDataPacket`: "if (m_retxEvent.IsExpired())" only, so the retransmission
    // races the timer started by the last new ACK; ns-2 restarts it (`reset_rtx_timer(1, 0)`).
    for (config, restarted) in [
        (SenderConfig::ns3(Variant::Sack), false),
        (SenderConfig::new(Variant::Sack), true),
    ] {
        let mut sender = first_flight_sent(config, 10);
        // Packet 0 acknowledged at 100 ms, packet 1 lost, 2..=4 SACKed at 150 ms.
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        let armed = sender.poll_timeout().unwrap();
        let _ = drain(&mut sender, at(100));
        for high in 3..=5 {
            sender
                .handle_ack(
                    at(150),
                    &Ack::with_sack_blocks(1, &[SackBlock::new(2, high)]),
                )
                .unwrap();
        }
        assert!(sender.in_recovery());
        assert_eq!(sequences(&drain(&mut sender, at(150)))[0], 1);
        let expected = if restarted {
            at(150) + sender.retransmission_timeout()
        } else {
            armed
        };
        assert_eq!(sender.poll_timeout(), Some(expected));
    }
}

#[test]
fn ns3_keeps_the_sacked_packets_at_a_timeout_and_counts_only_the_resent_in_flight() {
    // ns-3.37 `ReTxTimeout`: `SetSentListLost(!m_sackEnabled)` keeps the SACKed items and marks
    // the others lost; `BytesInFlight` ("m_sentSize - leftOut + retrans") then counts only what
    // was sent since. ns-2's Sack1 clears the scoreboard (RFC 2018) and its window counts from
    // the cumulative ACK, SACKed packets included.
    for (config, resent, pipe) in [
        (SenderConfig::ns3(Variant::Sack), vec![1, 3, 5], 2),
        (SenderConfig::new(Variant::Sack), vec![1, 3], 7),
    ] {
        let mut sender = first_flight_sent(config, 10);
        // 0 acknowledged; 1 and 3 lost; 2 and 4 SACKed (two SACKed above 1: no recovery).
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        let _ = drain(&mut sender, at(100));
        let blocks = [SackBlock::new(2, 3), SackBlock::new(4, 5)];
        sender
            .handle_ack(at(110), &Ack::with_sack_blocks(1, &blocks))
            .unwrap();
        assert!(!sender.in_recovery());
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        let mut sent = sequences(&drain(&mut sender, deadline));
        assert_eq!(sent, vec![1], "a window of one packet");
        // The resent 1 fills the first hole: the cumulative ACK moves to 3, 4 still SACKed,
        // and slow start opens the window to two packets.
        let now = deadline + Duration::from_millis(100);
        sender
            .handle_ack(now, &Ack::with_sack_blocks(3, &blocks[1..]))
            .unwrap();
        assert_eq!(sender.congestion_window(), 2.0);
        sent.extend(sequences(&drain(&mut sender, now)));
        // ns-3: 3 and 5 in flight, the SACKed 4 skipped and not counted; Sack1: the window of
        // two from the cumulative ACK holds 3 and the SACKed 4, which is skipped.
        assert_eq!(sent, resent);
        // The pipe BBR reads agrees: ns-3 counts 3 and 5, not the unsent 6..=10 it deems lost;
        // RFC 6675's pipe counts every unSACKed packet above the cumulative ACK (7 of 3..=10).
        assert_eq!(sender.pipe(), pipe);
    }
}

#[test]
fn ns3_counts_a_duplicate_ack_only_if_it_sacks_new_data() {
    // RFC 6675 §2, DupAck (e): "the ACK carries a SACK block that identifies previously
    // unacknowledged and un-SACKed octets"; ns-3.37: `isDupack = m_sackEnabled ?
    // scoreboardUpdated : ...`. ns-2's Sack1 counts every ACK that moves nothing.
    for (config, recovers) in [
        (SenderConfig::ns3(Variant::Sack), false),
        (SenderConfig::new(Variant::Sack), true),
    ] {
        let mut sender = first_flight_sent(config, 10);
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        // Packet 2 is SACKed once, then the same block comes back three times (the ACKs of
        // duplicate segments the receiver already held).
        let ack = Ack::with_sack_blocks(1, &[SackBlock::new(2, 3)]);
        for _ in 0..4 {
            sender.handle_ack(at(110), &ack).unwrap();
        }
        assert_eq!(sender.in_recovery(), recovers);
    }
}
