//! The one grammar of rates, sizes and durations: every command's flags (`tfrc send -b 2M -t 10`,
//! `tfrc emulate --rate 1M --time 2`), every scenario file (`rate = "1.5Mbps"`, `delay = "25ms"`)
//! and every ETP descriptor read their units here, so a value that one of them accepts the others
//! accept too, and a bad value gets the same message everywhere:
//! `expected a rate like "800kbps", got "fast" (no number before the unit)`.
//!
//! Values are parsed exactly from their decimal text (no floating point): a rate is a whole number
//! of bits per second, a size a whole number of bytes, a duration a whole number of nanoseconds.
//! Prefixes are decimal SI (`k` = 1000), as iperf3's `-b` and netem's `rate`; binary ones are
//! written `Ki`, `Mi`, `Gi` (sizes only).
//!
//! | quantity | written | a bare number is |
//! |---|---|---|
//! | rate | prefix `k`/`K`, `M`/`m` (mega, as iperf3: there are no millibits), `G`/`g`, then `bps`, `b/s`, `bit/s` or nothing: `800k`, `800kbps`, `1.5Mbps`, `2M`, `1Gbit/s` | bits/s |
//! | size | `B`, `kB`/`KB`/`k`, `MB`/`M`, `GB`/`G`, `KiB`, `MiB`, `GiB`: `1400`, `64kB`, `1MiB` | bytes |
//! | duration | `ns`, `us`/`µs`, `ms`, `s`/`sec`, `m`/`min`, `h`: `250ms`, `1.5s`, `2min` | seconds on the command line (`-t 10`, as iperf3); rejected in files, where `delay = 10` is ambiguous |

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a rate is expected to look like, used in error messages.
pub const RATE_EXPECTED: &str = "a rate like \"800kbps\"";
/// What a duration is expected to look like, used in error messages.
pub const DURATION_EXPECTED: &str = "a duration like \"180s\" or \"250ms\"";
/// What a size is expected to look like, used in error messages.
pub const SIZE_EXPECTED: &str = "a size in bytes like \"1400\" or \"64kB\"";

/// Decimal prefixes of rates; `m` is mega, as in iperf3's `-b 1m`.
const RATE_PREFIXES: &[(&str, u64)] = &[
    ("", 1),
    ("k", 1_000),
    ("K", 1_000),
    ("M", 1_000_000),
    ("m", 1_000_000),
    ("G", 1_000_000_000),
    ("g", 1_000_000_000),
];

