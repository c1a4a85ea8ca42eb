//! Unit tests of the rules that tell Linux's TCP (the default of CUBIC and BBR) from ns-3.37's
//! (`SenderConfig::ns3`): the timer after a timeout and in recovery, and ssthresh at repeated
//! timeouts.

use super::tests::{ack_above_hole, at, deliver, drain, sack_the_three_after_the_first, sequences};
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
        // ns-3's PRR has the window at 17 here (16 in flight, one more for the packet SACKed).
        let window = sender.congestion_window();
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        let expected = if reduced_again {
            (window * 0.7) as u32
        } else {
            14
        };
        assert_eq!(sender.slow_start_threshold(), expected, "window {window}");
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
                .handle_ack(at(150), &ack_above_hole(1, high))
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

/// ns-3.37's profile of `variant` with the rule `rule` names on, then off, HyStart off (so that
/// slow start ends at ssthresh): the two senders each test of a rule compares.
fn rule_on_and_off(
    variant: Variant,
    rule: fn(&mut SenderConfig) -> &mut bool,
) -> [(SenderConfig, bool); 2] {
    [true, false].map(|on| {
        let mut config = SenderConfig::ns3(variant);
        config.hystart = false;
        *rule(&mut config) = on;
        (config, on)
    })
}

#[test]
fn ns3_slow_start_takes_every_packet_the_cumulative_ack_covers() {
    // ns-3.37 `TcpCubic::IncreaseWindow`: "tcb->m_cWnd += segmentsAcked *
    // tcb->m_segmentSize; segmentsAcked = 0;", not capped at ssthresh; Linux's
    // `tcp_slow_start` stops at ssthresh and gives the rest to congestion avoidance.
    for (mut config, on) in rule_on_and_off(Variant::Cubic, |c| &mut c.segment_counted_growth) {
        config.initial_window = 4;
        config.initial_slow_start_threshold = Some(5);
        let mut sender = TcpSender::new(config).unwrap();
        assert_eq!(drain(&mut sender, at(0)).len(), 4);
        sender.handle_ack(at(100), &Ack::new(4)).unwrap();
        let window = sender.congestion_window();
        if on {
            assert_eq!(window, 8.0);
        } else {
            assert!((5.0..6.0).contains(&window), "window {window}");
        }
    }
}

#[test]
fn ns3_counts_the_sacked_packets_a_cumulative_ack_covers_after_a_timeout() {
    // ns-3.37 `ProcessAck` in CA_LOSS: `segsAcked = bytesAcked / m_segmentSize` with
    // `bytesAcked = ackNumber - oldHeadSequence`, the packets SACKed before included; Linux
    // grows by the packets newly delivered.
    for (config, on) in rule_on_and_off(Variant::Cubic, |c| &mut c.segment_counted_growth) {
        let mut sender = first_flight_sent(config, 10);
        // 0 acknowledged, 1 lost, 2 and 3 SACKed: no recovery yet.
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        let _ = drain(&mut sender, at(100));
        let sacked = [SackBlock::new(2, 4)];
        sender
            .handle_ack(at(110), &Ack::with_sack_blocks(1, &sacked))
            .unwrap();
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        assert_eq!(sequences(&drain(&mut sender, deadline)), vec![1]);
        // The resent 1 arrives: the cumulative ACK covers 1, 2 and 3; only 1 is new.
        sender
            .handle_ack(deadline + Duration::from_millis(100), &Ack::new(4))
            .unwrap();
        assert_eq!(sender.congestion_window(), if on { 4.0 } else { 2.0 });
    }
}

