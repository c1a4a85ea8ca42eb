//! `[sweep]`: parameter grids expanded into concrete scenarios.
//!
//! Three forms of axis (see docs/scenario-format.md):
//! - `"flow.a.count" = [2, 3, 4]` — one path, label = its last segment;
//! - `flows = { paths = ["flow.a.count"], values = [2, 3, 4], labels = ["two", …] }` — a label
//!   of your choice; every path gets the same value; `labels` optional;
//! - `setting = [ { "link.1.delay" = "250ms", "flow.a.rtt_ref" = "125ms" }, … ]` — each choice
//!   sets several paths together; an element may have `label = "…"`.

use std::collections::HashSet;

use crate::error::{join_key, ScenarioError};
use crate::model::{SweepAxis, SweepChoice, SweepForm};
use crate::overrides::{join_path, split_path};

/// Most variants a sweep may produce.
pub const MAX_VARIANTS: usize = 100_000;

/// A value as it appears in a variant name (which also names an output folder, so it has no
/// `/`): strings bare, a rate written with `/` in its unit as `…bps`, other strings containing
/// `/` (paths) by their last component, other values in TOML form.
pub(crate) fn display_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) if text.contains(['/', '\\']) => {
            match crate::units::parse_rate(text) {
                Ok(rate) => rate.to_string(),
                Err(_) => sanitize(text.rsplit(['/', '\\']).next().unwrap_or(text)),
            }
        }
        toml::Value::String(text) => sanitize(text),
        other => sanitize(&crate::emit::inline(other)),
    }
}

/// `/`, `\` and control characters become `_`, so that a variant name stays a valid name.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn valid_label(label: &str) -> bool {
    !label.trim().is_empty()
        && label.len() <= 128
        && !label.contains(['=', ',', '[', ']', '/', '\\'])
        && !label.chars().any(char::is_control)
}

/// Parses the `[sweep]` table.
pub(crate) fn parse_sweep(
    file: &str,
    table: &toml::Table,
) -> Result<Vec<SweepAxis>, ScenarioError> {
    let mut axes: Vec<SweepAxis> = Vec::new();
    for (key, value) in table {
        axes.push(parse_axis(file, key, value)?);
    }
    label_axes(file, &mut axes)?;
    name_choices(&mut axes);
    variant_count(&axes).map_err(|message| ScenarioError::invalid(file, "sweep", message))?;
    Ok(axes)
}

/// One `[sweep]` key: a list of values, an array of grouped settings, or the paths form.
fn parse_axis(file: &str, key: &str, value: &toml::Value) -> Result<SweepAxis, ScenarioError> {
    let error = |key: &str, message: String| ScenarioError::invalid(file, key, message);
    let axis_key = join_key("sweep", key);
    let axis = match value {
        toml::Value::Array(items) if items.is_empty() => {
            return Err(error(&axis_key, "expected a non-empty array of values".to_owned()))
        }
        toml::Value::Array(items) if items.iter().all(toml::Value::is_table) => {
            parse_grouped_form(file, key, items)?
        }
        toml::Value::Array(items) if !items.iter().any(toml::Value::is_table) => {
            parse_list_form(file, key, items)?
        }
        toml::Value::Array(_) => {
            return Err(error(
                &axis_key,
                "expected either an array of values or an array of tables (each a group of settings), not a mix".to_owned(),
            ))
        }
        toml::Value::Table(spec) => {
            check_label(file, &axis_key, key)?;
            parse_paths_form(file, key, spec)?
        }
        other => {
            return Err(error(
                &axis_key,
                format!(
                    "expected an array of values like [1, 2, 3], a table {{ paths = [...], values = [...] }} or an array of tables, got {}",
                    display_value(other)
                ),
            ))
        }
    };
    Ok(axis)
}

