//! [`Scenario`]: loading, overrides, sweep and count expansion, writing back.

use core::str::FromStr;
use core::time::Duration;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::ScenarioError;
use crate::model::{FlowSpec, Link, MarkerSpec, Output, SweepAxis};
use crate::overrides::{check_path, parse_value, set_path, split_path};
use crate::raw::{read_error, RawScenario};
use crate::resolve::{expand_flow_references, instance_names, resolve, MAX_TOML_INTEGER};
use crate::sweep::{choice_indices, variant_count};

/// A validated scenario: topology, traffic, output settings, and optionally a sweep.
///
/// Load one with [`Scenario::from_path`] or [`Scenario::from_str_named`], change it with
/// [`Scenario::apply_set`], turn it into runnable scenarios with [`Scenario::expand`] and record
/// it with [`Scenario::to_toml_string`]. Fields are public for reading; after changing them
/// directly, [`Scenario::validate`] checks the result.
///
/// Equality compares the content only, not the file it came from.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name of the scenario; after [`Scenario::expand`] of a sweep, the variant name
    /// (`e002-grid[flows=2,delay=250ms]`).
    pub name: String,
    /// Length of the run.
    pub duration: Duration,
    /// Seed from which every random stream of the run is derived (default 1; at most
    /// [`crate::MAX_TOML_INTEGER`], the largest integer TOML holds).
    pub seed: u64,
    /// Overrides (`key.path=value`, as for `--set`) that turn the experiment into a short
    /// "quick" version of itself (`quick = ["duration=60s", …]` in the file; empty by default):
    /// a shorter run with its events moved to fit, a smaller sweep. Applied by
    /// [`Scenario::apply_quick`]; checked when the file is loaded.
    pub quick: Vec<String>,
    /// Duplex links; the nodes are their endpoints.
    pub links: Vec<Link>,
    /// Token-bucket markers.
    pub markers: Vec<MarkerSpec>,
    /// Traffic sources.
    pub flows: Vec<FlowSpec>,
    /// Time-series settings.
    pub output: Output,
    /// Sweep axes (empty for a concrete scenario).
    pub sweep: Vec<SweepAxis>,
    /// The sweep settings that produced this variant, as `(label, value)` pairs in order (empty
    /// unless produced by [`Scenario::expand`] of a sweep). Written as `[variant]`.
    pub variant: Vec<(String, String)>,
    file: String,
    base_dir: Option<PathBuf>,
    source: Option<Box<Source>>,
}

/// The table a scenario was resolved from (the file as written, with the overrides applied so
/// far), and what it resolved to. `--set`, `quick` and sweep settings are applied to this
/// table and resolved again, so they address the keys as the file writes them (a key left to
/// its default is simply added). A scenario whose public fields were changed since (or that
/// [`Scenario::expand`] produced) no longer matches `resolved`; its overrides apply to the
/// scenario as written by [`Scenario::to_toml_table`] instead.
#[derive(Debug, Clone)]
struct Source {
    table: toml::Table,
    resolved: Scenario,
}

impl PartialEq for Scenario {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.duration == other.duration
            && self.seed == other.seed
            && self.quick == other.quick
            && self.links == other.links
            && self.markers == other.markers
            && self.flows == other.flows
            && self.output == other.output
            && self.sweep == other.sweep
            && self.variant == other.variant
    }
}

impl FromStr for Scenario {
    type Err = ScenarioError;

    /// Parses TOML text; errors name the file `<string>`.
    fn from_str(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_str_named(text, "<string>")
    }
}

impl Scenario {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble(
        name: String,
        duration: Duration,
        seed: u64,
        quick: Vec<String>,
        links: Vec<Link>,
        markers: Vec<MarkerSpec>,
        flows: Vec<FlowSpec>,
        output: Output,
        sweep: Vec<SweepAxis>,
        variant: Vec<(String, String)>,
        file: &str,
        base_dir: Option<&Path>,
    ) -> Scenario {
        Scenario {
            name,
            duration,
            seed,
            quick,
            links,
            markers,
            flows,
            output,
            sweep,
            variant,
            file: file.to_owned(),
            base_dir: base_dir.map(Path::to_path_buf),
            source: None,
        }
    }

