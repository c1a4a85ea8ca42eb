//! Feedback packet parser: any bytes give a packet or an error, never a panic; a parsed packet
//! re-emits to the same bytes (the flags carry the receipt proof's run).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tfrc_proto::wire::{FeedbackRepr, Packet, FEEDBACK_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = Packet::new_checked(data) {
        if let Ok(repr) = FeedbackRepr::parse(&packet) {
            let mut buffer = [0u8; FEEDBACK_LEN];
            repr.emit(&mut buffer).unwrap();
            assert_eq!(&buffer[2..], &data[2..FEEDBACK_LEN]);
            let p = repr.loss_event_rate();
            assert!((0.0..=1.0).contains(&p));
        }
    }
});
