//! Sender and receiver fed arbitrary datagrams at arbitrary times: never a panic, rates stay
//! finite and positive.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tfrc_proto::{Config, Instant, Receiver, Sender};

fuzz_target!(|data: &[u8]| {
    let config = Config::default();
    let mut sender = Sender::new(config.clone(), 1, 2, Instant::ZERO).unwrap();
    let mut receiver = Receiver::new(config).unwrap();
    let mut now = 0u64;
    let mut buffer = [0u8; 1500];
    // Each chunk: 2 bytes of time step (ms), 1 byte length, then that many bytes.
    let mut rest = data;
    while rest.len() >= 3 {
        now += u64::from(u16::from_be_bytes([rest[0], rest[1]])) * 1_000_000;
        let length = usize::from(rest[2]).min(rest.len() - 3);
        let chunk = &rest[3..3 + length];
        rest = &rest[3 + length..];
        let t = Instant::from_nanos(now);
        let _ = receiver.handle_packet(t, chunk);
        let _ = sender.handle_packet(t, chunk);
        sender.handle_timeout(t);
        receiver.handle_timeout(t);
        if sender.can_send(t) {
            let length = sender.send_padded(t, &mut buffer).unwrap();
            let _ = receiver.handle_packet(t, &buffer[..length]);
        }
        while let Some(length) = receiver.poll_transmit(t, &mut buffer) {
            let _ = sender.handle_packet(t, &buffer[..length]);
        }
        let state = sender.state();
        assert!(state.sending_rate.is_finite() && state.sending_rate > 0.0);
        assert!((0.0..=1.0).contains(&receiver.loss_event_rate()));
    }
});
