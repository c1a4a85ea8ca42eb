//! Local-port tokens of the logger (`5000`, `5000-5010`, `5000,5002`). Rates, sizes and durations
//! are read by the toolkit's one units grammar, `tfrc_units`.
//!
//! Every error names the text that could not be read and what was expected, so the command line
//! can add the flag's name.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
