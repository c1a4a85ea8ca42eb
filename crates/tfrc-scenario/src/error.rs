//! Errors that name the file, the key path and what was expected.

use crate::units::{DURATION_EXPECTED, RATE_EXPECTED};

/// Why a scenario could not be loaded, changed or expanded.
///
/// Every variant names the file (or the name given to [`crate::Scenario::from_str_named`]);
/// [`ScenarioError::Invalid`] and [`ScenarioError::Override`] also name the key path, written
/// like `link[1].queue.min_out` (arrays indexed from 0), and say what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read the scenario file: {source}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{file}:{line}:{column}: not valid TOML: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column (in characters) of the error.
        column: usize,
        /// What the TOML parser expected.
        message: String,
    },
    /// A key is unknown, missing or has a wrong value, or the scenario contradicts itself.
    #[error("{file}: {key}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The key path, e.g. `link[1].queue.min_out`.
        key: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// An override (`--set key=value`) or a sweep variant could not be applied, or produced an
    /// invalid scenario.
    #[error("{file}: {context}: {key}: {message}")]
    Override {
        /// The file.
        file: String,
        /// Which override: `--set link.1.rate=fast`, or `sweep variant e002-grid[flows=2]`.
        context: String,
        /// The key path that is wrong (an override path or a key path of the result).
        key: String,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl ScenarioError {
    /// The file (or name for errors) the error is about.
    pub fn file(&self) -> &str {
        match self {
            ScenarioError::Read { file, .. }
            | ScenarioError::Syntax { file, .. }
            | ScenarioError::Invalid { file, .. }
            | ScenarioError::Override { file, .. } => file,
        }
    }

    /// The key path, when the error is about one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ScenarioError::Invalid { key, .. } | ScenarioError::Override { key, .. } => Some(key),
            ScenarioError::Read { .. } | ScenarioError::Syntax { .. } => None,
        }
    }

    /// The explanation without file and key.
    pub fn message(&self) -> String {
        match self {
            ScenarioError::Read { source, .. } => source.to_string(),
            ScenarioError::Syntax { message, .. }
            | ScenarioError::Invalid { message, .. }
            | ScenarioError::Override { message, .. } => message.clone(),
        }
    }

    pub(crate) fn invalid(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError::Invalid {
            file: file.to_owned(),
            key: key.into(),
            message: message.into(),
        }
    }

    /// Re-labels an error found while validating the result of an override.
    pub(crate) fn in_override(self, context: &str) -> Self {
        match self {
            ScenarioError::Invalid { file, key, message } => ScenarioError::Override {
                file,
                context: context.to_owned(),
                key,
                message,
            },
            ScenarioError::Syntax {
                file,
                line,
                column,
                message,
            } => ScenarioError::Override {
                file,
                context: context.to_owned(),
                key: format!("line {line}, column {column}"),
                message,
            },
            other => other,
        }
    }

    /// Converts a deserialization error into a key-path error with a readable message.
    pub(crate) fn from_serde(
        file: &str,
        error: serde_path_to_error::Error<toml::de::Error>,
    ) -> ScenarioError {
        let path = error.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let raw = one_line(error.inner().message());
        let (key, message) = rewrite_serde_message(&path, &raw);
        ScenarioError::invalid(file, key, message)
    }
}

