//! Scenario support (filled in below).