#[test]
fn ns3_reduces_the_window_in_proportion_to_the_packets_delivered() {
    // RFC 6937 as ns-3.37's `TcpPrrRecovery::DoRecovery` runs it: while more than ssthresh
    // are in flight, "sendCount = std::ceil(m_prrDelivered * tcb->m_ssThresh * 1.0 /
    // m_recoveryFlightSize) - m_prrOut"; RFC 6675 sends nothing until pipe is below ssthresh.
    for (config, prr) in rule_on_and_off(Variant::Cubic, |c| &mut c.proportional_rate_reduction) {
        let mut sender = first_flight_sent(config, 20);
        sack_the_three_after_the_first(&mut sender, at(100));
        assert!(sender.in_recovery());
        assert_eq!(sender.slow_start_threshold(), 14);
        let mut sent = drain(&mut sender, at(100));
        assert_eq!(sequences(&sent), vec![0], "the fast retransmit");
        // Three more packets SACKed, one per ACK: 4 delivered of the 20 outstanding.
        for high in 5..=7 {
            sender
                .handle_ack(at(110), &ack_above_hole(0, high))
                .unwrap();
            sent.extend(drain(&mut sender, at(110)));
        }
        let expected = if prr {
            // ceil(4 · 14 000 / 20) = 2 800 bytes may have left (ns-3 counts bytes and a
            // fraction of a segment does not leave): the retransmission and one new packet.
            vec![0, 20]
        } else {
            // pipe 17 − 3 = 14 is not below the window of 14.
            vec![0]
        };
        assert_eq!(sequences(&sent), expected);
    }
}

#[test]
fn ns3_resends_the_first_unacknowledged_packet_on_a_partial_ack() {
    // ns-3.37 `ProcessAck`, partial ACK in CA_RECOVERY: "if
    // (!m_txBuffer->IsRetransmittedDataAcked(ackNumber + m_tcb->m_segmentSize)) {
    // DoRetransmit(); ...}"; RFC 6675's NextSeg() does not resend a packet it does not deem
    // lost.
    for (config, resends) in rule_on_and_off(Variant::Sack, |c| &mut c.partial_ack_retransmits) {
        let mut sender = first_flight_sent(config, 10);
        // 0 and 8 lost; 1..=7 SACKed one per ACK: the third starts the recovery.
        for high in 2..=8 {
            sender
                .handle_ack(at(100), &ack_above_hole(0, high))
                .unwrap();
        }
        assert!(sender.in_recovery());
        let first = drain(&mut sender, at(100));
        assert_eq!(first.iter().filter(|s| s.retransmission).count(), 1);
        // 9 SACKed, then the resent 0 arrives: a partial ACK up to the lost 8, which only 9
        // is SACKed above (not lost for RFC 6675).
        let above = [SackBlock::new(9, 10)];
        sender
            .handle_ack(
                at(150),
                &Ack::with_sack_blocks(0, &[SackBlock::new(1, 8), above[0]]),
            )
            .unwrap();
        let _ = drain(&mut sender, at(150));
        sender
            .handle_ack(at(200), &Ack::with_sack_blocks(8, &above))
            .unwrap();
        assert!(sender.in_recovery());
        let resent: Vec<u64> = drain(&mut sender, at(200))
            .iter()
            .filter(|s| s.retransmission)
            .map(|s| s.sequence)
            .collect();
        assert_eq!(resent.contains(&8), resends, "resent {resent:?}");
    }
}

#[test]
fn ns3_tests_the_second_unacknowledged_packet_for_a_loss_shown_by_sack() {
    // ns-3.37 `DupAck`: "else if (m_txBuffer->IsLost(m_highRxAckMark +
    // m_tcb->m_segmentSize))", the second packet; RFC 6675 §5 (2): IsLost (HighACK + 1).
    for (config, on) in rule_on_and_off(Variant::Sack, |c| &mut c.loss_test_on_second_packet) {
        let mut sender = first_flight_sent(config, 10);
        // One ACK SACKs 1, 2 and 3: packet 0 has three SACKed above it, packet 1 is SACKed.
        sender
            .handle_ack(at(100), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 4)]))
            .unwrap();
        assert_eq!(sender.in_recovery(), !on);
    }
}

