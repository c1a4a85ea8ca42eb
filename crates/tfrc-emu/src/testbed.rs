//! Testbed mode (filled in below).
