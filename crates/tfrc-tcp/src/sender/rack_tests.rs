//! RACK-TLP (RFC 8985) in CUBIC's and BBR's sender, one rule each, fed by hand; each test also
//! runs the same exchange with RFC 6675 (`rack_tlp = false`) to show what the rule changes.

use super::tests::{ack_above_hole, at, deliver, drain, sack_the_three_after_the_first, sequences};
use super::*;
use crate::{SackBlock, SinkConfig, TcpSink};

/// A CUBIC sender with `window` packets in congestion avoidance.
fn cubic(window: u32, rack_tlp: bool) -> TcpSender {
    let mut config = SenderConfig::new(Variant::Cubic);
    config.initial_window = window;
    config.initial_slow_start_threshold = Some(window);
    config.rack_tlp = rack_tlp;
    TcpSender::new(config).unwrap()
}

fn handle_all(sender: &mut TcpSender, now: Instant, acks: &[Ack]) -> Vec<Segment> {
    let mut sent = Vec::new();
    for ack in acks {
        sender.handle_ack(now, ack).unwrap();
        sent.extend(drain(sender, now));
    }
    sent
}

#[test]
fn the_defaults_use_rack_tlp_for_cubic_and_bbr_only() {
    for variant in Variant::ALL {
        let sender = TcpSender::new(SenderConfig::new(variant)).unwrap();
        assert_eq!(sender.rack.is_some(), variant.is_modern(), "{variant}");
    }
    // ns-2's variants keep RFC 6675 even when asked for RACK-TLP.
    for variant in [Variant::Reno, Variant::NewReno, Variant::Sack] {
        let mut config = SenderConfig::new(variant);
        config.rack_tlp = true;
        assert!(TcpSender::new(config).unwrap().rack.is_none(), "{variant}");
    }
}

/// RFC 8985 §2.2 (lost retransmissions): "RACK ... can detect the loss of a retransmission
/// ... when a segment sent after the retransmission is acknowledged"; §6.2 step 5: a packet
/// sent before RACK.xmit_ts is lost once "Segment.xmit_ts + RACK.rtt + RACK.reo_wnd - Now()"
/// is not positive.
#[test]
fn a_lost_retransmission_is_found_without_a_timeout() {
    for rack_tlp in [true, false] {
        let mut sender = cubic(20, rack_tlp);
        let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Cubic)).unwrap();
        let first = drain(&mut sender, at(0));
        assert_eq!(first.len(), 20);
        let acks = deliver(&mut sink, at(50), &first, &[3]);
        let second = handle_all(&mut sender, at(100), &acks);
        assert!(sender.in_recovery());
        // Packet 3 is retransmitted at 100 ms, and new data leaves after it.
        let position = second
            .iter()
            .position(|segment| segment.sequence == 3)
            .unwrap();
        assert!(second[position].retransmission);
        assert!(second[position + 1..]
            .iter()
            .any(|segment| !segment.retransmission));
        // The retransmission is lost again; the new data sent after it arrives.
        let acks = deliver(&mut sink, at(150), &second, &[3]);
        let third = handle_all(&mut sender, at(200), &acks);
        if rack_tlp {
            // RACK.xmit_ts is 100 ms (new data sent with the retransmission), RACK.rtt 100 ms,
            // RACK.reo_wnd 0 in recovery: packet 3, sent at 100 ms, is lost at 200 ms.
            let again = third.iter().find(|segment| segment.sequence == 3);
            assert!(
                again.is_some_and(|segment| segment.retransmission),
                "{:?}",
                sequences(&third)
            );
            let acks = deliver(&mut sink, at(250), &third, &[]);
            let _ = handle_all(&mut sender, at(300), &acks);
            let highest = third.iter().map(|segment| segment.sequence).max().unwrap();
            assert_eq!(sender.first_unacknowledged(), highest + 1);
            assert_eq!(sender.stats().timeouts, 0);
        } else {
            // RFC 6675 NextSeg() never goes below HighRxt: only the timer resends packet 3.
            assert!(!sequences(&third).contains(&3), "{:?}", sequences(&third));
            let deadline = sender.poll_timeout().unwrap();
            sender.handle_timeout(deadline);
            assert_eq!(sender.stats().timeouts, 1);
        }
    }
}