#[test]
fn ns3_counts_a_sacked_retransmission_in_flight_until_the_cumulative_ack_covers_it() {
    // ns-3.37 `TcpTxBuffer::Update` clears a SACKed packet's lost mark but not its
    // `m_retrans`, and `BytesInFlight` is "m_sentSize - leftOut + retrans"; RFC 6675's
    // SetPipe() counts no SACKed packet.
    let mut pipes = Vec::new();
    for (config, _) in rule_on_and_off(Variant::Sack, |c| &mut c.sacked_retransmissions_in_flight) {
        let mut sender = first_flight_sent(config, 10);
        // 0 and 5 lost; 1..=4 SACKed (recovery, 0 resent), then 6..=9 (5 lost, resent).
        for high in 2..=5 {
            let blocks = [SackBlock::new(1, high)];
            sender
                .handle_ack(at(100), &Ack::with_sack_blocks(0, &blocks))
                .unwrap();
        }
        let _ = drain(&mut sender, at(100));
        for high in 7..=10 {
            let blocks = [SackBlock::new(6, high), SackBlock::new(1, 5)];
            sender
                .handle_ack(at(110), &Ack::with_sack_blocks(0, &blocks))
                .unwrap();
        }
        let resent = drain(&mut sender, at(110));
        assert!(resent.iter().any(|s| s.retransmission && s.sequence == 5));
        // The resent 5 arrives before the resent 0.
        sender
            .handle_ack(at(200), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 10)]))
            .unwrap();
        assert!(sender.in_recovery());
        pipes.push(sender.pipe());
    }
    assert_eq!(pipes[0], pipes[1] + 1, "pipes {pipes:?}");
}

#[test]
fn without_sack_the_resent_packets_count_in_flight_after_a_timeout() {
    // ns-3.37 without SACK: `SetSentListLost(true)` deems every packet lost and each one
    // resent counts in flight (`m_retrans`) until acknowledged, so the window after a
    // timeout counts from the cumulative ACK, as RFC 5681 and ns-2 do.
    for config in [
        SenderConfig::ns3(Variant::NewReno),
        SenderConfig::new(Variant::NewReno),
    ] {
        let mut sender = first_flight_sent(config, 10);
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        assert_eq!(sequences(&drain(&mut sender, deadline)), vec![0]);
        let now = deadline + Duration::from_millis(100);
        sender.handle_ack(now, &Ack::new(1)).unwrap();
        assert_eq!(sender.congestion_window(), 2.0);
        assert_eq!(sequences(&drain(&mut sender, now)), vec![1, 2]);
    }
}

#[test]
fn ns3_samples_the_rtt_on_cumulative_acks_from_the_oldest_packet_they_cover() {
    // ns-3.37 `EstimateRtt`: "RttHistory& h = m_history.front(); if (!h.retx && ackSeq >=
    // (h.seq + SequenceNumber32(h.count))) { ... m = Simulator::Now() - h.time;": a SACK
    // gives no sample, a cumulative ACK times the oldest packet it covers. Linux's
    // `ca_rtt_us` times the most recently sent packet an ACK delivers, SACKed ones too.
    for (mut config, on) in rule_on_and_off(Variant::Cubic, |c| &mut c.cumulative_rtt_samples) {
        config.initial_window = 2;
        let mut sender = TcpSender::new(config).unwrap();
        assert_eq!(sequences(&drain(&mut sender, at(0))), vec![0, 1]);
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
        let second = sequences(&drain(&mut sender, at(100)));
        assert_eq!(&second[..2], &[2, 3]);
        // Packet 3 (sent at 100 ms) SACKed at 150 ms.
        sender
            .handle_ack(at(150), &Ack::with_sack_blocks(1, &[SackBlock::new(3, 4)]))
            .unwrap();
        let after_sack = if on { 100 } else { 50 };
        assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(after_sack)));
        // Packets 1 (sent at 0) and 2 (sent at 100 ms) acknowledged at 250 ms.
        sender.handle_ack(at(250), &Ack::new(4)).unwrap();
        let after_ack = if on { 250 } else { 150 };
        assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(after_ack)));
    }
}

