//! Sans-IO TCP-Friendly Rate Control (RFC 5348).
pub mod time;
pub use time::Instant;
