//! docs/architecture.md's crate graph is the workspace's: every arrow of its Mermaid block is a
//! normal dependency between workspace crates (or of the Python package on one), and every such
//! dependency is drawn. Read from `cargo metadata`, so a new dependency fails this test until
//! the document shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `cargo metadata` of the workspace whose manifest is `manifest` (its own packages only).
fn metadata(manifest: &Path) -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `(from, to)` package names of the normal path dependencies among the packages of the
/// workspace whose manifest is `manifest`.
fn workspace_edges(manifest: &Path) -> BTreeSet<(String, String)> {
    let metadata = metadata(manifest);
    let mut edges = BTreeSet::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        for dependency in package["dependencies"].as_array().unwrap() {
            let normal = dependency["kind"].is_null();
            if normal && dependency["path"].is_string() {
                let to = dependency["name"].as_str().unwrap();
                edges.insert((name.to_owned(), to.to_owned()));
            }
        }
    }
    edges
}

/// The arrows of the first Mermaid block of docs/architecture.md, by package name: a node is
/// written `alias[package]` at least once (or is its own alias); `python/ tfrc-python` is the
/// Python package `tfrc-python`.
fn documented_edges() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = text.find("```mermaid").expect("a mermaid block");
    let block = &text[start..];
    let block = &block[..block[3..].find("```").unwrap() + 3];
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut arrows = Vec::new();
    for line in block.lines().filter(|line| line.contains("-->")) {
        let mut ends = line.split("-->").map(str::trim).map(|node| {
            let alias: String = node
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            if let Some(label) = node
                .strip_prefix(alias.as_str())
                .and_then(|rest| rest.strip_prefix('['))
                .and_then(|rest| rest.strip_suffix(']'))
            {
                let package = label.rsplit(' ').next().unwrap().to_owned();
                names.insert(alias.clone(), package);
            }
            alias
        });
        let (from, to) = (ends.next().unwrap(), ends.next().unwrap());
        arrows.push((from, to));
    }
    arrows
        .into_iter()
        .map(|(from, to)| {
            let name = |alias: String| names.get(&alias).cloned().unwrap_or(alias);
            (name(from), name(to))
        })
        .collect()
}

#[test]
fn the_documented_crate_graph_is_the_workspace_graph() {
    let mut actual = workspace_edges(&root().join("Cargo.toml"));
    actual.extend(workspace_edges(&root().join("python/Cargo.toml")));
    let documented = documented_edges();
    let missing: Vec<_> = actual.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&actual).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/architecture.md's crate graph differs from Cargo.toml: not drawn {missing:?}; drawn but not a dependency {extra:?}"
    );
}

#[test]
fn only_the_command_line_depends_on_clap_or_anyhow() {
    // Library crates expose typed APIs and errors; the command line (tfrc-cli) and the Python
    // package are the edges that parse flags and report errors to a person.
    let metadata = metadata(&root().join("Cargo.toml"));
    let mut offenders = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if name == "tfrc-cli" {
            continue;
        }
        for dependency in package["dependencies"].as_array().unwrap() {
            let dependency_name = dependency["name"].as_str().unwrap();
            if dependency["kind"].is_null() && ["clap", "anyhow"].contains(&dependency_name) {
                offenders.push(format!("{name} → {dependency_name}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "library crates with CLI dependencies: {offenders:?}"
    );
}