#[test]
fn ns3_takes_no_rtt_sample_from_packets_sent_before_a_timeout() {
    // ns-3.37 `ReTxTimeout`: "m_history.clear();", and a resent packet does not enter the
    // history: the late ACK of packets sent before the timeout times nothing, where Linux
    // times those it delivers that were sent once.
    for (config, on) in rule_on_and_off(Variant::Cubic, |c| &mut c.cumulative_rtt_samples) {
        let mut sender = first_flight_sent(config, 4);
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        assert_eq!(sequences(&drain(&mut sender, deadline)), vec![0]);
        // The first copies of 0..4 arrive after all: one ACK covers them.
        let now = deadline + Duration::from_millis(50);
        sender.handle_ack(now, &Ack::new(4)).unwrap();
        let expected = (!on).then(|| now.saturating_duration_since(at(0)));
        assert_eq!(sender.latest_rtt(), expected);
    }
}

/// BBR's minimum RTT (its `min_rtt_us`, ns-3's `m_rtProp`).
fn bbr_min_rtt(sender: &TcpSender) -> Option<Duration> {
    match &sender.control {
        Control::Bbr(bbr) => bbr.min_rtt(),
        _ => None,
    }
}

#[test]
fn ns3_gives_bbr_the_smoothed_rtt_as_its_minimum() {
    // ns-3.37 `EstimateRtt`: "m_tcb->m_lastRtt = m_rtt->GetEstimate();", which
    // `TcpBbr::UpdateRTprop` reads; Linux's `bbr_update_min_rtt` reads the sample.
    for (mut config, on) in
        rule_on_and_off(Variant::Bbr, |c| &mut c.smoothed_rtt_to_congestion_control)
    {
        // The sample of the most recent packet, as Linux takes it, in both.
        config.cumulative_rtt_samples = false;
        config.initial_window = 2;
        let mut sender = TcpSender::new(config).unwrap();
        let _ = drain(&mut sender, at(0));
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        assert_eq!(bbr_min_rtt(&sender), Some(Duration::from_millis(100)));
        let sent = drain(&mut sender, at(100));
        assert!(!sent.is_empty());
        // A packet sent at 100 ms acknowledged at 140 ms: a 40 ms sample, SRTT 92.5 ms.
        sender
            .handle_ack(at(140), &Ack::new(sent[0].sequence + 1))
            .unwrap();
        let expected = if on { 92_500 } else { 40_000 };
        assert_eq!(bbr_min_rtt(&sender), Some(Duration::from_micros(expected)));
    }
}

#[test]
fn ns3_bbr_renews_its_minimum_rtt_with_an_equal_one() {
    // ns-3.37 `UpdateRTprop`: "if (tcb->m_lastRtt >= Seconds(0) && (tcb->m_lastRtt <= m_rtProp
    // || m_rtPropExpired))", on every ACK: while the smoothed RTT stays at the minimum, each
    // ACK restarts its 10 s window. Linux takes only a smaller sample, so its window expires
    // and BBR enters PROBE_RTT.
    for (config, on) in rule_on_and_off(Variant::Bbr, |c| &mut c.smoothed_rtt_to_congestion_control)
    {
        let mut sender = first_flight_sent(config, 2);
        sender.handle_ack(at(100), &Ack::new(1)).unwrap();
        // ACKs that move nothing, at 9 s and 10.5 s.
        sender.handle_ack(at(9_000), &Ack::new(1)).unwrap();
        sender.handle_ack(at(10_500), &Ack::new(1)).unwrap();
        let Control::Bbr(bbr) = &sender.control else {
            unreachable!("a BBR sender")
        };
        assert_eq!(bbr.mode() == crate::bbr::BbrMode::ProbeRtt, !on);
    }
}