/// An axis given as an array of tables: each choice a group of settings, with an optional
/// `label`.
fn parse_grouped_form(
    file: &str,
    key: &str,
    items: &[toml::Value],
) -> Result<SweepAxis, ScenarioError> {
    let error = |key: &str, message: String| ScenarioError::invalid(file, key, message);
    let axis_key = join_key("sweep", key);
    check_label(file, &axis_key, key)?;
    let mut choices = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_key = format!("{axis_key}[{index}]");
        let Some(entries) = item.as_table() else {
            continue;
        };
        let mut settings = Vec::new();
        let mut explicit_label = None;
        for (path, setting) in entries {
            if path == "label" {
                let Some(label) = setting.as_str() else {
                    return Err(error(&item_key, "expected label to be a string".to_owned()));
                };
                check_label(file, &item_key, label)?;
                explicit_label = Some(label.to_owned());
            } else {
                let path = setting_path(file, &item_key, path)?;
                settings.push((path, setting.clone()));
            }
        }
        if settings.is_empty() {
            return Err(error(
                &item_key,
                "expected at least one \"key.path\" = value setting in this choice".to_owned(),
            ));
        }
        choices.push(SweepChoice {
            settings,
            name_parts: Vec::new(),
            explicit_label,
        });
    }
    Ok(SweepAxis {
        label: key.to_owned(),
        form: SweepForm::Grouped,
        choices,
    })
}

/// An axis given as an array of values for one key path, labelled by its last segment.
fn parse_list_form(
    file: &str,
    key: &str,
    items: &[toml::Value],
) -> Result<SweepAxis, ScenarioError> {
    let axis_key = join_key("sweep", key);
    let path = setting_path(file, &axis_key, key)?;
    let label = split_path(key)
        .ok()
        .and_then(|segments| segments.last().cloned())
        .unwrap_or_else(|| key.to_owned());
    check_label(file, &axis_key, &label)?;
    Ok(SweepAxis {
        label,
        form: SweepForm::List,
        choices: items
            .iter()
            .map(|item| SweepChoice {
                settings: vec![(path.clone(), item.clone())],
                name_parts: Vec::new(),
                explicit_label: None,
            })
            .collect(),
    })
}

/// A sweep label may not hold the characters that separate variant names and labels.
fn check_label(file: &str, key: &str, label: &str) -> Result<(), ScenarioError> {
    if valid_label(label) {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            file,
            key,
            format!("expected a label without '=', ',', '[', ']', '/' or '\\', got {label:?}"),
        ))
    }
}

/// A setting's key path, checked and written in its canonical form.
fn setting_path(file: &str, key: &str, path: &str) -> Result<String, ScenarioError> {
    let segments = split_path(path).map_err(|e| ScenarioError::invalid(file, key, e.message))?;
    Ok(join_path(&segments))
}

