//! How numbers are written in CSV cells, and the values a reader gets back from them.
//!
//! Writing cells is most of what a long run with many flows spends outside its events: the
//! standard library's exact `{:.N}` (big-number arithmetic for every cell) was 13 % of the
//! instructions of a 64-flow, 300 s simulation. [`Fixed`] scales by 10^N and rounds in binary,
//! then writes the integer's digits.

use std::fmt;

/// Most decimals [`Fixed`] writes.
pub const MAX_DECIMALS: usize = 9;

const POWERS_OF_TEN: [u64; MAX_DECIMALS + 1] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// 2^53: every integer below it is exact in an f64.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// `|value|·10^decimals` rounded to an integer, when that integer is exact in an f64 and is
/// the one the exactly rounded decimal text has; `None` sends the caller to the standard
/// library's exact formatting.
///
/// The product carries at most half an ulp of error, so rounding it can differ from rounding
/// the exact value only when its fraction is within an ulp of one half: those near-ties (about
/// one cell in a thousand where a time in whole nanoseconds is written with 6 decimals) take
/// the exact path too.
fn scaled_units(value: f64, decimals: usize) -> Option<u64> {
    let scaled = value.abs() * POWERS_OF_TEN[decimals] as f64;
    let from_half = (scaled - scaled.trunc() - 0.5).abs();
    let near_tie = from_half <= scaled * 4.0 * f64::EPSILON;
    let units = scaled.round();
    (units < EXACT_INTEGERS && !near_tie).then_some(units as u64)
}

/// A number written with a fixed number of decimals (at most [`MAX_DECIMALS`]), the same
/// text as the standard library's `{:.N}`; an empty cell for `None`, NaN and infinities.
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub Option<f64>, pub usize);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(value) = self.0.filter(|value| value.is_finite()) else {
            return Ok(());
        };
        let decimals = self.1.min(MAX_DECIMALS);
        let Some(mut units) = scaled_units(value, decimals) else {
            return write!(f, "{value:.decimals$}");
        };
        // Digits from the right: at most 16 of the integer, a point, a sign.
        let mut text = [0u8; 24];
        let mut start = text.len();
        let mut written = 0;
        while units > 0 || written <= decimals {
            if written == decimals && decimals > 0 {
                start -= 1;
                text[start] = b'.';
            }
            start -= 1;
            text[start] = b'0' + (units % 10) as u8;
            units /= 10;
            written += 1;
        }
        if value.is_sign_negative() {
            start -= 1;
            text[start] = b'-';
        }
        // Only ASCII digits, '.' and '-' were written.
        f.write_str(std::str::from_utf8(&text[start..]).unwrap_or_default())
    }
}

/// The value a reader parses back from [`Fixed`]'s text: `None` for an empty cell. The
/// integer of units divided by 10^N is the correctly rounded quotient, which is what a
/// correct decimal parser returns for the same digits.
pub fn round_decimals(value: f64, decimals: usize) -> Option<f64> {
    if !value.is_finite() {
        return None;
    }
    let decimals = decimals.min(MAX_DECIMALS);
    let Some(units) = scaled_units(value, decimals) else {
        // Rare (near-ties, huge magnitudes): read the exact text back.
        return format!("{value:.decimals$}").parse().ok();
    };
    let magnitude = units as f64 / POWERS_OF_TEN[decimals] as f64;
    Some(if value.is_sign_negative() {
        -magnitude
    } else {
        magnitude
    })
}

/// A number in the shortest form that reads back exactly (`4` for 4.0, `0.0123`); an empty
/// cell for `None`, NaN and infinities.
#[derive(Debug, Clone, Copy)]
pub struct Shortest(pub Option<f64>);

impl fmt::Display for Shortest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.filter(|value| value.is_finite()) {
            Some(value) => value.fmt(f),
            None => Ok(()),
        }
    }
}

/// Nanoseconds in a time, when it is a non-negative whole number of them below 2^53.
fn whole_nanos(seconds: f64) -> Option<u64> {
    let nanos = (seconds * 1e9).round();
    (seconds.is_finite() && (0.0..EXACT_INTEGERS).contains(&nanos)).then_some(nanos as u64)
}

/// Seconds since the start of a run, written exactly to the nanosecond without binary
/// floating-point noise (`0.3`, `12`, `0.000000001`). A time in seconds recovers its
/// nanoseconds exactly up to 2^51 ns (26 days); other values are written in [`Shortest`] form.
#[derive(Debug, Clone, Copy)]
pub struct Seconds(pub f64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match whole_nanos(self.0) {
            Some(nanos) => write_nanos(f, nanos),
            None => Shortest(Some(self.0)).fmt(f),
        }
    }
}

/// The value a reader parses back from [`Seconds`]' text.
pub fn round_seconds(seconds: f64) -> f64 {
    match whole_nanos(seconds) {
        Some(nanos) => nanos as f64 / 1e9,
        None => seconds,
    }
}

/// A time since the start of a run in seconds, as its exact text ([`format_time_nanos`])
/// reads back: nanoseconds / 10^9.
pub fn duration_seconds(time: core::time::Duration) -> f64 {
    time.as_nanos() as f64 / 1e9
}

/// `nanos` nanoseconds as exact seconds (`12.5`).
pub fn format_time_nanos(nanos: u64) -> String {
    struct Nanos(u64);
    impl fmt::Display for Nanos {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_nanos(f, self.0)
        }
    }
    Nanos(nanos).to_string()
}

/// `seconds` as [`Seconds`] writes it.
pub fn format_seconds(seconds: f64) -> String {
    Seconds(seconds).to_string()
}

fn write_nanos(f: &mut fmt::Formatter<'_>, nanos: u64) -> fmt::Result {
    let seconds = nanos / 1_000_000_000;
    let mut fraction = nanos % 1_000_000_000;
    if fraction == 0 {
        return write!(f, "{seconds}");
    }
    let mut width = 9;
    while fraction % 10 == 0 {
        fraction /= 10;
        width -= 1;
    }
    write!(f, "{seconds}.{fraction:0width$}")
}