/// RFC 8985 §7: "TLP ... sends a probe packet to trigger ACK feedback to avoid retransmission
/// timeout (RTO) events"; §7.3: without new data, "the sender SHOULD retransmit the
/// highest-sequence segment sent so far".
#[test]
fn a_tail_loss_is_repaired_by_a_probe_not_a_timeout() {
    for rack_tlp in [true, false] {
        let mut config = SenderConfig::new(Variant::Cubic);
        config.packet_limit = Some(10);
        config.rack_tlp = rack_tlp;
        let mut sender = TcpSender::new(config).unwrap();
        let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Cubic)).unwrap();
        let first = drain(&mut sender, at(0));
        assert_eq!(first.len(), 10);
        // The last two packets are lost: no duplicate ACK, nothing SACKed.
        let acks = deliver(&mut sink, at(50), &first, &[8, 9]);
        assert!(handle_all(&mut sender, at(100), &acks).is_empty());
        let deadline = sender.poll_timeout().unwrap();
        if !rack_tlp {
            sender.handle_timeout(deadline);
            assert_eq!(sender.stats().timeouts, 1);
            continue;
        }
        // PTO = 2·SRTT = 200 ms after the last ACK, before the RTO (about 300 ms).
        assert_eq!(deadline, at(300));
        sender.handle_timeout(deadline);
        let probe = drain(&mut sender, deadline);
        assert_eq!(sequences(&probe), vec![9]);
        assert!(probe[0].retransmission);
        assert_eq!(sender.stats().loss_probes, 1);
        assert_eq!(sender.stats().timeouts, 0);
        // The probe's ACK SACKs packet 9: RACK marks 8 lost and a fast recovery resends it.
        let acks = deliver(&mut sink, at(350), &probe, &[]);
        let repair = handle_all(&mut sender, at(400), &acks);
        assert!(sender.in_recovery());
        assert_eq!(sequences(&repair), vec![8]);
        let acks = deliver(&mut sink, at(450), &repair, &[]);
        let _ = handle_all(&mut sender, at(500), &acks);
        assert!(sender.is_finished());
        assert_eq!(sender.stats().timeouts, 0);
    }
}

/// RFC 8985 §6.2 step 4: "If RACK.reordering_seen is FALSE: If in Fast or RTO recovery: Return
/// 0; Else if RACK.segs_sacked >= DupThresh: Return 0 ... Return min(RACK.reo_wnd_mult *
/// RACK.min_RTT / 4, SRTT)", and step 5's timer for the packets not yet old enough.
#[test]
fn the_reordering_window_is_a_quarter_of_min_rtt_until_three_packets_are_sacked() {
    // One packet SACKed: packet 0 waits min_RTT / 4 = 25 ms more on the reordering timer.
    let mut sender = cubic(20, true);
    let _ = drain(&mut sender, at(0));
    sender
        .handle_ack(at(100), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 2)]))
        .unwrap();
    assert!(!sender.in_recovery());
    assert_eq!(sender.poll_timeout(), Some(at(125)));
    sender.handle_timeout(at(125));
    assert!(sender.in_recovery());
    assert_eq!(sender.stats().reorder_timeouts, 1);
    assert_eq!(sender.rack.as_ref().unwrap().first_lost(), Some(0));

    // Three packets SACKed: the window is zero and packet 0 is lost at once.
    let mut sender = cubic(20, true);
    let _ = drain(&mut sender, at(0));
    for high in 2..=4 {
        sender
            .handle_ack(at(100), &ack_above_hole(0, high))
            .unwrap();
        assert_eq!(sender.in_recovery(), high == 4, "{high}");
    }

    // Packet 0 delivered after packet 1 without a retransmission: reordering, so three SACKed
    // packets no longer zero the window (RFC 8985 §6.2 step 3).
    let mut sender = cubic(20, true);
    let _ = drain(&mut sender, at(0));
    sender
        .handle_ack(at(100), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 2)]))
        .unwrap();
    sender.handle_ack(at(101), &Ack::new(2)).unwrap();
    assert!(sender.rack.as_ref().unwrap().reordering_seen());
    for high in 4..=6 {
        sender
            .handle_ack(at(102), &ack_above_hole(2, high))
            .unwrap();
    }
    assert!(!sender.in_recovery());
    assert_eq!(sender.poll_timeout(), Some(at(127)));
}