#[test]
fn ns3_bbr_counts_a_loss_again_when_its_retransmission_is_acknowledged() {
    // ns-3.37 `ReceivedAck`: "uint32_t lost = (currentLost > previousLost) ? currentLost -
    // previousLost : previousLost - currentLost;" over `m_lostOut`, which keeps a resent packet
    // marked until it is acknowledged; `TcpBbr::ModulateCwndForRecovery` takes it off the
    // window in fast recovery. Linux's `rs->losses` counts the marking only.
    let mut windows = Vec::new();
    for (config, on) in rule_on_and_off(Variant::Bbr, |c| &mut c.ns3_bbr_losses) {
        let mut sender = first_flight_sent(config, 10);
        // 0 lost, 1..=3 SACKed: 0 is marked lost and resent, a fast recovery starts.
        sack_the_three_after_the_first(&mut sender, at(100));
        assert!(sender.in_recovery());
        assert_eq!(sender.marked_lost(), 1);
        let resent = drain(&mut sender, at(100));
        assert_eq!(sequences(&resent), vec![0]);
        // The resent 0 arrives: a partial ACK (the recovery point is 10); 0 leaves the count.
        sender.handle_ack(at(200), &Ack::new(4)).unwrap();
        assert!(sender.in_recovery());
        assert_eq!(sender.marked_lost(), 0);
        windows.push((on, sender.congestion_window()));
    }
    // The same ACK, one packet less with ns-3's count (the change of 1 counted as a loss).
    assert_eq!(windows, vec![(true, 7.0), (false, 8.0)]);
}

#[test]
fn ns3_bbr_ends_a_fast_recovery_at_ssthresh_and_a_timeout_without_restoring() {
    // ns-3.37 `ProcessAck` leaving CA_RECOVERY: "CwndEvent(m_tcb,
    // TcpSocketState::CA_EVENT_COMPLETE_CWR)" (BBR restores its window), then "m_tcb->m_cWnd =
    // m_tcb->m_ssThresh.Get();"; leaving CA_LOSS, `TcpBbr::CongestionStateSet(CA_OPEN)` does
    // nothing once initialised. Linux restores the saved window after both.
    let mut after_recovery = Vec::new();
    let mut after_timeout = Vec::new();
    for (config, on) in rule_on_and_off(Variant::Bbr, |c| &mut c.ns3_bbr_recovery_exit) {
        let mut sender = first_flight_sent(config.clone(), 10);
        sack_the_three_after_the_first(&mut sender, at(100));
        assert_eq!(sequences(&drain(&mut sender, at(100))), vec![0]);
        // As if STARTUP had ended with a BDP of 6 packets (`CheckDrain`).
        sender.slow_start_threshold = 6;
        sender.handle_ack(at(200), &Ack::new(10)).unwrap();
        assert!(!sender.in_recovery());
        // STARTUP's growth then adds the 7 packets the ACK delivered (0 and 4..=9).
        after_recovery.push((on, sender.congestion_window()));

        let mut sender = first_flight_sent(config, 10);
        sender.handle_timeout(at(5_000));
        assert_eq!(sender.congestion_window(), 1.0);
        assert_eq!(sequences(&drain(&mut sender, at(5_000))), vec![0]);
        sender.handle_ack(at(5_100), &Ack::new(1)).unwrap();
        let _ = drain(&mut sender, at(5_100));
        sender.handle_ack(at(5_200), &Ack::new(10)).unwrap();
        assert!(!sender.in_recovery() && sender.loss_point.is_none());
        after_timeout.push((on, sender.congestion_window()));
    }
    // ns-3: 6 + 7; Linux: the window saved when the recovery started, plus the 7.
    assert_eq!(after_recovery, vec![(true, 13.0), (false, 19.0)]);
    // ns-3: BBR's minimum window of 4 after the first ACK, plus 9; Linux: the 10 saved at the
    // timeout, plus 9.
    assert_eq!(after_timeout, vec![(true, 13.0), (false, 19.0)]);
}

#[test]
fn ns3_bbr_paces_at_its_gain_times_its_estimate() {
    // ns-3.37 `TcpBbr::SetPacingRate`: "DataRate rate(gain *
    // m_maxBwFilter.GetBest().GetBitRate());"; Linux paces "~1% below estimated bw".
    let mut rates = Vec::new();
    for (config, _) in rule_on_and_off(Variant::Bbr, |c| &mut c.ns3_bbr_pacing_without_margin) {
        let mut sender = first_flight_sent(config, 10);
        sender.handle_ack(at(100), &Ack::new(5)).unwrap();
        rates.push(sender.pacing().unwrap().0);
    }
    assert!(
        (rates[1] / rates[0] - 0.99).abs() < 1e-12,
        "rates {rates:?}"
    );
}
