//! The kernel-lock monitor: feeds each measured slice to the SSC controller
//! (paper 1, Algorithm 3) and, since a user-space monitor cannot act at the
//! thread's next `spin_lock()` as Algorithm 2 does, places threads itself
//! right after their slices are read: lock-intensive threads on the SSC,
//! the others on the complement (separate balancing, Sec. 3.4).

use std::collections::{BTreeMap, HashMap};

use corral_policy::placement::Placement;
use corral_policy::ssc::{
    program_key, Decision, DecisionKind, SliceObs, SscController, SscParams, ThreadAction,
    ThreadPolicyState,
};
use corral_policy::CoreId;

use super::record::SliceRecord;
use super::report::{AffinityAction, KernelReport, ThreadReport};
use crate::affinity::{get_thread_affinity, set_thread_affinity};

/// How the monitor runs.
#[derive(Clone, Debug)]
pub struct MonitorConfig {
    /// The SSC controller's parameters (paper 1's defaults).
    pub ssc: SscParams,
    /// Cores in the order they join the SSC (`Topology::ssc_order`).
    pub order: Vec<CoreId>,
    /// Set affinity; `false` only observes and decides.
    pub apply: bool,
    /// Slice shares kept per thread for the report.
    pub shares_per_thread: usize,
    /// A thread's slices shorter than this are merged with its next ones
    /// before classification. Paper 1's slices end at preemption, so they
    /// are CFS slices of milliseconds where one short wait cannot dominate;
    /// a thread that blocks often has slices of microseconds, where a single
    /// 5 us spin would pass T = 10% and classify a lock-light thread. 1 ms:
    /// under the 1.5-3 ms EEVDF base slice on small machines, so slices of
    /// CPU-bound threads pass unmerged.
    pub min_slice_ns: u64,
}

impl MonitorConfig {
    /// Paper 1's parameters over `order`, applying affinity.
    pub fn new(order: Vec<CoreId>) -> Self {
        MonitorConfig {
            ssc: SscParams {
                // Its BPF sees contended acquisitions only, so it counts no
                // progress: a first round on every core would compare
                // nothing and only delay the first placement.
                baseline_unconfined: false,
                ..SscParams::kernel()
            },
            order,
            apply: true,
            shares_per_thread: 256,
            min_slice_ns: 1_000_000,
        }
    }
}

#[derive(Debug)]
struct ThreadEntry {
    tgid: u32,
    comm: String,
    state: ThreadPolicyState,
    last_cpu: u32,
    /// Short slices waiting to be merged (see `min_slice_ns`).
    pending: Option<SliceRecord>,
    raw_slices: u64,
    slices: u64,
    slice_ns: u64,
    wait_ns: u64,
    waits: u64,
    max_share: f64,
    intensive_slices: u64,
    ever_intensive: bool,
    shares: Vec<f32>,
    /// The mask last set (or found), to change only what must change.
    mask: Option<Vec<u32>>,
    /// The mask it had when first seen, restored when the monitor stops.
    original: Option<Vec<u32>>,
    /// Where the policy placed it last.
    placed: Placement,
    gone: bool,
}

/// Drives [`SscController`] from kernel slice records and applies its
/// decisions by CPU affinity (paper 1, Algorithms 2-4, done from user space).
#[derive(Debug)]
pub struct KernelMonitor {
    cfg: MonitorConfig,
    ctrl: SscController,
    threads: BTreeMap<u32, ThreadEntry>,
    /// Each process's executable path (the program half of the key).
    programs: HashMap<u32, Vec<u8>>,
    decisions: Vec<Decision>,
    actions: Vec<AffinityAction>,
    /// When the bound last moved: slices begun earlier do not vote (Alg. 3
    /// line 12's `record_bound` check, on slices read after the fact).
    bound_changed_at: u64,
    started_at: u64,
    slices: u64,
    holds: u64,
}

/// The executable's path of process `tgid` (empty once it is gone).
fn program_of(tgid: u32) -> Vec<u8> {
    std::fs::read_link(format!("/proc/{tgid}/exe"))
        .map(|p| p.into_os_string().into_encoded_bytes())
        .unwrap_or_default()
}

