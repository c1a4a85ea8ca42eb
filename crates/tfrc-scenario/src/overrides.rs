//! Override paths (`link.1.rate`, `flow.a.target_rate`, `sweep."flow.a.count"`) on the TOML tree.
//!
//! A path is a list of segments separated by `.`; a segment may be double-quoted to contain
//! dots (`flow."a.1".rate`). In a table a segment is a key; in an array it is an index counted
//! from 0, or the `name` of an element (flows by name). The last segment may create a key that
//! is not there yet (validation then decides whether it is allowed), or append to an array when
//! it is the index one past the end.

use crate::error::quote_key_if_needed;
use crate::raw::{
    RawFlowKind, RawLossModel, RawQueue, TaggedKinds, FLOW_COMMON_KEYS, LOSS_COMMON_KEYS,
};

/// An override path that does not lead anywhere: the prefix that failed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathError {
    pub(crate) key: String,
    pub(crate) message: String,
}

fn path_error(key: impl Into<String>, message: impl Into<String>) -> PathError {
    PathError {
        key: key.into(),
        message: message.into(),
    }
}

/// Splits `a.b."c.d".0` into `["a", "b", "c.d", "0"]`.
pub(crate) fn split_path(path: &str) -> Result<Vec<String>, PathError> {
    let mut segments = Vec::new();
    let mut chars = path.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut segment = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some(escaped) => segment.push(escaped),
                        None => break,
                    },
                    other => segment.push(other),
                }
            }
            if !closed {
                return Err(path_error(
                    path,
                    "unterminated quoted segment in the key path",
                ));
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            match chars.next() {
                None => {
                    segments.push(segment);
                    break;
                }
                Some('.') => segments.push(segment),
                Some(other) => {
                    return Err(path_error(
                        path,
                        format!("expected '.' after a quoted segment, got {other:?}"),
                    ))
                }
            }
        } else {
            let mut ended = true;
            for c in chars.by_ref() {
                if c == '.' {
                    ended = false;
                    break;
                }
                segment.push(c);
            }
            let segment = segment.trim().to_owned();
            if segment.is_empty() {
                return Err(path_error(
                    path,
                    "expected a key path like link.1.rate or flow.a.target_rate (empty segment)",
                ));
            }
            segments.push(segment);
            if ended {
                break;
            }
        }
    }
    if segments.is_empty() {
        return Err(path_error(path, "expected a key path like link.1.rate"));
    }
    Ok(segments)
}

/// Writes segments back as a path, quoting those that need it.
pub(crate) fn join_path(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| quote_key_if_needed(s))
        .collect::<Vec<_>>()
        .join(".")
}

/// Parses the value of `key=value`: as a TOML value if it is one (`5`, `0.01`, `true`,
/// `"text"`, `[1, 2]`, `{ kind = "red" }`), otherwise as a string (`2Mbps`, `250ms`).
pub(crate) fn parse_value(text: &str) -> toml::Value {
    let text = text.trim();
    if let Ok(table) = format!("value = {text}").parse::<toml::Table>() {
        if table.len() == 1 {
            if let Some(value) = table.get("value") {
                return value.clone();
            }
        }
    }
    toml::Value::String(text.to_owned())
}