/// What may follow a rate's prefix: bits per second in one of its spellings, or nothing.
const RATE_SUFFIXES: &[&str] = &["bps", "b/s", "bit/s", ""];

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("k", 1_000),
    ("K", 1_000),
    ("kB", 1_000),
    ("KB", 1_000),
    ("M", 1_000_000),
    ("MB", 1_000_000),
    ("G", 1_000_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

const DURATION_UNITS: &[(&str, u64)] = &[
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("ns", 1),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Why a rate, size or duration text was rejected (the message says what was expected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(String);

impl UnitError {
    /// The explanation, e.g. `expected a rate like "800kbps", got "fast" (no number before the unit)`.
    pub fn message(&self) -> &str {
        &self.0
    }

    fn new(expected: &str, text: &str, reason: &str) -> UnitError {
        UnitError(format!("expected {expected}, got {text:?} ({reason})"))
    }
}

/// A data rate in whole bits per second.
///
/// Written `"800kbps"`, `"1.5Mbps"`, `"2M"`, `"1Gbps"` or as a bare number of bits/s
/// (`1000000`). `k`, `M`, `G` are powers of 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate {
    bits_per_second: u64,
}
impl Rate {
    /// No rate at all.
    pub const ZERO: Rate = Rate { bits_per_second: 0 };

    /// A rate of `bits_per_second` bits/s.
    pub const fn from_bits_per_second(bits_per_second: u64) -> Rate {
        Rate { bits_per_second }
    }

    /// A rate of `kilobits_per_second` × 1000 bits/s (saturating).
    pub const fn from_kbps(kilobits_per_second: u64) -> Rate {
        Rate::from_bits_per_second(kilobits_per_second.saturating_mul(1_000))
    }

    /// A rate of `megabits_per_second` × 10^6 bits/s (saturating).
    pub const fn from_mbps(megabits_per_second: u64) -> Rate {
        Rate::from_bits_per_second(megabits_per_second.saturating_mul(1_000_000))
    }

    /// The rate in bits per second.
    pub const fn bits_per_second(self) -> u64 {
        self.bits_per_second
    }

    /// The rate in bytes per second, as `f64` (the unit of `tfrc_proto::Config::target_rate`).
    pub fn bytes_per_second(self) -> f64 {
        self.bits_per_second as f64 / 8.0
    }

    /// The rate in kbit/s as `f64`, for reports.
    pub fn kbps(self) -> f64 {
        self.bits_per_second as f64 / 1_000.0
    }

    /// Whether the rate is zero.
    pub const fn is_zero(self) -> bool {
        self.bits_per_second == 0
    }

    /// Time to send `bytes` bytes at this rate, rounded up to the next nanosecond; `None` for a
    /// zero rate. Integer arithmetic only; saturates at `u64::MAX` nanoseconds.
    pub fn transmission_time(self, bytes: u64) -> Option<Duration> {
        if self.bits_per_second == 0 {
            return None;
        }
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        let rate = u128::from(self.bits_per_second);
        let nanos = bits.div_ceil(rate);
        Some(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }
}

impl fmt::Display for Rate {
    /// The shortest exact form: `"1Gbps"`, `"100Mbps"`, `"1500kbps"`, `"1234bps"`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.bits_per_second;
        if bits == 0 {
            return formatter.write_str("0bps");
        }
        for (unit, scale) in [
            ("Gbps", 1_000_000_000u64),
            ("Mbps", 1_000_000),
            ("kbps", 1_000),
        ] {
            if bits.is_multiple_of(scale) {
                return write!(formatter, "{}{unit}", bits / scale);
            }
        }
        write!(formatter, "{bits}bps")
    }
}

impl FromStr for Rate {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<Rate, UnitError> {
        parse_rate(text)
    }
}

/// Parses a rate such as `"800kbps"`, `"1.5 Mbps"`, `"2M"` or `"1000000"` (bits/s). Zero is a
/// rate (`"0bps"`); callers that need a positive one say so with [`positive_rate`].
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let fail = |reason: &str| Err(UnitError::new(RATE_EXPECTED, text, reason));
    let trimmed = text.trim();
    let (number, unit) = split_number(trimmed);
    if number.is_empty() {
        return fail("no number before the unit");
    }
    let unit = unit.trim_start();
    let scale = RATE_PREFIXES.iter().find_map(|&(prefix, scale)| {
        let suffix = unit.strip_prefix(prefix)?;
        RATE_SUFFIXES.contains(&suffix).then_some(scale)
    });
    let Some(scale) = scale else {
        if unit.contains('B') {
            return fail("rates are in bits per second: write \"Mbps\" (megabits), not \"MBps\"");
        }
        return fail("unknown unit; a rate is k, M or G followed by bps, b/s, bit/s or nothing");
    };
    match scaled_decimal(number, scale) {
        Ok(bits) => Ok(Rate::from_bits_per_second(bits)),
        Err(DecimalError::Syntax) => fail("not a number"),
        Err(DecimalError::TooFine) => fail("rates are whole bits per second"),
        Err(DecimalError::TooLarge) => fail("too large"),
    }
}

/// Parses a rate that must be above zero (a flag such as `-b` or `--target-rate`).
pub fn positive_rate(text: &str) -> Result<Rate, UnitError> {
    let rate = parse_rate(text)?;
    if rate.is_zero() {
        return Err(UnitError::new(RATE_EXPECTED, text, "must be above zero"));
    }
    Ok(rate)
}

/// Parses a size in bytes: `"1400"`, `"1400B"`, `"64kB"` (64 000), `"1MiB"` (1 048 576).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let fail = |reason: &str| Err(UnitError::new(SIZE_EXPECTED, text, reason));
    let trimmed = text.trim();
    let (number, unit) = split_number(trimmed);
    if number.is_empty() {
        return fail("no number before the unit");
    }
    let unit = unit.trim_start();
    let scale = if unit.is_empty() {
        1
    } else if let Some((_, scale)) = SIZE_UNITS.iter().find(|(name, _)| *name == unit) {
        *scale
    } else {
        return fail("unknown unit; a size is bytes: B, kB, MB, GB, KiB, MiB, GiB or nothing");
    };
    match scaled_decimal(number, scale) {
        Ok(bytes) => Ok(bytes),
        Err(DecimalError::Syntax) => fail("not a number"),
        Err(DecimalError::TooFine) => fail("sizes are whole bytes"),
        Err(DecimalError::TooLarge) => fail("too large"),
    }
}

