//! Loss intervals and the average loss interval (RFC 5348 §5.3–§5.5), with Veno stretching
//! and TFRC-SP's short intervals (RFC 4828 §3, §4.4).

use crate::deque::Deque;

use crate::time::Instant;

/// n, the number of closed loss intervals averaged (RFC 5348 §5.4).
pub const INTERVALS_AVERAGED: usize = 8;

/// The weights w_1..w_8 of RFC 5348 §5.4: 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2.
pub const WEIGHTS: [f64; INTERVALS_AVERAGED] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// Lower bound of the general history discount factor (RFC 5348 §5.5: "THRESHOLD = 0.5").
pub const DISCOUNT_THRESHOLD: f64 = 0.5;

/// I_mean of RFC 5348 §5.4 from the open interval I_0 and the closed ones (I_1 first, at least
/// one), each with its discount factor DF_i, the general discount DF applied to the closed ones in
/// I_tot0: max(I_tot0/W_tot0, I_tot1/W_tot1), where I_tot0 counts I_0 with weight w_1 and drops
/// the oldest closed interval (under ns-2.35's counting, `ns2_counting`, it keeps all k < 8 of
/// them, [`LossHistory::new_ns2`]), and I_tot1 uses the closed intervals only. The one
/// definition of the weighting: the receiver's p ([`LossHistory::mean_interval`]) and the p a
/// sender recomputes from a feedback's proven intervals (`Sender::handle_packet`) both use it.
pub fn weighted_mean(
    open: f64,
    closed: impl Iterator<Item = (f64, f64)> + Clone,
    discount: f64,
    ns2_counting: bool,
) -> f64 {
    let k = closed.clone().take(INTERVALS_AVERAGED).count();
    let included = if ns2_counting {
        k.min(INTERVALS_AVERAGED - 1)
    } else {
        k.saturating_sub(1)
    };
    let (mut total0, mut weights0) = (open * WEIGHTS[0], WEIGHTS[0]);
    for ((length, own), weight) in closed.clone().take(included).zip(&WEIGHTS[1..]) {
        let weight = weight * own * discount;
        total0 += length * weight;
        weights0 += weight;
    }
    let mean1 = closed_mean_of(closed).unwrap_or(0.0);
    (total0 / weights0).max(mean1)
}

/// I_tot1/W_tot1: the weighted mean of the closed intervals alone, each (length, DF_i).
fn closed_mean_of(closed: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let (mut total, mut weights) = (0.0, 0.0);
    for ((length, own), weight) in closed.take(INTERVALS_AVERAGED).zip(&WEIGHTS) {
        total += length * weight * own;
        weights += weight * own;
    }
    (weights > 0.0).then(|| total / weights)
}

/// A closed loss interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedInterval {
    /// Length in packets as counted (after a Veno stretch, if any).
    pub length: f64,
    /// Length before any Veno stretch.
    pub raw_length: u64,
    /// The interval's own discount factor DF_i (RFC 5348 §5.5); 1 without discounting.
    pub discount: f64,
    /// Whether Veno classified the loss event that closed it as a non-congestion loss.
    pub stretched: bool,
    /// Packets lost or marked in it (K of RFC 4828 §3; at least 1 for an interval a loss
    /// event opened, 0 for the synthetic first interval).
    pub losses: u64,
    /// TFRC-SP: it lasted at most two RTTs, so its length counts N/K (RFC 4828 §3).
    pub short: bool,
    /// Packets of its lossy part (RFC 4342 §8.6's Loss Length): from its first packet to the
    /// last loss of the loss event that opened it; the rest, its data part, was all received.
    /// 0 for the synthetic first interval.
    pub lossy: u64,
    /// The synthetic first interval of RFC 5348 §6.3.1, derived from the receive rate (it
    /// spans no packets).
    pub synthetic: bool,
}

