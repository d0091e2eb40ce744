//! `corral top`: a live view of every program running under corral (their
//! stats regions, found through `corral run`'s descriptors), refreshed every `--interval-ms`: per program its SSC size,
//! lock-intensive threads, top locks by wait with their callers, and the
//! threads' wait shares. `q` (or Esc) quits. Plain text lines: it fits an
//! 80x24 terminal over SSH.

use std::collections::HashMap;
use std::time::Duration;

use corral_runtime::stats::StatsSnapshot;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::locks::{duration, symbols::Symbolizer};
use crate::CliError;

/// Arguments of `corral top`.
#[derive(clap::Args)]
pub(crate) struct TopArgs {
    /// Refresh period in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
    pub(crate) interval_ms: u64,
    /// Locks shown per program.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) top_locks: usize,
    /// Only these programs (comma-separated pids).
    #[arg(long, value_name = "PIDS", value_delimiter = ',')]
    pub(crate) pid: Vec<i32>,
}

/// One program's stats with its name.
struct Program {
    comm: String,
    stats: StatsSnapshot,
}

/// Every program with a stats region this user may read (of `only`, if any), lowest
/// pid first.
fn programs(only: &[i32]) -> Vec<Program> {
    corral_runtime::stats::published_regions()
        .iter()
        .filter_map(|map| {
            let stats = map.snapshot();
            let pid = stats.pid;
            if !only.is_empty() && !only.contains(&pid) {
                return None;
            }
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            Some(Program {
                comm: comm.trim().to_string(),
                stats,
            })
        })
        .collect()
}

/// Names callers with each process's current maps, kept while unchanged.
#[derive(Default)]
struct Names(HashMap<i32, (String, Symbolizer)>);

impl Names {
    fn caller(&mut self, pid: i32, addr: u64) -> String {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        let entry = self
            .0
            .entry(pid)
            .or_insert_with(|| (String::new(), Symbolizer::new("")));
        if entry.0 != maps {
            *entry = (maps.clone(), Symbolizer::new(&maps));
        }
        entry.1.name(addr, true).name.unwrap_or_else(|| "?".into())
    }
}

/// The view's lines.
fn lines(progs: &[Program], names: &mut Names, top: usize) -> Vec<Line<'static>> {
    if progs.is_empty() {
        return vec![Line::from("no program is running under corral")];
    }
    let mut out = Vec::new();
    for p in progs {
        let s = &p.stats;
        out.push(Line::from(format!(
            "{} {}  SSC {}  lock-intensive {}/{} threads  rounds {}",
            s.pid,
            p.comm,
            s.ssc_bound,
            s.n_lock_intensive,
            s.threads.len(),
            s.generation
        )));
        out.push(Line::from(format!(
            "  {:>9} {:>10} {:>10}  {:<8} {:<16} caller",
            "contended", "total wait", "avg wait", "type", "lock"
        )));
        for l in s.locks.iter().take(top) {
            let caller = match l.callers.first() {
                Some(c) => names.caller(s.pid, c.addr),
                None => "?".into(),
            };
            out.push(Line::from(format!(
                "  {:>9} {:>10} {:>10}  {:<8} {:<16} {}",
                l.contended,
                duration(l.wait_ns),
                duration(l.avg_wait_ns()),
                l.kind,
                l.addr.map_or("(other)".into(), |a| format!("{a:#x}")),
                caller
            )));
        }
        let mut threads: Vec<_> = s.threads.iter().collect();
        threads.sort_by(|a, b| b.wait_share.total_cmp(&a.wait_share));
        let shares: Vec<String> = threads
            .iter()
            .take(6)
            .map(|t| format!("{}:{:.0}%", t.tid, 100.0 * t.wait_share))
            .collect();
        out.push(Line::from(format!("  wait shares {}", shares.join(" "))));
    }
    out
}

/// Runs the view until `q`.
pub(crate) fn top(args: TopArgs) -> Result<(), CliError> {
    let mut terminal = ratatui::try_init()?;
    let mut names = Names::default();
    let result = (|| -> std::io::Result<()> {
        loop {
            let view = lines(&programs(&args.pid), &mut names, args.top_locks);
            terminal.draw(|f| {
                let block = Block::bordered().title(" corral top  (q quits) ");
                f.render_widget(Paragraph::new(view).block(block), f.area());
            })?;
            if event::poll(Duration::from_millis(args.interval_ms))? {
                if let Event::Key(k) = event::read()? {
                    if k.kind == KeyEventKind::Press
                        && matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                    {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result.map_err(Into::into)
}