/// Parses a duration such as `"180s"`, `"1.5s"`, `"250ms"`, `"100us"`, `"2min"` or `"10ns"`,
/// as scenario files and descriptors write them: a bare number is rejected, the unit is
/// mandatory (is `delay = 10` seconds or milliseconds?).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    parse_duration_with(text, None)
}

/// Parses a duration given on the command line: the grammar of [`parse_duration`], and a bare
/// number is seconds, as iperf3's `-t 10` and `-i 1`. Zero is refused (no flag means "for no
/// time").
pub fn parse_duration_flag(text: &str) -> Result<Duration, UnitError> {
    let duration = parse_duration_with(text, Some(1_000_000_000))?;
    if duration.is_zero() {
        return Err(UnitError::new(
            DURATION_EXPECTED,
            text,
            "must be above zero",
        ));
    }
    Ok(duration)
}

/// A duration, a bare number taking `bare_scale` nanoseconds per unit (or refused if `None`).
fn parse_duration_with(text: &str, bare_scale: Option<u64>) -> Result<Duration, UnitError> {
    let fail = |reason: &str| Err(UnitError::new(DURATION_EXPECTED, text, reason));
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return fail("durations cannot be negative");
    }
    let (number, unit) = split_number(trimmed);
    if number.is_empty() {
        return fail("no number before the unit");
    }
    let unit = unit.trim_start();
    let scale = if unit.is_empty() {
        match bare_scale {
            Some(scale) => scale,
            None => return fail("a duration needs a unit: s, ms, us or ns"),
        }
    } else if let Some((_, scale)) = DURATION_UNITS.iter().find(|(name, _)| *name == unit) {
        *scale
    } else {
        return fail("unknown unit; units are ns, us (or µs), ms, s, min and h, case-sensitive");
    };
    match scaled_decimal(number, scale) {
        Ok(nanos) => Ok(Duration::from_nanos(nanos)),
        Err(DecimalError::Syntax) => fail("not a number"),
        Err(DecimalError::TooFine) => fail("finer than one nanosecond"),
        Err(DecimalError::TooLarge) => fail("too large: at most about 584 years"),
    }
}

/// Formats a duration in the shortest exact form: `"180s"`, `"1500ms"`, `"250us"`, `"7ns"`.
///
/// Durations beyond `u64::MAX` nanoseconds are written as that maximum.
pub fn format_duration(duration: Duration) -> String {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return "0s".to_owned();
    }
    for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
        if nanos % scale == 0 {
            return format!("{}{unit}", nanos / scale);
        }
    }
    format!("{nanos}ns")
}

/// Splits `"1.5Mbps"` into `("1.5", "Mbps")`.
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    text.split_at(end)
}

enum DecimalError {
    Syntax,
    TooFine,
    TooLarge,
}

