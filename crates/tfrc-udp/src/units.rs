//! Parsing of the units people type on a command line: rates (`800k`, `2M`, `1.5Mbps`), durations
//! (`100ms`, `1s`, `30`) and local-port tokens (`5000`, `5000-5010`, `5000,5002`).
//!
//! Every error names the text that could not be read and what was expected, so the command line
//! can add the flag's name.

use core::time::Duration;
use std::fmt;

/// A value that could not be parsed: the input and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {input:?}: expected {expected}")]
pub struct ParseError {
    /// The text given.
    pub input: String,
    /// A short description of the accepted forms.
    pub expected: &'static str,
}

fn error(input: &str, expected: &'static str) -> ParseError {
    ParseError {
        input: input.to_string(),
        expected,
    }
}

/// Splits `"1.5Mbps"` into `("1.5", "Mbps")`.
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
        .unwrap_or(text.len());
    // An exponent marker followed by a letter is a unit, not an exponent ("1e" is not a number).
    text.split_at(end)
}

const RATE_FORMS: &str = "a positive rate in bits/s such as 800k, 2M, 1.5Mbps, 1G or 64000";

/// Parses a rate in **bits per second**: a number with an optional SI prefix `k`, `M`, `G` (powers
/// of 1000, case-insensitive except that `m` is not milli) and an optional `bps`, `bit/s` or `b/s`
/// suffix. `800k` = 800 000 bits/s; `1.5Mbps` = 1 500 000 bits/s.
pub fn parse_rate_bits_per_second(text: &str) -> Result<f64, ParseError> {
    let trimmed = text.trim();
    let (number, unit) = split_number(trimmed);
    let value: f64 = number.parse().map_err(|_| error(text, RATE_FORMS))?;
    let unit = unit.trim();
    let lower = unit.to_ascii_lowercase();
    let prefix_part = lower
        .strip_suffix("bps")
        .or_else(|| lower.strip_suffix("bit/s"))
        .or_else(|| lower.strip_suffix("b/s"))
        .unwrap_or(&lower);
    let multiplier = match prefix_part {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => return Err(error(text, RATE_FORMS)),
    };
    let rate = value * multiplier;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(error(text, RATE_FORMS));
    }
    Ok(rate)
}

const DURATION_FORMS: &str =
    "a positive duration such as 100ms, 1s, 1.5s, 250us, 2m or a plain number of seconds";

/// Parses a duration: a number followed by `ns`, `us`/`µs`, `ms`, `s`, `m` (minutes) or `h`; a plain
/// number is seconds. Zero and negative durations are refused.
pub fn parse_duration(text: &str) -> Result<Duration, ParseError> {
    let trimmed = text.trim();
    let (number, unit) = split_number(trimmed);
    let value: f64 = number.parse().map_err(|_| error(text, DURATION_FORMS))?;
    let seconds_per_unit = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(error(text, DURATION_FORMS)),
    };
    let seconds = value * seconds_per_unit;
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e9) {
        return Err(error(text, DURATION_FORMS));
    }
    Ok(Duration::from_secs_f64(seconds))
}

const PORT_FORMS: &str =
    "a port (5000), a range (5000-5010) or a comma-separated list of both (5000,5002,6000-6010)";

/// A set of local ports: the logger logs the flows whose local port is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSet {
    /// Inclusive ranges, as given.
    ranges: Vec<(u16, u16)>,
}

impl PortSet {
    /// Parses `5000`, `5000-5010` or a comma-separated list of those (`5000,5002,6000-6010`).
    pub fn parse(text: &str) -> Result<PortSet, ParseError> {
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let parse_port = |value: &str| -> Result<u16, ParseError> {
                match value.trim().parse::<u16>() {
                    Ok(port) if port > 0 => Ok(port),
                    _ => Err(error(text, PORT_FORMS)),
                }
            };
            let range = match part.split_once('-') {
                Some((low, high)) => (parse_port(low)?, parse_port(high)?),
                None => {
                    let port = parse_port(part)?;
                    (port, port)
                }
            };
            if range.0 > range.1 {
                return Err(error(text, PORT_FORMS));
            }
            ranges.push(range);
        }
        Ok(PortSet { ranges })
    }

    /// A set of exactly one port.
    pub fn single(port: u16) -> PortSet {
        PortSet {
            ranges: vec![(port, port)],
        }
    }

    /// True when `port` is in the set.
    pub fn contains(&self, port: u16) -> bool {
        self.ranges
            .iter()
            .any(|&(low, high)| low <= port && port <= high)
    }
}

impl fmt::Display for PortSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, &(low, high)) in self.ranges.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            if low == high {
                write!(f, "{low}")?;
            } else {
                write!(f, "{low}-{high}")?;
            }
        }
        Ok(())
    }
}

/// Formats a rate in bits/s the way iperf does: `1.23 Gbit/s`, `456 Mbit/s`, `800 kbit/s`.
pub fn format_bits_per_second(bits_per_second: f64) -> String {
    let (value, unit) = scale(
        bits_per_second,
        1000.0,
        ["bit/s", "kbit/s", "Mbit/s", "Gbit/s"],
    );
    format!("{} {unit}", significant(value))
}

/// Formats a byte count with binary prefixes: `1.19 MBytes`, `512 KBytes`.
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
    fn rates_in_bits_per_second() {
        assert_eq!(parse_rate_bits_per_second("800k").unwrap(), 800_000.0);
        assert_eq!(parse_rate_bits_per_second("2M").unwrap(), 2_000_000.0);
        assert_eq!(parse_rate_bits_per_second("1.5Mbps").unwrap(), 1_500_000.0);
        assert_eq!(parse_rate_bits_per_second("1G").unwrap(), 1e9);
        assert_eq!(parse_rate_bits_per_second("64000").unwrap(), 64_000.0);
        assert_eq!(parse_rate_bits_per_second("10 kbit/s").unwrap(), 10_000.0);
        for bad in ["", "fast", "-1M", "0", "3x", "1e400", "M"] {
            let message = parse_rate_bits_per_second(bad).unwrap_err().to_string();
            assert!(message.contains("bits/s"), "{bad}: {message}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        for bad in ["", "0", "-1s", "soon", "5 parsecs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn port_tokens() {
        let single = PortSet::parse("5000").unwrap();
        assert!(single.contains(5000) && !single.contains(5001));
        let range = PortSet::parse("5000-5010").unwrap();
        assert!(range.contains(5000) && range.contains(5010) && !range.contains(5011));
        let list = PortSet::parse("5000,5002,6000-6001").unwrap();
        assert!(list.contains(5002) && !list.contains(5001) && list.contains(6001));
        assert_eq!(list.to_string(), "5000,5002,6000-6001");
        for bad in ["", "0", "70000", "5010-5000", "a", "5000,", "1-2-3"] {
            assert!(PortSet::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn human_formats() {
        assert_eq!(format_bits_per_second(1.234e9), "1.23 Gbit/s");
        assert_eq!(format_bits_per_second(800_000.0), "800 kbit/s");
        assert_eq!(format_bytes(1_250_000.0), "1.19 MBytes");
    }
}