/// The loss history: the open interval I_0 and up to eight closed intervals I_1..I_8.
#[derive(Debug, Clone, Default)]
pub struct LossHistory {
    /// I_1 first (most recent).
    closed: Deque<ClosedInterval>,
    /// Sequence number and (interpolated) time of the first loss of the most recent loss event.
    event_start: Option<(u64, Instant)>,
    /// Number of loss events so far.
    events: u64,
    /// Veno: α when the loss event that opened the current interval was a non-congestion loss
    /// (the interval then counts α times its length, open and, once closed, closed).
    open_stretch: Option<f64>,
    history_discounting: bool,
    /// ns-2.35 counting (`est_loss_WALI()`, `smooth_ 1`); see [`LossHistory::new_ns2`].
    ns2_counting: bool,
    /// TFRC-SP's counting of short loss intervals; see [`LossHistory::new_small_packets`].
    short_intervals: bool,
    /// Packets lost or marked so far in the open interval I_0.
    open_losses: u64,
    /// The RTT that "two round-trip times" refers to (TFRC-SP), set by the receiver.
    rtt: core::time::Duration,
    /// The last loss of the current loss event (the end of the open interval's lossy part).
    open_last_loss: Option<u64>,
}

impl LossHistory {
    /// An empty history.
    pub fn new(history_discounting: bool) -> Self {
        LossHistory {
            closed: Deque::with_capacity(INTERVALS_AVERAGED + 1),
            event_start: None,
            events: 0,
            open_stretch: None,
            history_discounting,
            ns2_counting: false,
            short_intervals: false,
            open_losses: 0,
            rtt: core::time::Duration::ZERO,
            open_last_loss: None,
        }
    }

    /// An empty history counting loss intervals as TFRC-SP does (RFC 4828 §3): "During short
    /// loss intervals (those at most two round-trip times), the loss rate is computed by
    /// counting the actual number of packets lost or marked ... if the loss interval consists
    /// of N packets including K losses, the size of the loss interval is calculated as N/K";
    /// and "the calculation of the average loss interval can include the most recent loss
    /// interval only if more than two round-trip times have passed since the beginning of that
    /// loss interval". The receiver reports every lost packet ([`LossHistory::add_losses`]) and
    /// the RTT ([`LossHistory::set_rtt`]).
    pub fn new_small_packets(history_discounting: bool) -> Self {
        LossHistory {
            short_intervals: true,
            ..LossHistory::new(history_discounting)
        }
    }

    /// Sets the RTT that TFRC-SP's "two round-trip times" refers to (the receiver's R_m).
    pub fn set_rtt(&mut self, rtt: core::time::Duration) {
        self.rtt = rtt;
    }

    /// Records that packet `sequence` was lost (or marked) and belongs to the current loss
    /// event: the open interval's lossy part reaches at least to it.
    ///
    /// A loss below the open interval's start (revealed after a later loss event, e.g. a CE
    /// mark that arrived before the gap below it was declared lost) lies in a closed interval:
    /// that interval's lossy part is extended to it, so that no data part holds a loss.
    /// Returns false when the loss lies before every interval (the synthetic one's domain).
    pub fn note_loss(&mut self, sequence: u64) -> bool {
        let Some((start, _)) = self.event_start else {
            return false;
        };
        if sequence >= start {
            self.open_last_loss = Some(
                self.open_last_loss
                    .map_or(sequence, |last| last.max(sequence)),
            );
            return true;
        }
        let mut end = start;
        for interval in &mut self.closed {
            if interval.synthetic {
                break;
            }
            let first = end.saturating_sub(interval.raw_length);
            if sequence >= first {
                interval.lossy = interval.lossy.max(sequence - first + 1);
                return true;
            }
            end = first;
        }
        false
    }

    /// The open interval's start and the last packet of its lossy part (its loss event's last
    /// loss), once a loss happened.
    pub fn open_lossy_part(&self) -> Option<(u64, u64)> {
        self.event_start
            .map(|(start, _)| (start, self.open_last_loss.unwrap_or(start).max(start)))
    }

    /// Whether Veno stretched the open interval.
    pub fn open_is_stretched(&self) -> bool {
        self.open_stretch.is_some()
    }

    /// Counts `count` packets lost or marked in the open interval I_0 (K of RFC 4828 §3).
    pub fn add_losses(&mut self, count: u64) {
        if self.event_start.is_some() {
            self.open_losses = self.open_losses.saturating_add(count);
        }
    }

    /// TFRC-SP: whether the open interval is still short at `now`, i.e. no more than two RTTs
    /// have passed since its beginning. Always false for standard TFRC.
    pub fn open_interval_is_short(&self, now: Instant) -> bool {
        self.short_intervals
            && self
                .event_start
                .is_some_and(|(_, start)| now <= start + self.rtt * 2)
    }

