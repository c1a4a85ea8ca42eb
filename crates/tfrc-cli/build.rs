//! Records the git commit the binary is built from, for `tfrc --version`: `0.1.0 (git
//! 1a2b3c4d5e6f)`, with `-dirty` when tracked files had uncommitted changes at build time, or
//! `(git unknown)` outside a git checkout (a source tarball) or without git. Rebuilt when HEAD
//! moves; editing files without committing does not rerun it (the index is not watched, since
//! `git status` itself rewrites it).
//!
//! Only files that exist are watched: Cargo treats a missing watched file as always stale, so
//! watching `packed-refs` in a checkout that has none (no `git gc` yet) reran this script and
//! relinked `tfrc` on every build. `tests/build_script.rs` checks the watched paths exist.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8(output.stdout).ok()?.trim().to_owned())
}

/// The git files whose change means a new commit or checkout: HEAD, the ref it points to and
/// `packed-refs`, each only if it exists (a worktree's HEAD and the shared refs are found
/// through `git rev-parse --git-path`).
fn watched_git_files() -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        names.push(reference);
    }
    names
        .iter()
        .filter_map(|name| git(&["rev-parse", "--path-format=absolute", "--git-path", name]))
        .map(PathBuf::from)
        .filter(|path| path.is_file())
        .collect()
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    let described = match commit {
        Some(commit) if dirty => format!("{commit}-dirty"),
        Some(commit) => commit,
        None => "unknown".to_owned(),
    };
    println!(
        "cargo:rustc-env=TFRC_LONG_VERSION={} (git {described})",
        env!("CARGO_PKG_VERSION")
    );
    for file in watched_git_files() {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
