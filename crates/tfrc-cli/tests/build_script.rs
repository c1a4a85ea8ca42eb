//! The build script (`build.rs`, which records the git commit for `tfrc --version`) must only
//! watch files that exist: Cargo counts a missing watched file as changed, so such a watch
//! reruns the script and relinks `tfrc` on every build of an unchanged checkout.

use std::path::Path;

/// Cargo writes what the build script printed to `OUT_DIR/../output`.
fn build_script_output() -> String {
    let out_dir = Path::new(env!("OUT_DIR"));
    let path = out_dir
        .parent()
        .expect("OUT_DIR has a parent")
        .join("output");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
}

#[test]
fn every_watched_file_exists() {
    let output = build_script_output();
    let watched: Vec<&str> = output
        .lines()
        .filter_map(|line| line.strip_prefix("cargo:rerun-if-changed="))
        .collect();
    assert!(
        watched.contains(&"build.rs"),
        "the script watches itself: {output}"
    );
    for path in watched {
        let path = if Path::new(path).is_absolute() {
            Path::new(path).to_path_buf()
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
        };
        assert!(
            path.exists(),
            "build.rs watches {}, which does not exist: Cargo would rerun it on every build",
            path.display()
        );
    }
}

#[test]
fn a_checkout_records_its_commit() {
    let output = build_script_output();
    let version = output
        .lines()
        .find_map(|line| line.strip_prefix("cargo:rustc-env=TFRC_LONG_VERSION="))
        .expect("the script sets TFRC_LONG_VERSION");
    assert!(version.starts_with(env!("CARGO_PKG_VERSION")), "{version}");
    // In a git checkout HEAD is watched, so that a new commit rebuilds the version string.
    if !version.ends_with("(git unknown)") {
        assert!(
            output
                .lines()
                .any(|line| line.starts_with("cargo:rerun-if-changed=") && line.ends_with("HEAD")),
            "{output}"
        );
    }
}
