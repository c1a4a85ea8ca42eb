//! The UDP driver's control datagrams and flow options (`tfrc_udp::control`): any bytes parse
//! or are refused, never a panic; what parses re-emits to the same bytes; an END's plausibility
//! check holds for any totals.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tfrc_udp::control::{
    Cookie, EndAcknowledgement, EndOfSession, FlowOptions, Hello, COOKIE_LEN, END_ACK_LEN,
    END_LEN, HELLO_LEN,
};

fuzz_target!(|data: &[u8]| {
    if let Some(hello) = Hello::parse(data) {
        let mut buffer = [0u8; HELLO_LEN];
        hello.emit(&mut buffer);
        assert_eq!(&buffer[4..12], &data[4..12]);
    }
    if let Some(cookie) = Cookie::parse(data) {
        let mut buffer = [0u8; COOKIE_LEN];
        cookie.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..COOKIE_LEN]);
    }
    if let Some(end) = EndOfSession::parse(data) {
        let mut buffer = [0u8; END_LEN];
        end.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..END_LEN]);
        let _ = tfrc_udp::receiver::plausible_end(&end, &Default::default(), Some(u64::MAX));
    }
    if let Some(acknowledgement) = EndAcknowledgement::parse(data) {
        let mut buffer = [0u8; END_ACK_LEN];
        acknowledgement.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..END_ACK_LEN]);
    }
    if let Some(options) = FlowOptions::parse(data) {
        let _ = options.receiver_config(data.len() as u32);
    }
});