    /// Reads and validates a scenario file. Relative trace paths are resolved against the
    /// file's directory; errors name the file as given.
    pub fn from_path(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            file: file.clone(),
            source,
        })?;
        let base_dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Scenario::parse(&text, &file, Some(&base_dir))
    }

    /// Parses and validates TOML text; errors name `name_for_errors` as the file. Relative
    /// trace paths are kept as written.
    pub fn from_str_named(text: &str, name_for_errors: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, name_for_errors, None)
    }

    /// Parses and validates TOML text whose relative trace paths are resolved against
    /// `base_dir` (the directory a file would have been in).
    pub fn from_str_in_dir(
        text: &str,
        name_for_errors: &str,
        base_dir: &Path,
    ) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, name_for_errors, Some(base_dir))
    }

    fn parse(text: &str, file: &str, base_dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
            let (line, column) = error
                .span()
                .map(|span| line_and_column(text, span.start))
                .unwrap_or((1, 1));
            ScenarioError::Syntax {
                file: file.to_owned(),
                line,
                column,
                message: crate::error::one_line(error.message()),
            }
        })?;
        let scenario = Scenario::from_table(table, file, base_dir)?;
        scenario.check_quick()?;
        Ok(scenario)
    }

    /// Checks that the `quick` overrides apply and give a valid scenario whose sweep expands.
    fn check_quick(&self) -> Result<(), ScenarioError> {
        if self.quick.is_empty() {
            return Ok(());
        }
        let mut quick = self.clone();
        quick
            .apply_quick()
            .map_err(|error| ScenarioError::invalid(&self.file, "quick", quick_message(&error)))?;
        if let Err(error) = quick.expand() {
            return Err(ScenarioError::invalid(
                &self.file,
                "quick",
                format!(
                    "the quick version does not expand: {}",
                    quick_message(&error)
                ),
            ));
        }
        Ok(())
    }

    /// Turns this scenario into its quick version: applies the `quick` overrides (as
    /// [`Scenario::apply_sets`] does, validated once at the end) and clears the list. Without
    /// `quick` the scenario is unchanged. On error `self` is unchanged.
    ///
    /// A `--quick` run of an experiment calls this before [`Scenario::expand`]; the overrides
    /// may change the sweep (`sweep.flows={ path = "flow.f.count", values = [2] }`).
    pub fn apply_quick(&mut self) -> Result<(), ScenarioError> {
        if self.quick.is_empty() {
            return Ok(());
        }
        self.check_integer_ranges()?;
        let mut table = self.source_table();
        table.remove("quick");
        *self = self.with_overrides(table, &self.quick, "--set")?;
        Ok(())
    }

    fn from_table(
        table: toml::Table,
        file: &str,
        base_dir: Option<&Path>,
    ) -> Result<Scenario, ScenarioError> {
        let value = toml::Value::Table(table);
        let raw: RawScenario = serde_path_to_error::deserialize(value.clone())
            .map_err(|error| read_error(file, error, &value))?;
        let toml::Value::Table(table) = value else {
            unreachable!("built as a table above")
        };
        let mut scenario = resolve(raw, file, base_dir)?;
        scenario.source = Some(Box::new(Source {
            table,
            resolved: scenario.clone(),
        }));
        scenario.check_sweep_paths()?;
        Ok(scenario)
    }

    /// The table overrides apply to: the source table while this scenario is still what it
    /// resolved to, else the scenario as written out (see [`Source`]).
    fn source_table(&self) -> toml::Table {
        match &self.source {
            Some(source) if source.resolved == *self => source.table.clone(),
            _ => self.to_toml_table(),
        }
    }

    /// The file name (or name for errors) this scenario was loaded from.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The directory relative trace paths are resolved against, if any.
    pub fn base_dir(&self) -> Option<&Path> {
        self.base_dir.as_deref()
    }

    /// The resolved scenario as a TOML tree, every default written out.
    pub fn to_toml_table(&self) -> toml::Table {
        match toml::Value::try_from(self) {
            Ok(toml::Value::Table(table)) => table,
            // Serializing plain structs of strings, numbers and tables cannot fail.
            _ => toml::Table::new(),
        }
    }

    /// The resolved scenario as TOML, every default written out. Parsing it gives back an
    /// equal scenario; record it beside a run's results.
    pub fn to_toml_string(&self) -> String {
        crate::emit::emit(&self.to_toml_table())
    }

    /// Checks the scenario again (after its public fields were changed directly).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.check_integer_ranges()?;
        Scenario::from_table(self.to_toml_table(), &self.file, self.base_dir.as_deref()).map(|_| ())
    }

    /// Applies one override `key.path=value`, as `tfrc sim FILE --set key.path=value` does.
    ///
    /// The path addresses the scenario as the file writes it, and the result is resolved as the
    /// file with that key written would be (a key left to its default is added; a default that
    /// depends on another key, as the ns-2 profile's `history_discounting`, follows it): tables by key,
    /// arrays by index from 0 (`link.1.rate=2Mbps`) or by element name (`flow.a.target_rate=600kbps`);
    /// quote a segment that contains dots (`flow."a.1".rate`). The value is parsed as TOML
    /// (`5`, `0.01`, `true`, `[1, 2]`, `{ kind = "red" }`), or taken as a string when it is not
    /// valid TOML (`2Mbps`, `250ms`). The string `none` switches an optional key off. Setting a
    /// `kind` drops the keys of the old kind. The result is validated; on error `self` is
    /// unchanged.
    pub fn apply_set(&mut self, assignment: &str) -> Result<(), ScenarioError> {
        self.apply_sets([assignment])
    }

    /// Applies several overrides in order, then validates the result once (so that
    /// `link.0.rate=none` and `link.0.trace=down.trace` can be given together). See
    /// [`Scenario::apply_set`]. On error `self` is unchanged.
    pub fn apply_sets<I, S>(&mut self, assignments: I) -> Result<(), ScenarioError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.check_integer_ranges()?;
        *self = self.with_overrides(self.source_table(), assignments, "--set")?;
        Ok(())
    }

    /// `table` with the overrides applied, resolved. Errors name each override as
    /// `{verb} key.path=value`.
    fn with_overrides<I, S>(
        &self,
        table: toml::Table,
        assignments: I,
        verb: &str,
    ) -> Result<Scenario, ScenarioError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut tree = toml::Value::Table(table);
        let mut contexts = Vec::new();
        for assignment in assignments {
            let assignment = assignment.as_ref();
            let context = format!("{verb} {assignment}");
            let override_error = |key: String, message: String| ScenarioError::Override {
                file: self.file.clone(),
                context: context.clone(),
                key,
                message,
            };
            let Some((path, value)) = assignment.split_once('=') else {
                return Err(override_error(
                    assignment.trim().to_owned(),
                    "expected key.path=value, e.g. link.1.rate=2Mbps".to_owned(),
                ));
            };
            let segments = split_path(path).map_err(|e| override_error(e.key, e.message))?;
            set_path(&mut tree, &segments, parse_value(value))
                .map_err(|e| override_error(e.key, e.message))?;
            contexts.push(context);
        }
        let toml::Value::Table(table) = tree else {
            return Ok(self.clone());
        };
        Scenario::from_table(table, &self.file, self.base_dir.as_deref())
            .map_err(|error| error.in_override(&contexts.join(" ")))
    }

    /// The number of concrete scenarios [`Scenario::expand`] gives.
    pub fn variant_count(&self) -> usize {
        variant_count(&self.sweep).unwrap_or(0)
    }

    /// Where the run of `variant` (one of [`expand`](Self::expand)'s) goes under `directory`:
    /// `directory` itself for a scenario without a sweep, `directory/<variant name>` for one
    /// with. The directory is created and the variant written into it as `scenario.toml`, so
    /// that the run can be repeated; the layout of `tfrc ns2` and `tfrc ns3` runs.
    pub fn prepare_run_directory(
        &self,
        variant: &Scenario,
        directory: &Path,
    ) -> Result<PathBuf, tfrc_output::WriteError> {
        let run_directory = if self.sweep.is_empty() {
            directory.to_path_buf()
        } else {
            directory.join(&variant.name)
        };
        std::fs::create_dir_all(&run_directory).map_err(|source| tfrc_output::WriteError {
            path: run_directory.clone(),
            source,
        })?;
        let scenario_path = run_directory.join("scenario.toml");
        std::fs::write(&scenario_path, variant.to_toml_string()).map_err(|source| {
            tfrc_output::WriteError {
                path: scenario_path,
                source,
            }
        })?;
        Ok(run_directory)
    }

    /// The runnable scenarios: one per point of the sweep's cartesian product (the first axis
    /// varies slowest), or just this one without a sweep. Each has no sweep, a variant name
    /// `name[label=value,…]`, its settings in `variant`, and its flows with `count` expanded
    /// into `name.1` … `name.N` (markers then list the instances).
    pub fn expand(&self) -> Result<Vec<Scenario>, ScenarioError> {
        self.check_integer_ranges()?;
        if self.sweep.is_empty() {
            return Ok(vec![self.expand_counts()]);
        }
        let total = variant_count(&self.sweep)
            .map_err(|message| ScenarioError::invalid(&self.file, "sweep", message))?;
        let mut base_table = self.source_table();
        base_table.remove("sweep");
        // The quick overrides address the unexpanded scenario (they may change the sweep).
        base_table.remove("quick");
        let base_tree = toml::Value::Table(base_table);
        let mut variants = Vec::with_capacity(total);
        let mut names = HashSet::new();
        for index in 0..total {
            let indices = choice_indices(&self.sweep, index);
            let mut parts: Vec<(String, String)> = Vec::new();
            let mut settings: Vec<(&str, &toml::Value)> = Vec::new();
            for (axis, &choice_index) in self.sweep.iter().zip(&indices) {
                if let Some(choice) = axis.choices.get(choice_index) {
                    parts.extend(choice.name_parts.iter().cloned());
                    settings.extend(choice.settings.iter().map(|(p, v)| (p.as_str(), v)));
                }
            }
            let suffix: Vec<String> = parts.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let name = format!("{}[{}]", self.name, suffix.join(","));
            let context = format!("sweep variant {name}");
            let mut tree = base_tree.clone();
            for (path, value) in settings {
                let segments = split_path(path).map_err(|e| ScenarioError::Override {
                    file: self.file.clone(),
                    context: context.clone(),
                    key: e.key,
                    message: e.message,
                })?;
                set_path(&mut tree, &segments, value.clone()).map_err(|e| {
                    ScenarioError::Override {
                        file: self.file.clone(),
                        context: context.clone(),
                        key: e.key,
                        message: e.message,
                    }
                })?;
            }
            let toml::Value::Table(table) = tree else {
                continue;
            };
            let mut variant = Scenario::from_table(table, &self.file, self.base_dir.as_deref())
                .map_err(|error| error.in_override(&context))?;
            if !names.insert(name.clone()) {
                return Err(ScenarioError::invalid(
                    &self.file,
                    "sweep",
                    format!("two variants are both named {name}; give the choices distinct labels"),
                ));
            }
            variant.name = name;
            variant.variant = self.variant.iter().cloned().chain(parts).collect();
            variants.push(variant.expand_counts());
        }
        Ok(variants)
    }

    /// This scenario with every flow's `count` expanded into `name.1` … `name.N`, and marker
    /// flow lists naming the instances.
    ///
    /// Flows with `enabled = false` are left out, with their marker references; a marker left
    /// without flows is removed. The result has no `quick` overrides (they address the
    /// unexpanded scenario).
    pub fn expand_counts(&self) -> Scenario {
        let mut expanded = self.clone();
        expanded.quick.clear();
        // A concrete run: overrides of it apply to it as written out.
        expanded.source = None;
        let disabled: HashSet<String> = self
            .flows
            .iter()
            .filter(|flow| !flow.enabled)
            .flat_map(instance_names)
            .collect();
        expanded.flows = self
            .flows
            .iter()
            .filter(|flow| flow.enabled)
            .flat_map(|flow| {
                instance_names(flow).into_iter().map(move |name| FlowSpec {
                    name,
                    count: None,
                    ..flow.clone()
                })
            })
            .collect();
        for marker in &mut expanded.markers {
            marker.flows = expand_flow_references(&marker.flows, &self.flows);
            marker.flows.retain(|name| !disabled.contains(name));
        }
        expanded.markers.retain(|marker| !marker.flows.is_empty());
        expanded
    }

    /// The node names, in order of first appearance in the links.
    pub fn nodes(&self) -> Vec<&str> {
        let mut nodes: Vec<&str> = Vec::new();
        for link in &self.links {
            for node in &link.between {
                if !nodes.contains(&node.as_str()) {
                    nodes.push(node);
                }
            }
        }
        nodes
    }

    /// The flow with this name (a base name, or an instance name after expansion).
    pub fn flow(&self, name: &str) -> Option<&FlowSpec> {
        self.flows.iter().find(|flow| flow.name == name)
    }

    /// The link direction `from` → `to`, if a link joins these nodes.
    pub fn link_direction(&self, from: &str, to: &str) -> Option<&crate::LinkDirectionSpec> {
        self.links.iter().find_map(|link| link.direction(from, to))
    }

    /// Seeds and bucket sizes must fit a TOML integer (they are written to files).
    fn check_integer_ranges(&self) -> Result<(), ScenarioError> {
        if self.seed > MAX_TOML_INTEGER {
            return Err(ScenarioError::invalid(
                &self.file,
                "seed",
                format!(
                    "expected a seed from 0 to {MAX_TOML_INTEGER}, got {}",
                    self.seed
                ),
            ));
        }
        if let Some(index) = self
            .markers
            .iter()
            .position(|m| m.bucket > MAX_TOML_INTEGER)
        {
            return Err(ScenarioError::invalid(
                &self.file,
                format!("marker[{index}].bucket"),
                format!("expected a bucket size of at most {MAX_TOML_INTEGER} bytes"),
            ));
        }
        Ok(())
    }

    /// Checks that every sweep path leads somewhere in this scenario's tree and names keys the
    /// format has. (Values are checked when the sweep is expanded: a value may only be valid in
    /// combination with another axis's.)
    fn check_sweep_paths(&self) -> Result<(), ScenarioError> {
        if self.sweep.is_empty() {
            return Ok(());
        }
        let mut base_table = self.source_table();
        base_table.remove("sweep");
        let tree = toml::Value::Table(base_table);
        for axis in &self.sweep {
            let key = crate::error::join_key("sweep", &axis.file_key());
            let error = |message: String| ScenarioError::invalid(&self.file, key.clone(), message);
            for choice in &axis.choices {
                let mut changed = tree.clone();
                for (path, value) in &choice.settings {
                    let segments = split_path(path).map_err(|e| error(e.message))?;
                    check_path(&tree, &segments).map_err(|e| {
                        error(format!(
                            "path {path} does not lead anywhere: {}: {}",
                            e.key, e.message
                        ))
                    })?;
                    set_path(&mut changed, &segments, value.clone()).map_err(|e| {
                        error(format!(
                            "path {path} does not lead anywhere: {}: {}",
                            e.key, e.message
                        ))
                    })?;
                }
                // Unknown keys are wrong whatever the other axes do.
                if let Err(serde_error) =
                    serde_path_to_error::deserialize::<_, RawScenario>(changed.clone())
                {
                    let found = read_error(&self.file, serde_error, &changed);
                    let message = found.message();
                    if message.starts_with("unknown key") || message.contains("is not a key of") {
                        return Err(error(format!(
                            "{}: {}",
                            found.key().unwrap_or_default(),
                            found.message()
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// An error's text without the file name (the caller's error names the file).
fn quick_message(error: &ScenarioError) -> String {
    let text = error.to_string();
    let prefix = format!("{}: ", error.file());
    text.strip_prefix(&prefix)
        .map_or(text.clone(), str::to_owned)
}

/// 1-based line and column (in characters) of byte offset `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

impl serde::Serialize for Scenario {
    /// The resolved scenario in the file's format, every default explicit (see
    /// [`Scenario::to_toml_string`]).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("duration", &crate::units::format_duration(self.duration))?;
        // TOML integers stop at i64::MAX; `Scenario::validate` reports larger values.
        map.serialize_entry("seed", &self.seed.min(MAX_TOML_INTEGER))?;
        if !self.quick.is_empty() {
            map.serialize_entry("quick", &self.quick)?;
        }
        if !self.links.is_empty() {
            map.serialize_entry("link", &self.links)?;
        }
        if !self.markers.is_empty() {
            map.serialize_entry("marker", &self.markers)?;
        }
        if !self.flows.is_empty() {
            map.serialize_entry("flow", &self.flows)?;
        }
        map.serialize_entry("output", &self.output)?;
        if !self.sweep.is_empty() {
            map.serialize_entry("sweep", &crate::sweep::sweep_to_table(&self.sweep))?;
        }
        if !self.variant.is_empty() {
            let variant: toml::Table = self
                .variant
                .iter()
                .map(|(label, value)| (label.clone(), toml::Value::String(value.clone())))
                .collect();
            map.serialize_entry("variant", &variant)?;
        }
        map.end()
    }
}
