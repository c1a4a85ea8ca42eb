//! Records the git commit the binary is built from, for `tfrc --version`: `0.1.0 (git
//! 1a2b3c4d5e6f)`, with `-dirty` when tracked files had uncommitted changes at build time, or
//! `(git unknown)` outside a git checkout (a source tarball) or without git. Rebuilt when HEAD
//! moves; editing files without committing does not rerun it (the index is not watched, since
//! `git status` itself rewrites it).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8(output.stdout).ok()?.trim().to_owned())
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
    // A new commit or checkout changes HEAD or the ref it points to.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let git_dir = Path::new(&git_dir);
        for file in ["HEAD", "packed-refs"] {
            println!("cargo:rerun-if-changed={}", git_dir.join(file).display());
        }
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!(
                "cargo:rerun-if-changed={}",
                git_dir.join(reference).display()
            );
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
