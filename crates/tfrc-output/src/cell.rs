//! How numbers are written in CSV cells, and the values a reader gets back from them.
//!
//! Writing cells is most of what a long run with many flows spends outside its events: the
//! standard library's exact `{:.N}` (big-number arithmetic for every cell) was 13 % of the
//! instructions of a 64-flow, 300 s simulation, and going through `write!` for every cell of a
//! line another 20 % of a 1024-flow one. [`CsvLine`] appends each cell's bytes to a line
//! buffer: a fixed-decimals number is scaled by 10^N and rounded in binary, then its integer's
//! digits are written.

use std::io::Write;

/// Most decimals [`CsvLine::fixed`] writes.
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

/// The value a reader parses back from [`CsvLine::fixed`]'s text: `None` for an empty cell. The
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

/// Nanoseconds in a time, when it is a non-negative whole number of them below 2^53.
fn whole_nanos(seconds: f64) -> Option<u64> {
    let nanos = (seconds * 1e9).round();
    (seconds.is_finite() && (0.0..EXACT_INTEGERS).contains(&nanos)).then_some(nanos as u64)
}

/// The value a reader parses back from [`CsvLine::seconds`]' text.
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
    let mut line = CsvLine::default();
    line.nanos(nanos);
    line.into_text()
}

/// `seconds` as [`CsvLine::seconds`] writes it.
pub fn format_seconds(seconds: f64) -> String {
    let mut line = CsvLine::default();
    line.seconds(seconds);
    line.into_text()
}

/// One CSV line being built: cells appended in order, a comma before each but the first.
/// Text cells are written as given, unquoted: they are node, flow and link names, which the
/// scenario reader limits to letters, digits, '_', '-' and '.', and fixed kind names.
#[derive(Debug, Default, Clone)]
pub struct CsvLine {
    bytes: Vec<u8>,
    cells: usize,
}

impl CsvLine {
    /// Starts the next cell.
    fn separate(&mut self) {
        if self.cells > 0 {
            self.bytes.push(b',');
        }
        self.cells += 1;
    }

    /// A text cell.
    pub fn text(&mut self, text: &str) {
        self.separate();
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// An integer cell.
    pub fn integer(&mut self, value: u64) {
        self.separate();
        self.digits(value, 0, false);
    }

    /// An integer cell, empty for `None`.
    pub fn optional_integer(&mut self, value: Option<u64>) {
        match value {
            Some(value) => self.integer(value),
            None => self.separate(),
        }
    }

    /// A number with `decimals` decimals (at most 9, `MAX_DECIMALS`), the same text as the
    /// standard library's `{:.N}`; an empty cell for `None`, NaN and infinities.
    pub fn fixed(&mut self, value: Option<f64>, decimals: usize) {
        self.separate();
        let Some(value) = value.filter(|value| value.is_finite()) else {
            return;
        };
        let decimals = decimals.min(MAX_DECIMALS);
        match scaled_units(value, decimals) {
            Some(units) => self.digits(units, decimals, value.is_sign_negative()),
            // Writing to a Vec cannot fail.
            None => drop(write!(self.bytes, "{value:.decimals$}")),
        }
    }

    /// A number in the shortest form that reads back exactly (`4` for 4.0, `0.0123`); an empty
    /// cell for `None`, NaN and infinities.
    pub fn shortest(&mut self, value: Option<f64>) {
        self.separate();
        if let Some(value) = value.filter(|value| value.is_finite()) {
            drop(write!(self.bytes, "{value}"));
        }
    }

    /// Seconds since the start of a run, written exactly to the nanosecond without binary
    /// floating-point noise (`0.3`, `12`, `0.000000001`). A time in seconds recovers its
    /// nanoseconds exactly up to 2^51 ns (26 days); other values are written in
    /// [`CsvLine::shortest`] form.
    pub fn seconds(&mut self, seconds: f64) {
        match whole_nanos(seconds) {
            Some(nanos) => {
                self.separate();
                self.nanos_text(nanos);
            }
            None => self.shortest(Some(seconds)),
        }
    }

    /// A cell of `nanos` nanoseconds as exact seconds (`12.5`).
    pub fn nanos(&mut self, nanos: u64) {
        self.separate();
        self.nanos_text(nanos);
    }

    fn nanos_text(&mut self, nanos: u64) {
        let mut fraction = nanos % 1_000_000_000;
        let mut width = 9;
        while fraction.is_multiple_of(10) && width > 0 {
            fraction /= 10;
            width -= 1;
        }
        // `width` decimals of the seconds scaled by 10^width.
        let scaled = nanos / 10u64.pow(9 - width as u32);
        self.digits(scaled, width, false);
    }

    /// `units / 10^decimals` with `decimals` decimals, a minus sign first if `negative`.
    fn digits(&mut self, mut units: u64, decimals: usize, negative: bool) {
        // Digits from the right: at most 20 of the integer, a point, a sign.
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
        if negative {
            start -= 1;
            text[start] = b'-';
        }
        self.bytes.extend_from_slice(&text[start..]);
    }

    /// Ends the line with a newline and gives its bytes ([`CsvLine::clear`] starts the next).
    pub fn finish(&mut self) -> &[u8] {
        self.bytes.push(b'\n');
        &self.bytes
    }

    /// Empties the line, keeping its buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.cells = 0;
    }

    /// The cells written so far, as text.
    pub fn into_text(self) -> String {
        // Only ASCII digits, '.', '-', ',' and valid text were written.
        String::from_utf8(self.bytes).unwrap_or_default()
    }
}