fn type_name(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// Where a segment leads inside an array: an index or the element with that `name`.
fn array_position(items: &[toml::Value], segment: &str, prefix: &str) -> Result<usize, PathError> {
    if let Ok(index) = segment.parse::<usize>() {
        if index < items.len() {
            return Ok(index);
        }
        return Err(path_error(
            prefix,
            format!(
                "index {index} is out of range: there are {} elements, counted from 0",
                items.len()
            ),
        ));
    }
    let named = |item: &toml::Value| {
        item.get("name")
            .and_then(toml::Value::as_str)
            .is_some_and(|name| name == segment)
    };
    match items.iter().position(named) {
        Some(index) => Ok(index),
        None => {
            let names: Vec<String> = items
                .iter()
                .filter_map(|item| item.get("name").and_then(toml::Value::as_str))
                .map(|name| format!("{name:?}"))
                .collect();
            let known = if names.is_empty() {
                "its elements have no names; use an index counted from 0".to_owned()
            } else {
                format!("names: {}", names.join(", "))
            };
            Err(path_error(
                prefix,
                format!("no element named {segment:?} ({known})"),
            ))
        }
    }
}

/// Checks that `segments` could be set in `tree` (without changing it).
pub(crate) fn check_path(tree: &toml::Value, segments: &[String]) -> Result<(), PathError> {
    let mut current = tree;
    for (depth, segment) in segments.iter().enumerate() {
        let prefix = join_path(&segments[..=depth]);
        let is_last = depth + 1 == segments.len();
        match current {
            toml::Value::Table(table) => match table.get(segment) {
                Some(next) => current = next,
                None if is_last => return Ok(()),
                None => return check_missing(segments, depth),
            },
            toml::Value::Array(items) => {
                if is_last && segment.parse::<usize>() == Ok(items.len()) {
                    return Ok(());
                }
                let index = array_position(items, segment, &prefix)?;
                current = &items[index];
            }
            other => {
                return Err(not_a_container(segments, depth, other));
            }
        }
    }
    Ok(())
}

/// A missing intermediate key: tables are created on the way, arrays are not.
fn check_missing(segments: &[String], depth: usize) -> Result<(), PathError> {
    match segments.get(depth + 1) {
        Some(next) if next.parse::<usize>().is_ok() => Err(path_error(
            join_path(&segments[..=depth]),
            "is not present, so it cannot be indexed",
        )),
        _ => Ok(()),
    }
}

fn not_a_container(segments: &[String], depth: usize, value: &toml::Value) -> PathError {
    path_error(
        join_path(&segments[..depth]),
        format!(
            "is {}, not a table or an array, so it has no `{}`",
            type_name(value),
            segments[depth]
        ),
    )
}

/// Sets `segments` in `tree` to `value`.
///
/// Setting a `kind` (of a flow, a queue or a loss model) to a different kind also removes the
/// keys that only the old kind had, so that `flow.a.kind=tcp` turns a TFRC flow into a TCP
/// flow with TCP defaults.
pub(crate) fn set_path(
    tree: &mut toml::Value,
    segments: &[String],
    value: toml::Value,
) -> Result<(), PathError> {
    check_path(tree, segments)?;
    let Some((last, parents)) = segments.split_last() else {
        return Err(path_error("", "expected a key path like link.1.rate"));
    };
    let mut current = tree;
    for (depth, segment) in parents.iter().enumerate() {
        let prefix = join_path(&segments[..=depth]);
        current = match current {
            toml::Value::Table(table) => table
                .entry(segment.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new())),
            toml::Value::Array(items) => {
                let index = array_position(items, segment, &prefix)?;
                &mut items[index]
            }
            other => return Err(not_a_container(segments, depth, other)),
        };
    }
    match current {
        toml::Value::Table(table) => {
            if last == "kind" {
                prune_other_kind_keys(table, parents, &value);
            }
            table.insert(last.clone(), value);
            Ok(())
        }
        toml::Value::Array(items) => {
            if last.parse::<usize>() == Ok(items.len()) {
                items.push(value);
                return Ok(());
            }
            let index = array_position(items, last, &join_path(segments))?;
            items[index] = value;
            Ok(())
        }
        other => Err(not_a_container(segments, parents.len(), other)),
    }
}

fn prune_other_kind_keys(table: &mut toml::Table, parents: &[String], new_kind: &toml::Value) {
    let Some(new_kind) = new_kind.as_str() else {
        return;
    };
    if table.get("kind").and_then(toml::Value::as_str) == Some(new_kind) {
        return;
    }
    let (common, allowed): (&[&str], _) = match parents.last().map(String::as_str) {
        Some("queue") => (&["kind"], RawQueue::keys(new_kind)),
        Some("loss") => (LOSS_COMMON_KEYS, RawLossModel::keys(new_kind)),
        _ if parents.len() == 2 && parents[0] == "flow" => {
            (FLOW_COMMON_KEYS, RawFlowKind::keys(new_kind))
        }
        _ => return,
    };
    let Some(allowed) = allowed else {
        return; // unknown kind: leave everything for validation to report
    };
    table.retain(|key, _| common.contains(&key) || allowed.contains(&key));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_with_quotes() {
        assert_eq!(split_path("link.1.rate").unwrap(), ["link", "1", "rate"]);
        assert_eq!(
            split_path("flow.\"a.1\".rate").unwrap(),
            ["flow", "a.1", "rate"]
        );
        assert_eq!(
            split_path("sweep.\"flow.a.count\"").unwrap(),
            ["sweep", "flow.a.count"]
        );
        assert!(split_path("link..rate").is_err());
        assert!(split_path("").is_err());
        assert!(split_path("flow.\"a").is_err());
        assert!(split_path("flow.\"a\"x").is_err());
        assert_eq!(
            join_path(&split_path("flow.\"a.1\".rate").unwrap()),
            "flow.\"a.1\".rate"
        );
    }

    #[test]
    fn values_parse_as_toml_or_string() {
        assert_eq!(parse_value("5"), toml::Value::Integer(5));
        assert_eq!(parse_value("0.01"), toml::Value::Float(0.01));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(parse_value("2Mbps"), toml::Value::String("2Mbps".into()));
        assert_eq!(
            parse_value("\"quoted\""),
            toml::Value::String("quoted".into())
        );
        assert_eq!(
            parse_value("5\nother = 1"),
            toml::Value::String("5\nother = 1".into())
        );
        assert!(parse_value("{ kind = \"red\" }").is_table());
    }
}