/// A possibly multi-line parser message on one line.
pub(crate) fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Joins a key path and a key: `("link[0]", "rate")` → `"link[0].rate"`.
pub(crate) fn join_key(path: &str, key: &str) -> String {
    let key = quote_key_if_needed(key);
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

/// A key as it may appear in a path: bare if it is made of letters, digits, `_` and `-`,
/// otherwise double-quoted.
pub(crate) fn quote_key_if_needed(key: &str) -> String {
    if is_bare_key(key) {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// Whether TOML allows `key` unquoted: letters, digits, `_` and `-`, at least one.
pub(crate) fn is_bare_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What a key expects, for "missing key" messages.
pub(crate) fn key_expectation(key: &str) -> Option<String> {
    let text = match key {
        "name" => "a name like \"example\"",
        "duration" | "delay" | "interval" | "burst" | "idle" => DURATION_EXPECTED,
        "rate" => RATE_EXPECTED,
        "between" => "two node names like [\"sender\", \"router\"]",
        "link" => "a link direction like [\"sender\", \"router\"]",
        "flows" => "a list of flow names like [\"a\"]",
        "from" | "to" => "a node name like \"sender\"",
        "bucket" => "a bucket size in bytes like 10000",
        "kind" => "the kind, as a string",
        "mean_gap" => "the mean time between losses like \"100ms\"",
        "p_good_to_bad" | "p_bad_to_good" => "a probability between 0 and 1",
        _ => return None,
    };
    Some(text.to_owned())
}

fn rewrite_serde_message(path: &str, raw: &str) -> (String, String) {
    // "missing field `x`"
    if let Some(rest) = raw.strip_prefix("missing field `") {
        let field = rest.trim_end_matches('`');
        let message = match key_expectation(field) {
            Some(expected) => format!("required key is missing (expected {expected})"),
            None => "required key is missing".to_owned(),
        };
        return (key_with_field(path, field), message);
    }
    // "unknown field `x`, expected one of `a`, `b`" / "expected `a`" / "there are no fields"
    if let Some(rest) = raw.strip_prefix("unknown field `") {
        if let Some((field, allowed)) = rest.split_once('`') {
            let allowed = backticked_names(allowed);
            let mut message = format!("unknown key `{field}`");
            if let Some(suggestion) = closest(field, &allowed) {
                message.push_str(&format!(" (did you mean `{suggestion}`?)"));
            }
            if allowed.is_empty() {
                message.push_str("; no keys are allowed here");
            } else {
                message.push_str(&format!("; expected one of: {}", allowed.join(", ")));
            }
            return (key_with_field(path, field), message);
        }
    }
    // "unknown variant `x`, expected one of `a`, `b`"
    if let Some(rest) = raw.strip_prefix("unknown variant `") {
        if let Some((value, allowed)) = rest.split_once('`') {
            let allowed: Vec<String> = backticked_names(allowed)
                .into_iter()
                .map(|name| format!("\"{name}\""))
                .collect();
            return (
                path.to_owned(),
                format!("expected one of {}, got \"{value}\"", allowed.join(", ")),
            );
        }
    }
    // "invalid type: string \"x\", expected u32" / "invalid value: integer `-1`, expected u64"
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = raw.strip_prefix(prefix) {
            if let Some((got, expected)) = rest.rsplit_once(", expected ") {
                let mut message = format!("expected {}, got {got}", describe_expected(expected));
                let last = path.rsplit('.').next().unwrap_or(path);
                if expected == "a sequence" && matches!(last, "link" | "marker" | "flow") {
                    message.push_str(&format!(" (write [[{last}]] for each entry, not [{last}])"));
                }
                return (path.to_owned(), message);
            }
        }
    }
    (path.to_owned(), raw.to_owned())
}

/// `path` with `field` appended, unless the path already ends with it.
fn key_with_field(path: &str, field: &str) -> String {
    if path == field || path.ends_with(&format!(".{field}")) {
        path.to_owned()
    } else {
        join_key(path, field)
    }
}

fn describe_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number ≥ 0".to_owned(),
        "i8" | "i16" | "i32" | "i64" => "a whole number".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "an array".to_owned(),
        other if other.starts_with("struct ") || other == "a map" => "a table".to_owned(),
        other => other.to_owned(),
    }
}

fn backticked_names(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 1)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// The allowed name closest to `key`, if it is a plausible typo (edit distance ≤ 2).
pub(crate) fn closest(key: &str, allowed: &[String]) -> Option<String> {
    allowed
        .iter()
        .map(|name| (edit_distance(key, name), name))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.clone())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_become_readable() {
        let (key, message) = rewrite_serde_message(
            "link[1].queue",
            "unknown field `min_ot`, expected one of `kind`, `min_out`",
        );
        assert_eq!(key, "link[1].queue.min_ot");
        assert!(message.contains("did you mean `min_out`"), "{message}");
        let (key, message) = rewrite_serde_message("", "missing field `duration`");
        assert_eq!(key, "duration");
        assert!(message.contains("\"180s\""));
        let (key, message) = rewrite_serde_message(
            "flow[0].packet_size",
            "invalid type: string \"big\", expected u32",
        );
        assert_eq!(key, "flow[0].packet_size");
        assert_eq!(message, "expected a whole number ≥ 0, got string \"big\"");
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("min_ot", "min_out"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
