//! The space's C program: built from the source in the repository
//! (`crates/corral-bench/c/space.c`, carried in the binary) into a private
//! scratch directory, and one run of it under a column.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use corral_launch::launch::Output;
use corral_launch::CliError;
use corral_runtime::config::RuntimeConfig;

use super::point::Point;
use super::report::{Arm, Run};
use crate::limited::launch_limited;

/// The program's source.
const SOURCE: &str = include_str!("../../c/space.c");

/// The built program, removed with its directory when dropped.
#[derive(Debug)]
pub(crate) struct Program {
    dir: PathBuf,
    exe: PathBuf,
}

impl Program {
    /// Compiles the program with the system's C compiler (`$CC` or `cc`)
    /// in a new directory of `base` that only this user can write.
    pub(crate) fn build(base: &Path) -> Result<Program, CliError> {
        corral_runtime::files::remove_stale_scratch(base, "corral-bench-space.");
        let dir = base.join(format!("corral-bench-space.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir)
            .map_err(|e| CliError(format!("bench space: {}: {e}", dir.display())))?;
        let program = Program {
            exe: dir.join("space"),
            dir,
        };
        let src = program.dir.join("space.c");
        std::fs::write(&src, SOURCE)?;
        let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let out = Command::new(&cc)
            .args(["-O2", "-pthread", "-o"])
            .arg(&program.exe)
            .arg(&src)
            .output()
            .map_err(|e| {
                CliError(format!(
                    "bench space builds its program with a C compiler: '{}': {e} (install gcc, or set CC)",
                    cc.to_string_lossy()
                ))
            })?;
        if !out.status.success() {
            return Err(CliError(format!(
                "bench space: {} could not build its program: {}",
                cc.to_string_lossy(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(program)
    }

    /// The program's command line for `point`, run for `duration_ms`.
    pub(crate) fn argv(&self, point: &Point, duration_ms: u64) -> Vec<OsString> {
        vec![
            self.exe.clone().into(),
            format!("{point},duration-ms={duration_ms}").into(),
        ]
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads the program's `ops=N seconds=S` line.
pub(crate) fn parse_done(stdout: &[u8]) -> Option<(u64, f64)> {
    let text = std::str::from_utf8(stdout).ok()?;
    let line = text.lines().rev().find(|l| l.starts_with("ops="))?;
    let mut ops = None;
    let mut seconds = None;
    for part in line.split_whitespace() {
        match part.split_once('=') {
            Some(("ops", v)) => ops = v.parse().ok(),
            Some(("seconds", v)) => seconds = v.parse::<f64>().ok().filter(|s| *s > 0.0),
            _ => {}
        }
    }
    Some((ops?, seconds?))
}

/// What every run of one `bench space` needs.
#[derive(Debug)]
pub(crate) struct Runner<'a> {
    /// The built program.
    pub(crate) program: &'a Program,
    /// corral's preload library.
    pub(crate) preload: &'a Path,
    /// Each run's length, ms.
    pub(crate) duration_ms: u64,
}

impl Runner<'_> {
    /// One run of `point` under `arm`.
    pub(crate) fn run(&self, point: &Point, arm: &Arm) -> Result<Run, CliError> {
        let argv = self.program.argv(point, self.duration_ms);
        let (cfg, lib, argv) = match arm {
            Arm::Glibc | Arm::GlibcAgain => (RuntimeConfig::default(), None, argv),
            Arm::Default => (RuntimeConfig::default(), Some(self.preload), argv),
            Arm::Peer(p) => (RuntimeConfig::default(), None, p.wrap(argv)),
        };
        // A run that takes ten times its length and 5 s more is stuck.
        let limit = Duration::from_millis(self.duration_ms * 10 + 5_000);
        let (outcome, stdout, killed) = launch_limited(&cfg, lib, &argv, Output::Capture, limit)?;
        let mut run = Run {
            rate: None,
            ops: 0,
            ssc_bound: outcome.stats.map(|s| s.ssc_bound),
            cpu_s: outcome.cpu.as_secs_f64(),
            wall_s: outcome.wall.as_secs_f64(),
            failed: None,
        };
        if killed {
            run.failed = Some(format!("killed after {} s", limit.as_secs()));
            return Ok(run);
        }
        if let Some(sig) = outcome.status.signal() {
            if [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].contains(&sig) {
                return Err(CliError("interrupted".into()));
            }
        }
        match (outcome.status.success(), parse_done(&stdout)) {
            (true, Some((ops, seconds))) => {
                run.rate = Some(ops as f64 / seconds);
                run.ops = ops;
            }
            _ => run.failed = Some(format!("{} without an ops= line", outcome.status)),
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_done_line_is_read_and_anything_else_refused() {
        assert_eq!(
            parse_done(b"ops=1200 seconds=0.300000\n"),
            Some((1200, 0.3))
        );
        assert_eq!(parse_done(b"junk\nops=5 seconds=0.5\n"), Some((5, 0.5)));
        assert_eq!(parse_done(b"ops=5\n"), None);
        assert_eq!(parse_done(b"ops=5 seconds=0\n"), None);
        assert_eq!(parse_done(b""), None);
    }
}
