//! The shipped ns-3 program (`ns3/tfrc-ns3.cc`): its source, embedded in the binary, and its
//! build, once per source version, into a cache directory that later runs reuse.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::Ns3Error;

/// The program's source, embedded so that an installed `tfrc` binary can still build it.
pub const PROGRAM_SOURCE: &str = include_str!("../ns3/tfrc-ns3.cc");

/// The ns-3 modules the program links against (their pkg-config names).
pub const NS3_MODULES: [&str; 6] = [
    "ns3-core",
    "ns3-network",
    "ns3-internet",
    "ns3-point-to-point",
    "ns3-traffic-control",
    "ns3-applications",
];

/// How to build the program.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The C++ compiler (default `g++`, looked up on the `PATH`).
    pub cxx: PathBuf,
    /// `pkg-config` (default `pkg-config` on the `PATH`).
    pub pkg_config: PathBuf,
    /// Where built programs are kept (default [`default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            cxx: PathBuf::from("g++"),
            pkg_config: PathBuf::from("pkg-config"),
            cache_dir: None,
        }
    }
}

/// The cache directory: `$XDG_CACHE_HOME/tfrc`, else `~/.cache/tfrc`, else `tfrc-cache` in the
/// system's temporary directory.
pub fn default_cache_dir() -> PathBuf {
    let from_env = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    if let Some(cache) = from_env("XDG_CACHE_HOME") {
        return cache.join("tfrc");
    }
    if let Some(home) = from_env("HOME") {
        return home.join(".cache").join("tfrc");
    }
    std::env::temp_dir().join("tfrc-cache")
}

/// A built program and whether this call compiled it.
#[derive(Debug, Clone)]
pub struct Program {
    /// The executable.
    pub path: PathBuf,
    /// Wall time of the compilation, `None` when a cached build was reused.
    pub compile_time: Option<core::time::Duration>,
}