    /// An empty history counting as ns-2.35's `TfrcSinkAgent::est_loss_WALI()` does with
    /// `smooth_ 1`: the open interval I_0 excludes the packet that started the current event
    /// (ns-2's `sample[0]`), and with k < 8 closed intervals I_tot0 averages I_0 with all k of
    /// them (weights w_1..w_(k+1)) instead of dropping the oldest. With eight or more closed
    /// intervals both countings give the same weights.
    pub fn new_ns2(history_discounting: bool) -> Self {
        LossHistory {
            ns2_counting: true,
            ..LossHistory::new(history_discounting)
        }
    }

    /// The closed intervals, most recent (I_1) first.
    pub fn closed_intervals(&self) -> impl Iterator<Item = &ClosedInterval> {
        self.closed.iter()
    }

    /// Number of loss events seen.
    pub fn loss_events(&self) -> u64 {
        self.events
    }

    /// Start (sequence, time) of the current loss event, if any loss happened.
    pub fn event_start(&self) -> Option<(u64, Instant)> {
        self.event_start
    }

    /// RFC 5348 §5.2: a loss at (interpolated) time `time` starts a new loss event unless it lies
    /// within one RTT of the current event's first loss (T_old + R >= T_new).
    pub fn starts_new_event(&self, time: Instant, rtt: core::time::Duration) -> bool {
        match self.event_start {
            None => true,
            Some((_, start)) => time > start + rtt,
        }
    }

    /// Records the first loss event (RFC 5348 §6.3.1): the interval before it is the synthetic
    /// `first_interval` (packets), and the open interval starts at `sequence`. With
    /// `stretch = Some(α)` (Veno: the first event is a non-congestion loss) the interval it opens
    /// counts α times; the synthetic interval, derived from the receive rate, is never stretched.
    pub fn first_event(
        &mut self,
        sequence: u64,
        time: Instant,
        first_interval: f64,
        stretch: Option<f64>,
    ) {
        let length = first_interval.max(1.0);
        self.closed.clear();
        self.closed.push_front(ClosedInterval {
            length,
            raw_length: length.round() as u64,
            discount: 1.0,
            stretched: false,
            losses: 0,
            short: false,
            lossy: 0,
            synthetic: true,
        });
        self.event_start = Some((sequence, time));
        self.open_last_loss = None;
        self.open_losses = 0;
        self.events = 1;
        self.open_stretch = stretch;
    }

    /// Records a new loss event at `sequence`, closing the open interval. `highest` is the highest
    /// sequence number received so far (for the discount factor).
    ///
    /// Veno (paper 003, §III-B): "When the receiver detected a new loss event i, it will
    /// calculate the loss interval Ā_i based on the current value of N ... If N < β ... we
    /// extend the current loss interval A_i by certain times α, i.e., Ā_i = αA_i", and with every
    /// loss non-congestion "Ā_i = αA_i ∀i", the open interval A_0 included (eq. (11)), so that
    /// p̄ = p/α (eq. (13)). The interval a loss event opens is the one classified by the N of
    /// that moment: with `stretch = Some(α)` the interval opened now counts α times its length,
    /// while open and once closed; the interval closed now keeps the class of the event that
    /// opened it.
    pub fn new_event(&mut self, sequence: u64, time: Instant, highest: u64, stretch: Option<f64>) {
        let Some((start, start_time)) = self.event_start else {
            // No earlier event: callers use first_event; treat as a first event of length 1.
            self.first_event(sequence, time, 1.0, stretch);
            return;
        };
        if self.history_discounting {
            // RFC 5348 §5.5: intervals older than the one being closed keep the discount in
            // force when the new loss event arrives.
            let discount = self.general_discount(highest);
            for interval in &mut self.closed {
                interval.discount *= discount;
            }
        }
        let raw_length = sequence.saturating_sub(start).max(1);
        let losses = self.open_losses.max(1);
        // TFRC-SP: "for small loss intervals of at most two round-trip times, if the loss
        // interval consists of N packets including K losses, the size of the loss interval is
        // calculated as N/K" (RFC 4828 §3).
        let short = self.short_intervals && time <= start_time + self.rtt * 2;
        let counted = if short {
            raw_length as f64 / losses as f64
        } else {
            raw_length as f64
        };
        let (length, stretched) = match self.open_stretch {
            Some(alpha) => (counted * alpha, true),
            None => (counted, false),
        };
        self.open_stretch = stretch;
        let lossy = self
            .open_last_loss
            .map_or(1, |last| last.saturating_sub(start) + 1)
            .min(raw_length);
        self.closed.push_front(ClosedInterval {
            length,
            raw_length,
            discount: 1.0,
            stretched,
            losses,
            short,
            lossy,
            synthetic: false,
        });
        self.open_last_loss = None;
        self.open_losses = 0;
        self.closed.truncate(INTERVALS_AVERAGED);
        self.event_start = Some((sequence, time));
        self.events += 1;
    }

