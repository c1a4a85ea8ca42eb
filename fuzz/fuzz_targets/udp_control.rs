//! The UDP driver's control datagrams and flow options (`tfrc_udp::control`): any bytes parse
//! or are refused, never a panic; what parses re-emits to the same bytes; an END's plausibility
//! check holds for any totals.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tfrc_udp::control::{
    control_kind, Cookie, EndAcknowledgement, EndOfSession, FlowOptions, Hello, ReverseRequest,
    COOKIE_LEN, END_ACK_LEN, END_LEN, FLOW_OPTIONS_LEN, HELLO_LEN, REVERSE_LEN,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(hello) = Hello::parse(data) {
        let mut buffer = [0u8; HELLO_LEN];
        hello.emit(&mut buffer);
        assert_eq!(&buffer[4..12], &data[4..12]);
    }
    if let Ok(cookie) = Cookie::parse(data) {
        let mut buffer = [0u8; COOKIE_LEN];
        cookie.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..COOKIE_LEN]);
    }
    if let Ok(end) = EndOfSession::parse(data) {
        let mut buffer = [0u8; END_LEN];
        end.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..END_LEN]);
        let _ = tfrc_udp::receiver::plausible_end(&end, &Default::default(), Some(u64::MAX));
    }
    if let Ok(acknowledgement) = EndAcknowledgement::parse(data) {
        let mut buffer = [0u8; END_ACK_LEN];
        acknowledgement.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..END_ACK_LEN]);
    }
    if let Ok(options) = FlowOptions::parse(data) {
        let _ = options.receiver_config(data.len() as u32);
        let mut buffer = [0u8; FLOW_OPTIONS_LEN];
        options.emit(&mut buffer).expect("a FLOW_OPTIONS_LEN buffer holds the options");
        assert_eq!(FlowOptions::parse(&buffer), Ok(options));
    }
    if let Ok(request) = ReverseRequest::parse(data) {
        let mut buffer = [0u8; REVERSE_LEN];
        request.emit(&mut buffer);
        assert_eq!(&buffer[4..], &data[4..REVERSE_LEN]);
    }
    // Whatever is not a control datagram is refused with a reason, whichever parser reads it.
    if control_kind(data).is_none() {
        assert!(Hello::parse(data).is_err());
    }
});