/// RFC 8985 §6.3: on a timeout, "RACK marks the first outstanding segment as lost ...; for all
/// the other segments, RACK only marks the segment as lost if the time elapsed since the segment
/// was transmitted is at least the sum of the recent RTT and the reordering window"; the SACKed
/// packets are not sent again (Linux `tcp_timeout_mark_lost`).
#[test]
fn a_timeout_keeps_the_sacked_packets_and_resends_the_lost_ones_first() {
    let mut sender = cubic(10, true);
    let _ = drain(&mut sender, at(0));
    // Packets 0 and 2 lost, 1 SACKed (one SACK: the reordering timer would wait).
    sender
        .handle_ack(at(100), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 2)]))
        .unwrap();
    sender.rack.as_mut().unwrap().cancel_reorder_timer();
    let deadline = sender.retransmission_deadline.unwrap();
    sender.handle_timeout(deadline);
    assert_eq!(sender.stats().timeouts, 1);
    assert_eq!(sender.congestion_window(), 1.0);
    // Everything sent at 0 is older than RACK.rtt (100 ms): all unSACKed packets are lost; the
    // window of one lets the first out, and packet 1 is never resent.
    let resent = drain(&mut sender, deadline);
    assert_eq!(sequences(&resent), vec![0]);
    sender
        .handle_ack(deadline + Duration::from_millis(100), &Ack::new(2))
        .unwrap();
    let later = drain(&mut sender, deadline + Duration::from_millis(100));
    assert_eq!(sequences(&later), vec![2, 3]);
}

/// The probe timer (RFC 8985 §7.2): "PTO = 2 * SRTT" when below the RTO, restarted by new data
/// and by ACKs of new data, and not running once packets are SACKed ("unless ... segments have
/// been SACKed").
#[test]
fn the_probe_timer_is_two_srtt_and_stops_once_packets_are_sacked() {
    let mut sender = cubic(10, true);
    let _ = drain(&mut sender, at(0));
    // SRTT 50 ms: PTO 100 ms, below the RTO (Linux's: 50 ms + max(4 × 25 ms, 200 ms)).
    sender.handle_ack(at(50), &Ack::new(2)).unwrap();
    assert_eq!(sender.probe.deadline, Some(at(150)));
    assert_eq!(sender.retransmission_deadline, Some(at(300)));
    let _ = drain(&mut sender, at(50));
    sender
        .handle_ack(at(60), &Ack::with_sack_blocks(2, &[SackBlock::new(3, 4)]))
        .unwrap();
    assert_eq!(sender.probe.deadline, None);
}

/// The first retransmission of a recovery leaves at once even when pipe exceeds the reduced
/// window (RFC 6675 §5 (4.3); Linux PRR sends at least one packet on entering recovery).
#[test]
fn the_first_retransmission_of_a_recovery_is_not_held_by_pipe() {
    let mut sender = cubic(20, true);
    let _ = drain(&mut sender, at(0));
    sack_the_three_after_the_first(&mut sender, at(100));
    assert!(sender.in_recovery());
    // CUBIC's window is 14; pipe = 20 − 3 SACKed − 1 lost = 16.
    assert_eq!(sender.congestion_window(), 14.0);
    assert_eq!(sender.pipe(), 16);
    assert_eq!(sequences(&drain(&mut sender, at(100))), vec![0]);
}

/// Linux `tcp_xmit_retransmit_queue`: resending the first unacknowledged packet restarts the
/// retransmission timer from now ("if (skb == rtx_head && icsk->icsk_pending !=
/// ICSK_TIME_REO_TIMEOUT) rearm_timer = true"), so the resent packet has a whole RTO for its
/// round trip instead of what is left of the one started earlier. Here the first retransmission
/// is lost too and is sent again within the recovery, which alone would not restart the timer.
#[test]
fn resending_the_first_unacknowledged_packet_restarts_the_timer() {
    let mut sender = cubic(20, true);
    let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Cubic)).unwrap();
    let first = drain(&mut sender, at(0));
    let acks = deliver(&mut sink, at(50), &first, &[0]);
    let second = handle_all(&mut sender, at(100), &acks);
    assert!(sender.in_recovery());
    assert!(sequences(&second).contains(&0), "{:?}", sequences(&second));
    let started = sender.retransmission_deadline.unwrap();
    // The retransmission is lost again; the new data sent after it arrives, and RACK sends
    // packet 0 a third time at 200 ms.
    let acks = deliver(&mut sink, at(150), &second, &[0]);
    let third = handle_all(&mut sender, at(200), &acks);
    assert!(sender.in_recovery());
    assert!(sequences(&third).contains(&0), "{:?}", sequences(&third));
    assert_eq!(sender.first_unacknowledged(), 0);
    assert_eq!(
        sender.retransmission_deadline,
        Some(at(200) + sender.retransmission_timeout())
    );
    // Its ACK may take longer than what was left of the earlier timer: no timeout then.
    assert!(started < at(200) + sender.retransmission_timeout());
    sender.handle_timeout(started);
    assert_eq!(sender.stats().timeouts, 0);
}