    /// I_0: packets from the start of the current loss event up to `highest` (inclusive), times
    /// α when a Veno non-congestion loss opened it.
    pub fn open_interval(&self, highest: u64) -> Option<f64> {
        let counted_start = u64::from(!self.ns2_counting);
        let factor = self.open_stretch.unwrap_or(1.0);
        self.event_start
            .map(|(start, _)| (highest.saturating_sub(start) + counted_start) as f64 * factor)
    }

    /// Mean of the closed intervals alone, I_tot1/W_tot with their own discounts.
    fn closed_mean(&self) -> Option<f64> {
        closed_mean_of(
            self.closed
                .iter()
                .map(|interval| (interval.length, interval.discount)),
        )
    }

    /// General discount factor DF (RFC 5348 §5.5): when I_0 > 2·I_mean, DF = max(0.5, 2·I_mean/I_0);
    /// otherwise 1. Always 1 when discounting is off. I_mean here is the closed intervals' mean.
    pub fn general_discount(&self, highest: u64) -> f64 {
        if !self.history_discounting {
            return 1.0;
        }
        match (self.open_interval(highest), self.closed_mean()) {
            (Some(open), Some(mean)) if open > 2.0 * mean => {
                (2.0 * mean / open).max(DISCOUNT_THRESHOLD)
            }
            _ => 1.0,
        }
    }

    /// I_mean (RFC 5348 §5.4): max(I_tot0, I_tot1) / W_tot, where I_tot0 includes the open interval
    /// I_0 with weight w_1 and drops the oldest, I_tot1 uses the closed intervals only. With
    /// history discounting, each closed interval's weight is scaled by its DF_i (and, in I_tot0,
    /// by the general DF) and each sum by its own total weight. `None` before any loss.
    ///
    /// TFRC-SP (RFC 4828 §3): "If the current loss interval I_0 is "short" then I_tot =
    /// I_tot1", judged at `now` (ignored by standard TFRC).
    pub fn mean_interval(&self, highest: u64, now: Instant) -> Option<f64> {
        let open = self.open_interval(highest)?;
        let k = self.closed.len();
        if k == 0 {
            return Some(open);
        }
        if self.open_interval_is_short(now) {
            return self.closed_mean();
        }
        let discount = self.general_discount(highest);
        Some(weighted_mean(
            open,
            self.closed
                .iter()
                .map(|interval| (interval.length, interval.discount)),
            discount,
            self.ns2_counting,
        ))
    }

