//! Writes a scenario tree as readable TOML: top-level keys, then `[[link]]`, `[[marker]]`,
//! `[[flow]]` blocks with nested tables inline (`queue = { kind = "droptail", limit = 50 }`),
//! then `[output]`, `[sweep]` and `[variant]`.

use core::fmt::Write as _;

use serde::Serialize as _;

/// A value in inline TOML form (`{ kind = "droptail", limit = 50 }`), without the panic of
/// `toml::Value`'s `Display` should the serializer ever refuse a value.
pub(crate) fn inline(value: &toml::Value) -> String {
    let mut out = String::new();
    match value.serialize(toml::ser::ValueSerializer::new(&mut out)) {
        Ok(()) => out,
        Err(_) => format!("{value:?}"),
    }
}

fn key_text(key: &str) -> String {
    if crate::error::is_bare_key(key) {
        key.to_owned()
    } else {
        quoted_key(key)
    }
}

/// A TOML basic string usable as a key: `"flow.a.count"`.
fn quoted_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    out.push('"');
    for c in key.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_array_of_tables(value: &toml::Value) -> bool {
    matches!(value, toml::Value::Array(items) if !items.is_empty() && items.iter().all(toml::Value::is_table))
}

fn write_lines(out: &mut String, table: &toml::Table) {
    for (key, value) in table {
        let _ = writeln!(out, "{} = {}", key_text(key), inline(value));
    }
}

/// The tree as TOML text.
pub(crate) fn emit(tree: &toml::Table) -> String {
    let mut out = String::new();
    for (key, value) in tree {
        if !value.is_table() && !is_array_of_tables(value) {
            let _ = writeln!(out, "{} = {}", key_text(key), inline(value));
        }
    }
    for (key, value) in tree {
        if let (true, toml::Value::Array(items)) = (is_array_of_tables(value), value) {
            for item in items {
                let _ = writeln!(out, "\n[[{}]]", key_text(key));
                if let Some(table) = item.as_table() {
                    write_lines(&mut out, table);
                }
            }
        }
    }
    for (key, value) in tree {
        if let toml::Value::Table(table) = value {
            let _ = writeln!(out, "\n[{}]", key_text(key));
            write_lines(&mut out, table);
        }
    }
    out
}
