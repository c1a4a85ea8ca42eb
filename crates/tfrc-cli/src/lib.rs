//! The `tfrc` command's subcommands as a library: the binary (`src/main.rs`) parses the command
//! line into their argument types, and the Python package (`python/`) calls the same functions
//! (a simulation, a sweep, the reproduction), so both front ends run one implementation.

pub mod conformance;
pub mod emu;
pub mod ns2_cmd;
pub mod ns2_compare;
pub mod ns3_cmd;
pub mod plot;
pub mod reference_run;
pub mod reproduce;
pub mod rmcat;
pub mod sim;
pub mod stream;
pub mod sweep;
pub mod udp;

/// This build's version and git commit, e.g. `0.1.0 (git 1a2b3c4d5e6f)` (from `build.rs`;
/// `-dirty` when tracked files had uncommitted changes at build time).
pub const LONG_VERSION: &str = env!("TFRC_LONG_VERSION");

/// Names this build as the program writing run files (`summary.json`'s `tool`, a sweep's
/// `tool` column): `tfrc 0.1.0 (git 1a2b3c4d5e6f)`.
pub fn record_tool() {
    tfrc_output::set_tool(format!("tfrc {LONG_VERSION}"));
}

/// A file or folder of the project (`relative` to its root, e.g. `scenarios` or
/// `conformance/modern.toml`): the one in the working directory when `is_there` says it is
/// there, else the source tree's this binary was built from, so the commands' defaults work
/// from any directory of a clone.
pub fn project_path(
    relative: &str,
    is_there: impl Fn(&std::path::Path) -> bool,
) -> std::path::PathBuf {
    let local = std::path::PathBuf::from(relative);
    if is_there(&local) {
        return local;
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// Writes `rows` as a CSV file with a header row (their serde field names), creating its
/// folder; errors name the file.
pub fn write_csv<'a, T: serde::Serialize + 'a>(
    path: &std::path::Path,
    rows: impl IntoIterator<Item = &'a T>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let mut writer =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    for row in rows {
        writer
            .serialize(row)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))
}