    /// p = 1 / I_mean, or 0 before the first loss event; `now` as in
    /// [`LossHistory::mean_interval`].
    pub fn loss_event_rate(&self, highest: u64, now: Instant) -> f64 {
        match self.mean_interval(highest, now) {
            Some(mean) if mean > 0.0 => (1.0 / mean).min(1.0),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn history_with(intervals_oldest_first: &[u64]) -> LossHistory {
        let mut history = LossHistory::new(false);
        let mut sequence = 1000;
        history.first_event(
            sequence,
            Instant::ZERO,
            intervals_oldest_first[0] as f64,
            None,
        );
        for &length in &intervals_oldest_first[1..] {
            sequence += length;
            history.new_event(sequence, Instant::ZERO, sequence, None);
        }
        assert_eq!(history.event_start().unwrap().0, sequence);
        history
    }

    /// RFC 5348 §5.4 worked by hand: eight equal intervals of 100 give I_mean = 100 unless I_0 is
    /// longer.
    #[test]
    fn equal_intervals_give_their_length() {
        let history = history_with(&[100; 8]);
        let start = history.event_start().unwrap().0;
        // I_0 = 50 (< 100): I_tot1 dominates.
        assert!((history.mean_interval(start + 49, Instant::ZERO).unwrap() - 100.0).abs() < 1e-9);
        assert!((history.loss_event_rate(start + 49, Instant::ZERO) - 0.01).abs() < 1e-12);
    }

    /// RFC 5348 §5.4: I_tot0 counts I_0 with weight w_1 and drops I_8; it is used only when it
    /// raises the mean.
    #[test]
    fn open_interval_counts_only_when_it_raises_the_mean() {
        // Closed intervals I_1..I_8 = 10, 20, ..., 80 (I_1 most recent).
        let history = history_with(&[80, 70, 60, 50, 40, 30, 20, 10]);
        let lengths: Vec<f64> = history.closed_intervals().map(|i| i.length).collect();
        assert_eq!(
            lengths,
            vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]
        );
        let start = history.event_start().unwrap().0;
        let w_tot: f64 = WEIGHTS.iter().sum(); // 6.0
        let i_tot1: f64 = lengths.iter().zip(WEIGHTS).map(|(l, w)| l * w).sum();
        // By hand: 10+20+30+40+0.8*50+0.6*60+0.4*70+0.2*80 = 100+40+36+28+16 = 220.
        assert!((i_tot1 - 220.0).abs() < 1e-9);
        let short_open = history.mean_interval(start + 4, Instant::ZERO).unwrap(); // I_0 = 5
        assert!((short_open - 220.0 / w_tot).abs() < 1e-9);
        // I_0 = 1000: I_tot0 = 1000 + 10+20+30 + 0.8*40+0.6*50+0.4*60+0.2*70 = 1160.
        let long_open = history.mean_interval(start + 999, Instant::ZERO).unwrap();
        assert!((long_open - 1160.0 / w_tot).abs() < 1e-9);
    }

    #[test]
    fn fewer_than_eight_intervals_use_their_weights() {
        // One synthetic interval of 100 and I_0 = 10: I_mean = max(10, 100) = 100.
        let mut history = LossHistory::new(false);
        history.first_event(0, Instant::ZERO, 100.0, None);
        assert_eq!(history.mean_interval(9, Instant::ZERO), Some(100.0));
        // I_0 = 300: I_tot0 = 300*1 / w_1 = 300.
        assert_eq!(history.mean_interval(299, Instant::ZERO), Some(300.0));
        assert_eq!(
            LossHistory::new(false).loss_event_rate(100, Instant::ZERO),
            0.0
        );
    }

    /// RFC 5348 §5.2: losses within one RTT of the event's first loss belong to it.
    #[test]
    fn loss_event_membership_uses_one_rtt() {
        let mut history = LossHistory::new(false);
        history.first_event(10, Instant::from_millis(1000), 50.0, None);
        let rtt = Duration::from_millis(100);
        assert!(!history.starts_new_event(Instant::from_millis(1100), rtt));
        assert!(history.starts_new_event(Instant::from_millis(1101), rtt));
    }

    /// Veno, paper 003 eqs. (9)-(13): with every loss non-congestion, "Ā_i = αA_i ∀i", the
    /// open interval included, so p̄ = p/α whatever the open interval's length (100-packet
    /// closed intervals; the open one short, 250 and 600 packets long).
    #[test]
    fn veno_stretch_multiplies_every_interval_open_one_included() {
        for open in [10, 250, 600] {
            let mut plain = LossHistory::new(false);
            let mut veno = LossHistory::new(false);
            plain.first_event(0, Instant::ZERO, 100.0, None);
            veno.first_event(0, Instant::ZERO, 300.0, Some(3.0));
            let mut sequence = 0;
            for _ in 0..8 {
                sequence += 100;
                plain.new_event(sequence, Instant::ZERO, sequence, None);
                veno.new_event(sequence, Instant::ZERO, sequence, Some(3.0));
            }
            assert!(veno
                .closed_intervals()
                .all(|i| i.stretched && i.length == 300.0));
            let p_plain = plain.loss_event_rate(sequence + open - 1, Instant::ZERO);
            let p_veno = veno.loss_event_rate(sequence + open - 1, Instant::ZERO);
            let ratio = p_plain / p_veno;
            assert!((ratio - 3.0).abs() < 1e-9, "open {open}: p ratio {ratio}");
        }
    }

    /// Veno: the interval a loss event opens takes that event's class; the interval it closes
    /// keeps the class of the event that opened it.
    #[test]
    fn veno_classifies_an_interval_by_the_event_that_opens_it() {
        let mut history = LossHistory::new(false);
        history.first_event(0, Instant::ZERO, 50.0, None);
        history.new_event(100, Instant::ZERO, 100, Some(3.0)); // closes [0, 100): congestion-opened
        assert_eq!(history.open_interval(149), Some(150.0)); // [100, 149] × 3
        history.new_event(200, Instant::ZERO, 200, None); // closes [100, 200) ×3, opens a plain one
        let lengths: Vec<f64> = history.closed_intervals().map(|i| i.length).collect();
        assert_eq!(lengths, [300.0, 100.0, 50.0]);
        assert_eq!(history.open_interval(209), Some(10.0));
    }

    /// RFC 5348 §5.5: with a long loss-free I_0 the older intervals are discounted, raising I_mean.
    #[test]
    fn history_discounting_raises_mean_after_long_loss_free_period() {
        let mut plain = LossHistory::new(false);
        let mut discounted = LossHistory::new(true);
        for history in [&mut plain, &mut discounted] {
            history.first_event(0, Instant::ZERO, 100.0, None);
            let mut sequence = 0;
            for _ in 0..8 {
                sequence += 100;
                history.new_event(sequence, Instant::ZERO, sequence, None);
            }
        }
        let start = plain.event_start().unwrap().0;
        // I_0 = 1000 > 2 * 100: DF = max(0.5, 200/1000) = 0.5.
        assert_eq!(discounted.general_discount(start + 999), 0.5);
        let undiscounted = plain.mean_interval(start + 999, Instant::ZERO).unwrap();
        let with_discount = discounted
            .mean_interval(start + 999, Instant::ZERO)
            .unwrap();
        // By hand: I_tot0 = 1000 + 0.5*(100*(1+1+1+0.8+0.6+0.4+0.2)) = 1000 + 0.5*500 = 1250,
        // W_tot0 = 1 + 0.5*5 = 3.5 → 357.14; undiscounted (1000+500)/6 = 250.
        assert!((undiscounted - 250.0).abs() < 1e-9);
        assert!((with_discount - 1250.0 / 3.5).abs() < 1e-9);
        // Short I_0: no discount.
        assert_eq!(discounted.general_discount(start + 10), 1.0);
    }

    /// ns-2.35 `est_loss_WALI()` with `smooth_ 1`: `sample[0]` counts the packets after the one
    /// that started the event, and `weighted_average1(0, ds, ...)` with ds < 10 includes every
    /// closed interval (the oldest with weight w[k+1]).
    #[test]
    fn ns2_counting_of_the_open_interval_and_a_short_history() {
        let mut rfc = LossHistory::new(false);
        let mut ns2 = LossHistory::new_ns2(false);
        for history in [&mut rfc, &mut ns2] {
            history.first_event(0, Instant::ZERO, 100.0, None);
            history.new_event(50, Instant::ZERO, 50, None);
        }
        // Closed intervals I_1 = 50, I_2 = 100; highest 349.
        assert_eq!(rfc.open_interval(349), Some(300.0));
        assert_eq!(ns2.open_interval(349), Some(299.0));
        // RFC: I_tot0 = (300·1 + 50·1) / 2 = 175; I_tot1 = (50 + 100) / 2 = 75.
        assert!((rfc.mean_interval(349, Instant::ZERO).unwrap() - 175.0).abs() < 1e-9);
        // ns-2: ave1 = (299 + 50 + 100) / 3 = 149.67; ave2 = 75.
        assert!((ns2.mean_interval(349, Instant::ZERO).unwrap() - 449.0 / 3.0).abs() < 1e-9);
        // A full history (8 closed intervals): the same weights as the RFC.
        for history in [&mut rfc, &mut ns2] {
            let mut sequence = 50;
            for _ in 0..8 {
                sequence += 100;
                history.new_event(sequence, Instant::ZERO, sequence, None);
            }
        }
        let start = rfc.event_start().unwrap().0;
        let rfc_mean = rfc.mean_interval(start + 999, Instant::ZERO).unwrap();
        let ns2_mean = ns2.mean_interval(start + 1000, Instant::ZERO).unwrap();
        assert!(
            (rfc_mean - ns2_mean).abs() < 1e-9,
            "{rfc_mean} vs {ns2_mean}"
        );
    }
}