/// `number × scale` computed exactly from decimal text (`"1.5"`, `"250"`, `"1_000"`).
fn scaled_decimal(number: &str, scale: u64) -> Result<u64, DecimalError> {
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number.as_str(), ""),
    };
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || (number.contains('.') && fraction.is_empty())
    {
        return Err(DecimalError::Syntax);
    }
    let mut value: u128 = 0;
    for digit in whole.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u128::from(digit - b'0')))
            .ok_or(DecimalError::TooLarge)?;
        if value > u128::from(u64::MAX) {
            return Err(DecimalError::TooLarge);
        }
    }
    value = value
        .checked_mul(u128::from(scale))
        .ok_or(DecimalError::TooLarge)?;
    // Each fractional digit is worth scale / 10^k; it must divide exactly.
    let fraction = fraction.trim_end_matches('0');
    let mut place: u128 = u128::from(scale);
    for digit in fraction.bytes() {
        let digit = u128::from(digit - b'0');
        if !place.is_multiple_of(10) {
            return Err(DecimalError::TooFine);
        }
        place /= 10;
        value = value
            .checked_add(digit * place)
            .ok_or(DecimalError::TooLarge)?;
    }
    u64::try_from(value).map_err(|_| DecimalError::TooLarge)
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Rate, D::Error> {
        struct RateVisitor;
        impl Visitor<'_> for RateVisitor {
            type Value = Rate;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(RATE_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Rate, E> {
                parse_rate(text).map_err(|error| E::custom(error.0))
            }
            fn visit_u64<E: de::Error>(self, bits: u64) -> Result<Rate, E> {
                Ok(Rate::from_bits_per_second(bits))
            }
            fn visit_i64<E: de::Error>(self, bits: i64) -> Result<Rate, E> {
                u64::try_from(bits)
                    .map(Rate::from_bits_per_second)
                    .map_err(|_| {
                        E::custom(format!(
                            "expected {RATE_EXPECTED}, got {bits} (rates cannot be negative)"
                        ))
                    })
            }
            fn visit_f64<E: de::Error>(self, bits: f64) -> Result<Rate, E> {
                if bits.is_finite() && bits >= 0.0 && bits.fract() == 0.0 && bits < 1.8e19 {
                    Ok(Rate::from_bits_per_second(bits as u64))
                } else {
                    Err(E::custom(format!(
                        "expected {RATE_EXPECTED}, got {bits} (a bare number is whole bits/s)"
                    )))
                }
            }
        }
        deserializer.deserialize_any(RateVisitor)
    }
}

/// Deserializes a duration written with a unit; bare numbers are rejected with a hint.
struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;
    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(DURATION_EXPECTED)
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        parse_duration(text).map_err(|error| E::custom(error.0))
    }
    fn visit_i64<E: de::Error>(self, number: i64) -> Result<Duration, E> {
        Err(E::custom(format!(
            "expected {DURATION_EXPECTED}, got the bare number {number}: a duration needs a unit, e.g. \"{number}s\" or \"{number}ms\""
        )))
    }
    fn visit_u64<E: de::Error>(self, number: u64) -> Result<Duration, E> {
        Err(E::custom(format!(
            "expected {DURATION_EXPECTED}, got the bare number {number}: a duration needs a unit, e.g. \"{number}s\" or \"{number}ms\""
        )))
    }
    fn visit_f64<E: de::Error>(self, number: f64) -> Result<Duration, E> {
        Err(E::custom(format!(
            "expected {DURATION_EXPECTED}, got the bare number {number}: a duration needs a unit, e.g. \"{number}s\""
        )))
    }
}

/// A duration written with a unit, as a serde-friendly newtype (for optional durations: a
/// scenario file's `stop = "90s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationText(pub Duration);

impl Serialize for DurationText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_duration(self.0))
    }
}

/// Writes a [`Duration`] as a scenario file does (`"250ms"`), for `#[serde(serialize_with)]`.
pub fn serialize_duration<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_duration(*duration))
}