fn comm_of(tgid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl KernelMonitor {
    /// A monitor starting at `now` (`CLOCK_MONOTONIC` ns).
    pub fn new(cfg: MonitorConfig, now: u64) -> Self {
        let ctrl = SscController::new(cfg.ssc, cfg.order.clone(), now);
        KernelMonitor {
            cfg,
            ctrl,
            threads: BTreeMap::new(),
            programs: HashMap::new(),
            decisions: Vec::new(),
            actions: Vec::new(),
            bound_changed_at: now,
            started_at: now,
            slices: 0,
            holds: 0,
        }
    }

    /// The controller (bound, SSC cores, votes).
    pub fn controller(&self) -> &SscController {
        &self.ctrl
    }

    /// Where the policy placed thread `tid` at the last [`Self::apply`];
    /// `None` for a thread never seen or gone.
    pub fn placement_of(&self, tid: u32) -> Option<Placement> {
        self.threads.get(&tid).filter(|t| !t.gone).map(|t| t.placed)
    }

    /// Threads classified lock intensive now.
    pub fn intensive_threads(&self) -> Vec<u32> {
        self.threads
            .iter()
            .filter(|(_, t)| t.state.is_mig.is_lock_intensive())
            .map(|(&tid, _)| tid)
            .collect()
    }

    fn note(&mut self, decision: Option<Decision>) {
        let Some(d) = decision else { return };
        if d.bound_after != d.bound_before {
            self.bound_changed_at = d.at;
        }
        // Holds are most rounds once settled: count them, keep the rest.
        if d.kind == DecisionKind::Hold {
            self.holds += 1;
        } else {
            self.decisions.push(d);
        }
    }

    /// Algorithm 3 for one slice read from the kernel.
    #[inline]
    pub fn on_slice(&mut self, rec: &SliceRecord) {
        self.slices += 1;
        let entry = match self.threads.entry(rec.tid) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let program = self
                    .programs
                    .entry(rec.tgid)
                    .or_insert_with(|| program_of(rec.tgid));
                let comm = comm_of(rec.tgid, rec.tid);
                let key = program_key(program, comm.as_bytes());
                e.insert(ThreadEntry {
                    tgid: rec.tgid,
                    comm,
                    state: self.ctrl.register_thread(key, rec.begin_ns),
                    last_cpu: rec.cpu,
                    pending: None,
                    raw_slices: 0,
                    slices: 0,
                    slice_ns: 0,
                    wait_ns: 0,
                    waits: 0,
                    max_share: 0.0,
                    intensive_slices: 0,
                    ever_intensive: false,
                    shares: Vec::new(),
                    mask: get_thread_affinity(rec.tid as i32).ok(),
                    original: get_thread_affinity(rec.tid as i32).ok(),
                    placed: Placement::Unconfined,
                    gone: false,
                })
            }
        };
        entry.raw_slices += 1;
        let end_ns = rec.end_ns();
        let merged = match entry.pending.take() {
            Some(p) => SliceRecord {
                begin_ns: p.begin_ns,
                len_ns: p.len_ns + rec.len_ns,
                wait_ns: p.wait_ns + rec.wait_ns,
                nr_waits: p.nr_waits + rec.nr_waits,
                ..*rec
            },
            None => *rec,
        };
        if merged.len_ns < self.cfg.min_slice_ns && !merged.last {
            entry.pending = Some(merged);
            return;
        }
        let rec = &merged;
        entry.state.slice_begin = rec.begin_ns;
        // A slice begun under an older bound does not vote (0 never matches).
        entry.state.record_bound = if rec.begin_ns >= self.bound_changed_at {
            self.ctrl.bound()
        } else {
            0
        };
        let obs = SliceObs {
            core: rec.cpu,
            slice_len: rec.len_ns,
            lock_wait: rec.wait_ns,
            waits: u64::from(rec.nr_waits),
            attempts: 0,
            yields: 0,
            wall_len: 0,
            realtime: false,
        };
        let out = self.ctrl.on_slice_end(&mut entry.state, obs, end_ns);
        let share = rec.wait_share();
        entry.last_cpu = rec.cpu;
        entry.slices += 1;
        entry.slice_ns += rec.len_ns;
        entry.wait_ns += rec.wait_ns;
        entry.waits += u64::from(rec.nr_waits);
        entry.max_share = entry.max_share.max(share);
        if corral_policy::detect::qualifies(
            &self.cfg.ssc.detect,
            rec.wait_ns,
            u64::from(rec.nr_waits),
            rec.len_ns,
            0,
        ) {
            entry.intensive_slices += 1;
        }
        entry.ever_intensive |= out.action == ThreadAction::Qualified;
        if entry.shares.len() < self.cfg.shares_per_thread {
            entry.shares.push(share as f32);
        }
        if rec.last && !entry.gone {
            // Exited: it no longer counts as lock intensive.
            entry.gone = true;
            self.ctrl.unregister_thread(&entry.state);
        }
        self.note(out.decision);
    }

    /// Places every live thread for the current bound (Algorithm 2, from the
    /// monitor) and fires the re-search timer; `now` in monotonic ns.
    pub fn apply(&mut self, now: u64) {
        let decision = self.ctrl.tick(now);
        self.note(decision);
        let mut loads = vec![
            0u32;
            self.cfg
                .order
                .iter()
                .map(|&c| c as usize + 1)
                .max()
                .unwrap_or(0)
        ];
        for t in self
            .threads
            .values()
            .filter(|t| !t.gone && self.ctrl.placement(&t.state) == Placement::Ssc)
        {
            if let Some(l) = loads.get_mut(t.last_cpu as usize) {
                *l += 1;
            }
        }
        let tids: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, t)| !t.gone)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in tids {
            self.place(tid, &loads, now);
        }
    }

    fn place(&mut self, tid: u32, loads: &[u32], now: u64) {
        let entry = self.threads.get_mut(&tid).expect("live thread");
        // The mask is the whole set, balanced by the kernel inside.
        let to = self
            .ctrl
            .place_from_monitor(&mut entry.state, Some(entry.last_cpu), loads, now);
        entry.placed = to;
        let mut wanted = self.ctrl.cores_of(to).to_vec();
        wanted.sort_unstable();
        if !self.cfg.apply || entry.mask.as_deref() == Some(&wanted[..]) {
            return;
        }
        let bound = self.ctrl.bound();
        match set_thread_affinity(tid as i32, &wanted) {
            Ok(()) => {
                let read_back = get_thread_affinity(tid as i32).unwrap_or_default();
                entry.mask = Some(wanted.clone());
                let at_ns = now.saturating_sub(self.started_at);
                self.actions.push(AffinityAction {
                    at_ns,
                    tid,
                    to,
                    bound,
                    requested: wanted,
                    read_back,
                });
            }
            Err(_) => {
                // Exited (ESRCH) or not ours to move: stop counting it.
                entry.gone = true;
                self.ctrl.unregister_thread(&entry.state);
            }
        }
    }

    /// Gives every live thread it moved its first-seen affinity back, so a
    /// program outliving `corral attach` is not left confined.
    pub fn restore(&mut self) {
        for (&tid, t) in self.threads.iter_mut().filter(|(_, t)| !t.gone) {
            if let Some(original) = &t.original {
                if t.mask.as_ref() != Some(original)
                    && set_thread_affinity(tid as i32, original).is_ok()
                {
                    t.mask = Some(original.clone());
                }
            }
        }
    }

    /// The report so far; `hot_locks` and `processes` are the source's.
    pub fn report(&self, now: u64, source: ReportInputs) -> KernelReport {
        let (wait, slice) = self
            .threads
            .values()
            .fold((0u64, 0u64), |(w, s), t| (w + t.wait_ns, s + t.slice_ns));
        let threads = self
            .threads
            .iter()
            .map(|(&tid, t)| ThreadReport {
                tid,
                tgid: t.tgid,
                comm: t.comm.clone(),
                slices: t.raw_slices,
                windows: t.slices,
                slice_ns: t.slice_ns,
                wait_ns: t.wait_ns,
                waits: t.waits,
                wait_share: corral_policy::detect::wait_share(t.wait_ns, t.slice_ns),
                max_slice_share: t.max_share,
                intensive_slices: t.intensive_slices,
                lock_intensive: t.ever_intensive,
                class: t.state.is_mig,
                slice_shares: t.shares.clone(),
                affinity_at_end: get_thread_affinity(tid as i32).ok(),
            })
            .collect();
        KernelReport {
            kinds: source.kinds,
            follow_forks: source.follow_forks,
            threshold: self.cfg.ssc.detect.qualify_share,
            order: self.cfg.order.clone(),
            applied: self.cfg.apply,
            duration_ns: now.saturating_sub(self.started_at),
            processes: source.processes,
            slices: self.slices,
            dropped_slices: source.dropped,
            wait_share: corral_policy::detect::wait_share(wait, slice),
            final_bound: self.ctrl.bound(),
            final_ssc: self.ctrl.ssc_cores().to_vec(),
            threads,
            decisions: self.decisions.clone(),
            holds: self.holds,
            affinity: self.actions.clone(),
            hot_locks: source.hot_locks,
        }
    }
}

/// What the report takes from the BPF source.
#[derive(Clone, Debug, Default)]
pub struct ReportInputs {
    /// Lock kinds counted.
    pub kinds: Vec<&'static str>,
    /// Whether children were tracked.
    pub follow_forks: bool,
    /// Processes tracked at the end.
    pub processes: Vec<u32>,
    /// Slices lost to a full ring.
    pub dropped: u64,
    /// The hottest locks.
    pub hot_locks: Vec<super::report::HotLock>,
}

#[cfg(test)]
mod tests;