/// 64-bit FNV-1a of `text`: a stable key (unlike std's hasher, fixed across Rust releases).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The compiler and linker flags of the ns-3 modules, from pkg-config.
///
/// Debian's libns3-dev 3.37 names `/usr/lib/x86_64-linux-gnu/libgsl.so` in `ns3-core.pc`
/// without depending on libgsl-dev, and writes `-I/usr;` into its Cflags: absolute paths that
/// do not exist are left out (libns3-core.so links GSL itself), as are include directories
/// that do not exist.
pub fn ns3_flags(pkg_config: &Path) -> Result<Vec<String>, Ns3Error> {
    let run = |arguments: &[&str]| {
        Command::new(pkg_config)
            .args(arguments)
            .output()
            .map_err(|source| Ns3Error::PkgConfigNotFound {
                path: pkg_config.to_path_buf(),
                source,
            })
    };
    for module in NS3_MODULES {
        if !run(&["--exists", module])?.status.success() {
            return Err(Ns3Error::Ns3NotInstalled {
                module: module.to_owned(),
            });
        }
    }
    let mut arguments = vec!["--cflags", "--libs"];
    arguments.extend(NS3_MODULES);
    let output = run(&arguments)?;
    if !output.status.success() {
        return Err(Ns3Error::Ns3NotInstalled {
            module: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    Ok(text
        .split_whitespace()
        .filter(|flag| {
            let path = flag.strip_prefix("-I").unwrap_or(flag);
            !path.starts_with('/') || Path::new(path).exists()
        })
        .map(str::to_owned)
        .collect())
}

/// Builds the program (or reuses the cached build of the same source and flags) and returns
/// its path. The build goes to `<cache>/ns3-<hash>/tfrc-ns3`, written under a name of its own
/// process and renamed, so concurrent runs never see (nor run) half a binary.
pub fn build_program(options: &BuildOptions) -> Result<Program, Ns3Error> {
    // One build at a time in this process: threads asking together wait for the first
    // build and reuse it (a poisoned lock only means another build failed).
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _building = BUILDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let flags = ns3_flags(&options.pkg_config)?;
    let key = fnv1a(&format!(
        "{PROGRAM_SOURCE}\n{}\n{}",
        options.cxx.display(),
        flags.join(" ")
    ));
    let directory = cache_directory(options, &format!("ns3-{key:016x}"))?;
    let program = directory.join("tfrc-ns3");
    if program.is_file() {
        return Ok(Program {
            path: program,
            compile_time: None,
        });
    }
    let started = std::time::Instant::now();
    compile(&options.cxx, &flags, &directory, &program)?;
    Ok(Program {
        path: program,
        compile_time: Some(started.elapsed()),
    })
}

/// The directory `name` of the cache, created: in `options.cache_dir`, else in
/// [`default_cache_dir`], else (that one cannot be created, a read-only home) in the system's
/// temporary directory. A cached build in the default directory is found before anything is
/// created.
fn cache_directory(options: &BuildOptions, name: &str) -> Result<PathBuf, Ns3Error> {
    let directory = match &options.cache_dir {
        Some(cache) => cache.join(name),
        None => default_cache_dir().join(name),
    };
    match std::fs::create_dir_all(&directory) {
        Ok(()) => Ok(directory),
        Err(_) if options.cache_dir.is_none() => {
            let fallback = std::env::temp_dir().join("tfrc-cache").join(name);
            std::fs::create_dir_all(&fallback)
                .map_err(|source| Ns3Error::io(fallback.clone(), source))?;
            Ok(fallback)
        }
        Err(source) => Err(Ns3Error::io(directory, source)),
    }
}

/// Compiles the embedded source, written into `directory`, into `program`.
fn compile(cxx: &Path, flags: &[String], directory: &Path, program: &Path) -> Result<(), Ns3Error> {
    let source_path = directory.join("tfrc-ns3.cc");
    std::fs::write(&source_path, PROGRAM_SOURCE)
        .map_err(|source| Ns3Error::io(source_path.clone(), source))?;
    // A name of this process's own: other processes may build the same program at once.
    let partial = directory.join(format!("tfrc-ns3.partial.{}", std::process::id()));
    let output = Command::new(cxx)
        .args(["-O2", "-std=c++17", "-o"])
        .arg(&partial)
        .arg(&source_path)
        .args(flags)
        .output()
        .map_err(|source| Ns3Error::CompilerNotFound {
            cxx: cxx.to_path_buf(),
            source,
        })?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(Ns3Error::CompileFailed {
            source_path,
            status: output.status.to_string(),
            stderr_tail: crate::run::tail(&String::from_utf8_lossy(&output.stderr), 20),
        });
    }
    std::fs::rename(&partial, program).map_err(|source| Ns3Error::io(program.to_path_buf(), source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_is_fnv1a() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_compile_error_returns_the_compilers_output() {
        let directory = std::env::temp_dir().join(format!("tfrc-ns3-unit-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let program = directory.join("tfrc-ns3");
        // `false` as the compiler fails: the error carries its exit status.
        let error = compile(Path::new("false"), &[], &directory, &program).expect_err("fails");
        assert!(
            matches!(&error, Ns3Error::CompileFailed { status, .. } if status.contains('1')),
            "{error}"
        );
        let error = compile(Path::new("/nonexistent/g++"), &[], &directory, &program)
            .expect_err("no compiler");
        assert!(error.to_string().contains("/nonexistent/g++"), "{error}");
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[test]
    fn a_missing_compiler_or_pkg_config_is_an_error_naming_it() {
        let options = BuildOptions {
            pkg_config: PathBuf::from("/nonexistent/pkg-config"),
            ..BuildOptions::default()
        };
        let error = build_program(&options).expect_err("no pkg-config");
        assert!(matches!(error, Ns3Error::PkgConfigNotFound { .. }));
        assert!(error.to_string().contains("/nonexistent/pkg-config"));
    }
}