/// Writes an optional [`Duration`] (present values only; pair with `skip_serializing_if`).
pub fn serialize_optional_duration<S: Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => serialize_duration(duration, serializer),
        None => serializer.serialize_none(),
    }
}

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<DurationText, D::Error> {
        deserializer
            .deserialize_any(DurationVisitor)
            .map(DurationText)
    }
}

/// Formats a rate in bits/s for people, as iperf3 does: `1.23 Gbit/s`, `456 Mbit/s`,
/// `800 kbit/s`.
pub fn format_bits_per_second(bits_per_second: f64) -> String {
    let (value, unit) = scale(
        bits_per_second,
        1000.0,
        ["bit/s", "kbit/s", "Mbit/s", "Gbit/s"],
    );
    format!("{} {unit}", significant(value))
}

/// Formats a byte count for people with binary prefixes, as iperf3 does: `1.19 MBytes`,
/// `512 KBytes`.
pub fn format_bytes(bytes: f64) -> String {
    let (value, unit) = scale(bytes, 1024.0, ["Bytes", "KBytes", "MBytes", "GBytes"]);
    format!("{} {unit}", significant(value))
}

fn scale(mut value: f64, base: f64, units: [&'static str; 4]) -> (f64, &'static str) {
    let mut index = 0;
    while value.abs() >= base && index + 1 < units.len() {
        value /= base;
        index += 1;
    }
    (value, units[index])
}

/// Three significant digits (at least the integer part).
fn significant(value: f64) -> String {
    if !value.is_finite() {
        return "inf".to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rate_unit() {
        let cases = [
            ("800kbps", 800_000),
            ("800Kbps", 800_000),
            ("800 kbps", 800_000),
            ("1.5Mbps", 1_500_000),
            ("100Mbps", 100_000_000),
            ("1Gbps", 1_000_000_000),
            ("2.5Gbps", 2_500_000_000),
            ("64bps", 64),
            ("1000000", 1_000_000),
            ("1Mb/s", 1_000_000),
            ("384kb/s", 384_000),
            ("10Mbit/s", 10_000_000),
            ("1_000kbps", 1_000_000),
            ("0.001Mbps", 1_000),
            // iperf3's `-b` forms: a bare prefix, either case.
            ("800k", 800_000),
            ("2M", 2_000_000),
            ("1m", 1_000_000),
            ("1.5g", 1_500_000_000),
            ("10 Gbit/s", 10_000_000_000),
            ("0", 0),
        ];
        for (text, bits) in cases {
            assert_eq!(parse_rate(text).unwrap().bits_per_second(), bits, "{text}");
        }
    }

    #[test]
    fn bad_rates_say_what_is_expected() {
        for (text, reason) in [
            ("fast", "no number"),
            ("800kbs", "unknown unit"),
            ("800Tbps", "unknown unit"),
            ("800 kbit", "unknown unit"),
            ("1MBps", "bits per second"),
            ("1MB", "bits per second"),
            ("0.5bps", "whole bits"),
            ("1.2.3Mbps", "not a number"),
            ("99999999999999999999Gbps", "too large"),
            ("", "no number"),
            ("-1Mbps", "no number"),
        ] {
            let error = parse_rate(text).unwrap_err().to_string();
            assert!(
                error.contains("expected a rate like \"800kbps\""),
                "{error}"
            );
            assert!(error.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn every_duration_unit() {
        let cases = [
            ("180s", 180_000_000_000),
            ("1.5s", 1_500_000_000),
            ("250ms", 250_000_000),
            ("250 ms", 250_000_000),
            ("100us", 100_000),
            ("100µs", 100_000),
            ("7ns", 7),
            ("0s", 0),
            ("0.000000001s", 1),
            ("2min", 120_000_000_000),
            ("2m", 120_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("3sec", 3_000_000_000),
        ];
        for (text, nanos) in cases {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_nanos(nanos),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_durations_say_what_is_expected() {
        for (text, reason) in [
            ("180", "needs a unit"),
            ("3 parsecs", "unknown unit"),
            ("1MS", "unknown unit"),
            ("0.5ns", "finer than one nanosecond"),
            ("-1s", "negative"),
            ("s", "no number"),
            ("1.s", "not a number"),
            ("99999999999999999999s", "too large"),
        ] {
            let error = parse_duration(text).unwrap_err().to_string();
            assert!(
                error.contains("expected a duration like \"180s\""),
                "{error}"
            );
            assert!(error.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn flags_read_a_bare_number_as_seconds_and_refuse_zero() {
        assert_eq!(parse_duration_flag("10").unwrap(), Duration::from_secs(10));
        assert_eq!(
            parse_duration_flag("2.5").unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            parse_duration_flag("100ms").unwrap(),
            Duration::from_millis(100)
        );
        for (text, reason) in [
            ("0", "above zero"),
            ("0ms", "above zero"),
            ("soon", "no number"),
        ] {
            let error = parse_duration_flag(text).unwrap_err().to_string();
            assert!(
                error.contains("expected a duration like \"180s\""),
                "{error}"
            );
            assert!(error.contains(reason), "{text}: {error}");
        }
        // The same bad value gets the same message from a file and from a flag.
        assert_eq!(
            parse_duration("5 parsecs").unwrap_err(),
            parse_duration_flag("5 parsecs").unwrap_err()
        );
        assert!(positive_rate("0")
            .unwrap_err()
            .to_string()
            .contains("above zero"));
        assert_eq!(positive_rate("1M").unwrap(), Rate::from_mbps(1));
    }

    #[test]
    fn sizes_in_bytes() {
        for (text, bytes) in [
            ("1400", 1400),
            ("1400B", 1400),
            ("64kB", 64_000),
            ("64K", 64_000),
            ("1.5MB", 1_500_000),
            ("1KiB", 1024),
            ("2MiB", 2 << 20),
            ("1GiB", 1 << 30),
        ] {
            assert_eq!(parse_size(text).unwrap(), bytes, "{text}");
        }
        for (text, reason) in [
            ("", "no number"),
            ("1.5B", "whole bytes"),
            ("1kbps", "unknown unit"),
            ("-3", "no number"),
        ] {
            let error = parse_size(text).unwrap_err().to_string();
            assert!(error.contains(SIZE_EXPECTED), "{error}");
            assert!(error.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn human_formats() {
        assert_eq!(format_bits_per_second(1.234e9), "1.23 Gbit/s");
        assert_eq!(format_bits_per_second(800_000.0), "800 kbit/s");
        assert_eq!(format_bytes(1_250_000.0), "1.19 MBytes");
    }

    #[test]
    fn formats_are_exact_and_parse_back() {
        for bits in [
            0,
            1,
            999,
            1_000,
            1_500_000,
            100_000_000,
            3_000_000_000,
            u64::MAX,
        ] {
            let rate = Rate::from_bits_per_second(bits);
            assert_eq!(parse_rate(&rate.to_string()).unwrap(), rate);
        }
        for nanos in [0, 1, 1_000, 1_500_000_000, 180_000_000_000, u64::MAX] {
            let duration = Duration::from_nanos(nanos);
            assert_eq!(
                parse_duration(&format_duration(duration)).unwrap(),
                duration
            );
        }
        assert_eq!(Rate::from_kbps(1_500).to_string(), "1500kbps");
        assert_eq!(format_duration(Duration::from_millis(1_500)), "1500ms");
    }

    #[test]
    fn transmission_time_is_exact() {
        let rate = Rate::from_mbps(1);
        assert_eq!(rate.transmission_time(1000), Some(Duration::from_millis(8)));
        assert_eq!(
            Rate::from_bits_per_second(3).transmission_time(1),
            Some(Duration::from_nanos(2_666_666_667))
        );
        assert_eq!(Rate::ZERO.transmission_time(1), None);
        assert_eq!(
            Rate::from_bits_per_second(1).transmission_time(u64::MAX),
            Some(Duration::from_nanos(u64::MAX))
        );
    }
}