/// The axes' labels: a list axis whose last path segment another axis also has as label is
/// labelled by its whole path; two axes with one label are an error.
fn label_axes(file: &str, axes: &mut [SweepAxis]) -> Result<(), ScenarioError> {
    // A list axis is labelled by its last path segment, unless another axis has that label.
    let labels: Vec<String> = axes.iter().map(|axis| axis.label.clone()).collect();
    for (index, axis) in axes.iter_mut().enumerate() {
        let clashes = labels
            .iter()
            .enumerate()
            .any(|(other, label)| other != index && *label == axis.label);
        if clashes && axis.form == SweepForm::List {
            if let Some((path, _)) = axis.choices.first().and_then(|c| c.settings.first()) {
                axis.label = path.clone();
            }
        }
    }
    let mut seen = HashSet::new();
    for axis in axes.iter() {
        if !seen.insert(axis.label.clone()) {
            return Err(ScenarioError::invalid(
                file,
                join_key("sweep", &axis.file_key()),
                "two sweep axes have this label; give them different names".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Each choice's name parts (how it shows in variant names), given the names the other axes
/// take.
fn name_choices(axes: &mut [SweepAxis]) {
    // Name keys a grouped choice may not use bare (they would clash in the variant record).
    let mut taken_by_axis: Vec<HashSet<String>> = Vec::with_capacity(axes.len());
    for (index, _) in axes.iter().enumerate() {
        let mut taken = HashSet::new();
        for (other, axis) in axes.iter().enumerate() {
            if other == index {
                continue;
            }
            taken.insert(axis.label.clone());
            if axis.form == SweepForm::Grouped {
                for choice in &axis.choices {
                    for (path, _) in &choice.settings {
                        taken.insert(last_segment(path));
                    }
                }
            }
        }
        taken_by_axis.push(taken);
    }
    for (axis, taken) in axes.iter_mut().zip(&taken_by_axis) {
        let parts: Vec<_> = axis
            .choices
            .iter()
            .map(|choice| name_parts(axis, choice, taken))
            .collect();
        for (choice, parts) in axis.choices.iter_mut().zip(parts) {
            choice.name_parts = parts;
        }
    }
}

fn parse_paths_form(file: &str, key: &str, spec: &toml::Table) -> Result<SweepAxis, ScenarioError> {
    let base = join_key("sweep", key);
    let error =
        |sub: &str, message: String| ScenarioError::invalid(file, join_key(&base, sub), message);
    for name in spec.keys() {
        if !matches!(name.as_str(), "path" | "paths" | "values" | "labels") {
            return Err(error(
                name,
                format!("unknown key `{name}`; expected one of: path, paths, values, labels"),
            ));
        }
    }
    let normalized = paths_form_paths(spec, &error)?;
    let values = match spec.get("values") {
        Some(toml::Value::Array(values)) if !values.is_empty() => values,
        _ => {
            return Err(error(
                "values",
                "expected a non-empty array of values like [2, 3, 4]".to_owned(),
            ))
        }
    };
    let labels = paths_form_labels(spec, values.len(), &error)?;
    let choices = values
        .iter()
        .enumerate()
        .map(|(index, value)| SweepChoice {
            settings: normalized
                .iter()
                .map(|path| (path.clone(), value.clone()))
                .collect(),
            name_parts: Vec::new(),
            explicit_label: labels.as_ref().and_then(|l| l.get(index).cloned()),
        })
        .collect();
    Ok(SweepAxis {
        label: key.to_owned(),
        form: SweepForm::Paths,
        choices,
    })
}

/// `path` or `paths` of a paths-form axis, checked and in canonical form.
fn paths_form_paths(
    spec: &toml::Table,
    error: &impl Fn(&str, String) -> ScenarioError,
) -> Result<Vec<String>, ScenarioError> {
    let mut paths = Vec::new();
    match (spec.get("path"), spec.get("paths")) {
        (Some(_), Some(_)) => {
            return Err(error(
                "paths",
                "expected either path or paths, not both".to_owned(),
            ))
        }
        (Some(toml::Value::String(path)), None) => paths.push(path.clone()),
        (None, Some(toml::Value::Array(items))) if !items.is_empty() => {
            for item in items {
                match item.as_str() {
                    Some(path) => paths.push(path.to_owned()),
                    None => {
                        return Err(error(
                            "paths",
                            "expected an array of key paths like [\"link.1.delay\"]".to_owned(),
                        ))
                    }
                }
            }
        }
        (Some(_), None) => {
            return Err(error(
                "path",
                "expected a key path like \"flow.a.count\"".to_owned(),
            ))
        }
        _ => {
            return Err(error(
                "paths",
                "expected paths = [\"key.path\", ...] (or path = \"key.path\")".to_owned(),
            ))
        }
    }
    let mut normalized = Vec::new();
    for path in &paths {
        let segments = split_path(path).map_err(|e| error("paths", e.message))?;
        normalized.push(join_path(&segments));
    }
    Ok(normalized)
}

/// `labels` of a paths-form axis, if given: one valid label per value.
fn paths_form_labels(
    spec: &toml::Table,
    value_count: usize,
    error: &impl Fn(&str, String) -> ScenarioError,
) -> Result<Option<Vec<String>>, ScenarioError> {
    let labels: Option<Vec<String>> =
        match spec.get("labels") {
            None => None,
            Some(toml::Value::Array(labels)) if labels.len() == value_count => {
                let mut texts = Vec::new();
                for label in labels {
                    match label.as_str() {
                        Some(text) if valid_label(text) => texts.push(text.to_owned()),
                        _ => return Err(error(
                            "labels",
                            "expected labels as strings without '=', ',', '[', ']', '/' or '\\'"
                                .to_owned(),
                        )),
                    }
                }
                Some(texts)
            }
            Some(_) => {
                return Err(error(
                    "labels",
                    format!(
                        "expected an array of {} strings, one per value",
                        value_count
                    ),
                ))
            }
        };
    Ok(labels)
}

fn last_segment(path: &str) -> String {
    split_path(path)
        .ok()
        .and_then(|segments| segments.last().cloned())
        .unwrap_or_else(|| path.to_owned())
}

/// The `(key, value)` parts a choice adds to the variant name. A grouped choice without a
/// label names each setting by its last path segment, or by its whole path when that segment
/// would be ambiguous (`taken` holds the keys of the other axes).
fn name_parts(
    axis: &SweepAxis,
    choice: &SweepChoice,
    taken: &HashSet<String>,
) -> Vec<(String, String)> {
    if let Some(label) = &choice.explicit_label {
        return vec![(axis.label.clone(), label.clone())];
    }
    match axis.form {
        SweepForm::List | SweepForm::Paths => {
            let value = choice
                .settings
                .first()
                .map(|(_, value)| display_value(value))
                .unwrap_or_default();
            vec![(axis.label.clone(), value)]
        }
        SweepForm::Grouped => choice
            .settings
            .iter()
            .map(|(path, value)| {
                let last = last_segment(path);
                let repeated = choice
                    .settings
                    .iter()
                    .filter(|(other, _)| last_segment(other) == last)
                    .count()
                    > 1;
                let key = if repeated || taken.contains(&last) {
                    path.clone()
                } else {
                    last
                };
                (key, display_value(value))
            })
            .collect(),
    }
}

/// The number of variants, or why there are too many.
pub(crate) fn variant_count(axes: &[SweepAxis]) -> Result<usize, String> {
    axes.iter().try_fold(1usize, |total, axis| {
        total
            .checked_mul(axis.choices.len())
            .filter(|&n| n <= MAX_VARIANTS)
            .ok_or_else(|| format!("the sweep would produce more than {MAX_VARIANTS} variants"))
    })
}

/// The choice indices of variant `index` (the first axis varies slowest).
pub(crate) fn choice_indices(axes: &[SweepAxis], mut index: usize) -> Vec<usize> {
    let mut indices = vec![0; axes.len()];
    for (slot, axis) in indices.iter_mut().zip(axes).rev() {
        let len = axis.choices.len().max(1);
        *slot = index % len;
        index /= len;
    }
    indices
}

/// Writes the axes back as a `[sweep]` table, in the form they were written.
pub(crate) fn sweep_to_table(axes: &[SweepAxis]) -> toml::Table {
    let mut table = toml::Table::new();
    for axis in axes {
        match axis.form {
            SweepForm::List => {
                let path = axis.file_key();
                let values = axis
                    .choices
                    .iter()
                    .filter_map(|c| c.settings.first().map(|(_, v)| v.clone()))
                    .collect();
                table.insert(path, toml::Value::Array(values));
            }
            SweepForm::Paths => {
                let mut spec = toml::Table::new();
                let paths = axis
                    .choices
                    .first()
                    .map(|c| {
                        c.settings
                            .iter()
                            .map(|(p, _)| toml::Value::String(p.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                spec.insert("paths".into(), toml::Value::Array(paths));
                let values = axis
                    .choices
                    .iter()
                    .filter_map(|c| c.settings.first().map(|(_, v)| v.clone()))
                    .collect();
                spec.insert("values".into(), toml::Value::Array(values));
                if axis.choices.iter().all(|c| c.explicit_label.is_some()) {
                    let labels = axis
                        .choices
                        .iter()
                        .filter_map(|c| c.explicit_label.clone().map(toml::Value::String))
                        .collect();
                    spec.insert("labels".into(), toml::Value::Array(labels));
                }
                table.insert(axis.label.clone(), toml::Value::Table(spec));
            }
            SweepForm::Grouped => {
                let choices = axis
                    .choices
                    .iter()
                    .map(|choice| {
                        let mut entry = toml::Table::new();
                        for (path, value) in &choice.settings {
                            entry.insert(path.clone(), value.clone());
                        }
                        if let Some(label) = &choice.explicit_label {
                            entry.insert("label".into(), toml::Value::String(label.clone()));
                        }
                        toml::Value::Table(entry)
                    })
                    .collect();
                table.insert(axis.label.clone(), toml::Value::Array(choices));
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_count_like_an_odometer() {
        let axis = |n: usize| SweepAxis {
            label: "x".into(),
            form: SweepForm::List,
            choices: vec![
                SweepChoice {
                    settings: vec![],
                    name_parts: vec![],
                    explicit_label: None
                };
                n
            ],
        };
        let axes = [axis(2), axis(3)];
        assert_eq!(variant_count(&axes), Ok(6));
        assert_eq!(choice_indices(&axes, 0), [0, 0]);
        assert_eq!(choice_indices(&axes, 1), [0, 1]);
        assert_eq!(choice_indices(&axes, 3), [1, 0]);
        assert_eq!(choice_indices(&axes, 5), [1, 2]);
    }
}
