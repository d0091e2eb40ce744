//! The process's threads as corral sees them: a fixed table of padded slots,
//! filled lazily when a thread first takes a lock (no `pthread_create`
//! interposition), and the per-lock-attempt hook that applies the placement
//! the monitor chose (paper 1, Algorithm 2: migration happens at a lock
//! attempt). Nothing here allocates: it runs inside interposed lock calls.

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};

use corral_locks::sys::clock::{monotonic_ns, thread_cpu_ns};
use corral_locks::wait::{clear_thread_counter, set_thread_counter};
use corral_locks::WaitCounter;
use corral_policy::placement::Placement;

use crate::cpuset::{AtomicCpuMask, CpuMask};

mod hot;

/// Capacity of the thread table. Once it is full, slots of exited threads
/// are reused; a thread that finds none runs unmanaged, its waits counted
/// as unattributed.
pub const MAX_THREADS: usize = crate::abi::DEFAULT_MAX_THREADS as usize;

/// A [`Placement`] in an atomic byte: written by the monitor, read by the
/// thread at its lock attempts.
#[derive(Debug)]
pub struct AtomicPlacement(AtomicU8);

impl AtomicPlacement {
    const fn new() -> Self {
        AtomicPlacement(AtomicU8::new(Placement::Unconfined as u8))
    }

    /// The placement stored; `Unconfined` if the byte holds no placement
    /// (never stored here).
    #[inline]
    pub fn load(&self, order: Ordering) -> Placement {
        Placement::from_u8(self.0.load(order)).unwrap_or(Placement::Unconfined)
    }

    /// Stores `p`.
    #[inline]
    pub fn store(&self, p: Placement, order: Ordering) {
        self.0.store(p.as_u8(), order);
    }
}

/// One thread's shared state. The wait counter has its own cache line
/// (written on every contended acquisition); the rest is written rarely.
#[repr(C, align(64))]
pub struct Slot {
    /// Lock waiting of this thread (paper 1's `acc_lock_time`).
    pub wait: WaitCounter,
    /// Kernel thread id; 0 until the slot is ready.
    pub tid: AtomicI32,
    /// Placement chosen by the monitor.
    pub want: AtomicPlacement,
    /// What the thread's lock attempts touch: the placement sequence it
    /// compares and the attempt count it bumps.
    pub watch: Watch,
    /// Placement the thread last applied to itself.
    pub applied: AtomicPlacement,
    /// Set by the monitor once the thread has exited.
    pub gone: AtomicBool,
    /// Sampled lock ids for the CA-Scheduler's seVector (paper 5).
    pub trail: LockTrail,
    /// When the thread took the slot (monotonic ns) and its CPU time then:
    /// its counters count from there, and so does its first accounting
    /// window where the monitor already ran (the monitor's `window_start`).
    pub registered_ns: AtomicU64,
    /// See `registered_ns`.
    pub registered_cpu_ns: AtomicU64,
}

/// Entries of a [`LockTrail`]: the monitor drains it every tick, so it
/// holds a tick of samples at about 64k sampled acquisitions per second.
pub const TRAIL_LEN: usize = 64;

/// One acquisition in [`SAMPLE_EVERY`] is recorded (chosen by a hash of the
/// thread's attempt count, so a program's own period cannot alias with it):
/// an unbiased sample, so each conVector keeps its proportions in
/// expectation; a vector takes `SAMPLE_EVERY` times more acquisitions to fill.
pub const SAMPLE_EVERY: u64 = 16;

/// A ring of the lock ids a thread acquired (sampled): written by the
/// thread alone, drained by the monitor. Its own cache lines.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct LockTrail {
    /// Entries written so far (wrapping); the newest is at `head - 1`.
    pub head: AtomicU32,
    /// Lock ids (mutex addresses), `head % TRAIL_LEN` the next to write.
    pub ids: [AtomicU64; TRAIL_LEN],
}

impl Default for LockTrail {
    fn default() -> Self {
        Self::new()
    }
}

impl LockTrail {
    /// An empty trail.
    pub const fn new() -> Self {
        LockTrail {
            head: AtomicU32::new(0),
            ids: [const { AtomicU64::new(0) }; TRAIL_LEN],
        }
    }

    /// Appends `id`. Only the owning thread writes (the preload; a test).
    #[inline]
    pub fn push(&self, id: u64) {
        // Relaxed: single writer.
        let h = self.head.load(Ordering::Relaxed);
        self.ids[h as usize % TRAIL_LEN].store(id, Ordering::Relaxed);
        // Release: the id is visible to a monitor that sees the new head.
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// Calls `f` on every id written since `seen` (at most [`TRAIL_LEN`]:
    /// older ones were overwritten, a smaller sample) and returns the new
    /// `seen`. A racing overwrite can give a newer id in an old place: one
    /// sample more of the same thread.
    pub fn drain(&self, seen: u32, mut f: impl FnMut(u64)) -> u32 {
        // Acquire: pairs with `push`'s Release.
        let head = self.head.load(Ordering::Acquire);
        let n = head.wrapping_sub(seen).min(TRAIL_LEN as u32);
        for k in head.wrapping_sub(n)..head {
            // Relaxed: ordered by the head's Acquire.
            f(self.ids[k as usize % TRAIL_LEN].load(Ordering::Relaxed));
        }
        head
    }
}

/// The two words every lock attempt of a registered thread touches.
#[derive(Debug)]
#[repr(C)]
pub struct Watch {
    /// Bumped after every change of the slot's `want` or of the set it
    /// names: the one word a thread compares at each lock attempt.
    pub placement_seq: AtomicU32,
    /// Lock attempts (every interposed lock call, contended or not): the
    /// whole-program progress the SSC search compares across bounds,
    /// including "no confinement" (K(n), paper 1 footnote 1). Written by the
    /// thread alone, read by the monitor.
    pub attempts: AtomicU64,
    /// Calls to `sched_yield` ([`on_yield`]); written and read as `attempts`.
    pub yields: AtomicU64,
}

impl Watch {
    const fn new() -> Self {
        Watch {
            placement_seq: AtomicU32::new(0),
            attempts: AtomicU64::new(0),
            yields: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("tid", &self.tid)
            .field("want", &self.want)
            .field("applied", &self.applied)
            .field("gone", &self.gone)
            .finish_non_exhaustive()
    }
}

impl Slot {
    const fn new() -> Self {
        Slot {
            wait: WaitCounter::new(),
            tid: AtomicI32::new(0),
            want: AtomicPlacement::new(),
            watch: Watch::new(),
            applied: AtomicPlacement::new(),
            gone: AtomicBool::new(false),
            trail: LockTrail::new(),
            registered_ns: AtomicU64::new(0),
            registered_cpu_ns: AtomicU64::new(0),
        }
    }
}

static SLOTS: [Slot; MAX_THREADS] = [const { Slot::new() }; MAX_THREADS];
/// Slots handed out (a prefix of the table; may exceed the capacity).
static CLAIMED: AtomicU32 = AtomicU32::new(0);
/// Whether threads apply placements (policy `lca` with a live monitor).
static MANAGED: AtomicBool = AtomicBool::new(false);
/// The SSC's CPUs.
pub static SSC_MASK: AtomicCpuMask = AtomicCpuMask::new();
/// The general CPUs (the SSC's complement, or every CPU when it is empty).
pub static GENERAL_MASK: AtomicCpuMask = AtomicCpuMask::new();
/// Spin probes of a waiter before it parks.
static SPIN_BEFORE_PARK: AtomicU32 = AtomicU32::new(crate::config::DEFAULT_SPIN_BEFORE_PARK);

/// A thread's standing in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// Has not taken a lock yet.
    Unregistered,
    /// Never managed: the monitor itself, or the table was full.
    Unmanaged,
    /// Owns this slot.
    Slot(u32),
}

/// The calling thread's view: its slot, its tid, what it applied. What a
/// lock attempt touches is apart, in [`hot::Hot`]: `watch`, the slot's
/// [`Watch`] (the thread's own `unmanaged` one when it is not managed, null
/// until registered), and `quiet`, the `applied_seq` it compares with.
struct Local {
    slot: Cell<Standing>,
    tid: Cell<i32>,
    applied_want: Cell<Placement>,
    applied_seq: Cell<u32>,
    /// The CPUs the program itself gave this thread (learnt at each move).
    own_mask: Cell<Option<CpuMask>>,
    /// The mask corral last set on this thread.
    applied_mask: Cell<Option<CpuMask>>,
    /// What an unmanaged thread watches: never bumped, so its attempts stay
    /// quiet; its own, so that counting them shares no cache line.
    unmanaged: Watch,
}

std::thread_local! {
    // Const-initialised, no destructor: first use allocates nothing.
    static LOCAL: Local = const {
        Local {
            slot: Cell::new(Standing::Unregistered),
            tid: Cell::new(0),
            applied_want: Cell::new(Placement::Unconfined),
            applied_seq: Cell::new(0),
            own_mask: Cell::new(None),
            applied_mask: Cell::new(None),
            unmanaged: Watch::new(),
        }
    };
}

/// The kernel thread id of the caller, cached per thread.
#[inline]
pub fn current_tid() -> i32 {
    LOCAL.with(|l| match l.tid.get() {
        0 => first_tid(&l.tid),
        tid => tid,
    })
}

/// [`current_tid`]'s first call on a thread: asks the kernel once.
#[cold]
#[inline(never)]
fn first_tid(cache: &Cell<i32>) -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    cache.set(tid);
    tid
}

/// Called before every lock acquisition: counts the attempt, registers the
/// thread on its first lock and applies a changed placement (Alg. 2). The
/// common case, nothing changed, costs one thread-local look-up, one
/// increment and one compare.
#[inline]
pub fn on_lock_attempt() {
    on_lock_attempt_at(0);
}

/// [`on_lock_attempt`] for the lock at `addr`, which is recorded into the
/// thread's [`LockTrail`] at one attempt in [`SAMPLE_EVERY`].
#[inline]
pub fn on_lock_attempt_at(addr: usize) {
    if !lock_attempt_quiet() {
        lock_attempt_noisy(addr);
    }
}

/// Applies a changed placement without counting an attempt: for a waiter
/// that re-checks where it belongs while it waits.
#[inline]
pub fn recheck_placement() {
    let quiet = hot::with(|h| h.watch().is_some_and(|watch| placement_applied(h, watch)));
    if !quiet {
        lock_attempt_slow(false);
    }
}

/// Whether the calling thread (`h`, its [`Watch`] `watch`) has applied its
/// slot's latest placement.
#[inline(always)]
fn placement_applied(h: &hot::Hot, watch: &Watch) -> bool {
    // Relaxed: an unchanged value guards nothing; the slow path re-reads it
    // with Acquire.
    u64::from(watch.placement_seq.load(Ordering::Relaxed)) == h.quiet.get()
}

/// The common case of a lock attempt, split from the rest so that a lock's
/// fast path stays a leaf (no call, no saved register): counts the attempt
/// and says whether nothing more is to be done. Where it says `false`, the
/// caller finishes the attempt with [`lock_attempt_noisy`].
#[inline(always)]
pub fn lock_attempt_quiet() -> bool {
    hot::with(|h| {
        let Some(watch) = h.watch() else {
            return false;
        };
        let n = bump(&watch.attempts);
        !picked(n) && placement_applied(h, watch)
    })
}

/// The rest of a lock attempt at `addr` that [`lock_attempt_quiet`] left:
/// registration on the first, the sample where one is due, a changed
/// placement.
#[cold]
#[inline(never)]
pub fn lock_attempt_noisy(addr: usize) {
    // Relaxed: this thread's own count; the quiet half counted this attempt.
    let n = hot::with(|h| {
        h.watch()
            .map(|w| w.attempts.load(Ordering::Relaxed).wrapping_sub(1))
    });
    if addr != 0 && n.is_some_and(picked) && sampling() {
        record_sample(addr as u64);
    }
    lock_attempt_slow(true);
}

/// Whether lock ids are sampled into the trails: only the CA-Scheduler
/// reads them. The flag is read only at the attempts [`picked`] names, so
/// every other policy pays one multiply and one compare, not a load.
static SAMPLING: AtomicBool = AtomicBool::new(false);

/// Turns the sampling of lock ids on (`--policy ca`, once the program has
/// `min_threads` threads) or off.
pub fn set_sampling(on: bool) {
    SAMPLING.store(on, Ordering::Relaxed); // Relaxed: a mode; late samples are harmless.
}

/// Whether lock ids are sampled now.
pub fn sampling() -> bool {
    SAMPLING.load(Ordering::Relaxed) // Relaxed: see `set_sampling`.
}

/// Whether attempt number `n` is one in [`SAMPLE_EVERY`] that is sampled
/// while [`sampling`]: a Fibonacci hash, so that the samples are not
/// periodic in `n`.
#[inline(always)]
fn picked(n: u64) -> bool {
    n.wrapping_mul(0x9e37_79b9_7f4a_7c15) < u64::MAX / SAMPLE_EVERY
}

/// A lock attempt with something to do: the first one (registration) or a
/// changed placement. `count`: a first attempt is counted here.
#[cold]
#[inline(never)]
fn lock_attempt_slow(count: bool) {
    LOCAL.with(|l| {
        let slot = match l.slot.get() {
            Standing::Slot(i) => i,
            Standing::Unregistered => match register(l) {
                Standing::Slot(i) => {
                    if count {
                        // Relaxed: see `attempt`.
                        SLOTS[i as usize]
                            .watch
                            .attempts
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    i
                }
                _ => return,
            },
            Standing::Unmanaged => return,
        };
        let s = &SLOTS[slot as usize];
        // Acquire: the placement and masks stored before the bump are
        // visible. Never bumped without a policy, so one compare suffices.
        let seq = s.watch.placement_seq.load(Ordering::Acquire);
        if seq != l.applied_seq.get() {
            migrate(l, s, seq);
        }
        hot::with(|h| h.quiet.set(u64::from(l.applied_seq.get())));
    })
}

/// Counts a `sched_yield` of the calling thread, once it is registered:
/// the policy keeps a thread that yields about as often as it locks off
/// the SSC (`corral_policy::detect::gives_core_away`).
#[inline]
pub fn on_yield() {
    hot::with(|h| {
        if let Some(watch) = h.watch() {
            bump(&watch.yields);
        }
    });
}

/// Adds one to a count of the calling thread's own [`Watch`]; returns the
/// count before.
#[inline(always)]
fn bump(count: &AtomicU64) -> u64 {
    // Relaxed load + store: this thread is the only writer, and the monitor
    // only needs an eventually-seen count.
    let n = count.load(Ordering::Relaxed);
    count.store(n.wrapping_add(1), Ordering::Relaxed);
    n
}

/// Appends `addr` to the calling thread's trail, if it owns a slot.
#[cold]
#[inline(never)]
fn record_sample(addr: u64) {
    LOCAL.with(|l| {
        if let Standing::Slot(i) = l.slot.get() {
            SLOTS[i as usize].trail.push(addr);
        }
    })
}

/// Makes the calling thread's attempts quiet for good: it is not managed.
fn set_unmanaged(l: &Local) {
    l.slot.set(Standing::Unmanaged);
    hot::with(|h| {
        h.watch.set(&l.unmanaged);
        h.quiet.set(0);
    });
}

#[cold]
#[inline(never)]
fn register(l: &Local) -> Standing {
    // Relaxed: the claim only needs to be unique.
    let claim = CLAIMED.fetch_add(1, Ordering::Relaxed);
    let index = if (claim as usize) < MAX_THREADS {
        claim as usize
    } else {
        match reuse_gone_slot() {
            Some(i) => i,
            None => {
                set_unmanaged(l);
                return Standing::Unmanaged;
            }
        }
    };
    let s = &SLOTS[index];
    s.wait.reset();
    // Relaxed: published with the tid below. The monitor counts a new
    // thread's first window from these zeros; a reused slot's old counts
    // belong to a thread it saw exit.
    s.watch.attempts.store(0, Ordering::Relaxed);
    s.watch.yields.store(0, Ordering::Relaxed);
    s.registered_ns.store(monotonic_ns(), Ordering::Relaxed);
    s.registered_cpu_ns
        .store(thread_cpu_ns(), Ordering::Relaxed);
    set_thread_counter(&s.wait);
    l.slot.set(Standing::Slot(index as u32));
    hot::with(|h| h.watch.set(&s.watch));
    // Release: the slot's other fields are initialised before the monitor
    // sees the new tid.
    s.tid.store(current_tid(), Ordering::Release);
    Standing::Slot(index as u32)
}

/// With the table full, the slot of a thread the monitor saw exit.
fn reuse_gone_slot() -> Option<usize> {
    SLOTS.iter().position(|s| {
        // Relaxed: the CAS makes the claim unique; the tid store publishes.
        s.gone
            .compare_exchange(true, false, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    })
}

#[cold]
#[inline(never)]
fn migrate(l: &Local, s: &Slot, seq: u32) {
    let want = s.want.load(Ordering::Relaxed); // Relaxed: ordered by the seq's Acquire.
    let target = match want {
        Placement::Ssc => SSC_MASK.snapshot(),
        Placement::General => GENERAL_MASK.snapshot(),
        Placement::Unconfined => CpuMask::EMPTY,
    };
    // The program's own pinning is respected: corral narrows within it and
    // gives it back when unconfined (a mask other than corral's last one is
    // the program's own choice). A refused move is not retried until the
    // placement changes again.
    if let Some(now) = CpuMask::of_thread(0) {
        let own = match (l.applied_mask.get(), l.own_mask.get()) {
            (Some(ours), Some(own)) if ours == now => own,
            _ => now,
        };
        let land = own.narrowed_to(&target);
        if land != now {
            land.apply(0);
        }
        l.own_mask.set(Some(own));
        l.applied_mask.set(Some(land));
    }
    l.applied_want.set(want);
    l.applied_seq.set(seq);
    s.applied.store(want, Ordering::Relaxed); // Relaxed: read by the monitor as a hint.
}

/// Sets the placement of slot `i`; its thread applies it at its next lock.
pub fn set_want(i: usize, want: Placement) {
    let s = &SLOTS[i];
    // Relaxed: published by the Release bump.
    if s.want.load(Ordering::Relaxed) != want {
        s.want.store(want, Ordering::Relaxed);
        s.watch.placement_seq.fetch_add(1, Ordering::Release);
    }
}

/// Slots handed out so far (capped at the capacity).
pub fn slots_in_use() -> usize {
    (CLAIMED.load(Ordering::Acquire) as usize).min(MAX_THREADS) // Acquire: pairs with nothing; cheap.
}

/// Slot `i` (below [`slots_in_use`]).
pub fn slot(i: usize) -> &'static Slot {
    &SLOTS[i]
}

/// Turns placement on or off for every thread.
pub fn set_managed(on: bool) {
    MANAGED.store(on, Ordering::Relaxed); // Relaxed: a hint read at each lock.
}

/// Whether threads apply placements now.
pub fn is_managed() -> bool {
    MANAGED.load(Ordering::Relaxed) // Relaxed: a hint.
}

/// Publishes new SSC and general sets; threads apply them at their next lock.
pub fn publish_masks(ssc: &[u32], general: &[u32]) {
    SSC_MASK.store(ssc);
    GENERAL_MASK.store(general);
    for s in &SLOTS[..slots_in_use()] {
        // Relaxed: a hint; the bump below publishes.
        if s.want.load(Ordering::Relaxed) != Placement::Unconfined {
            // Release: the masks are visible to whoever sees the bump.
            s.watch.placement_seq.fetch_add(1, Ordering::Release);
        }
    }
}

/// Whether unmanaged waiters of spinning algorithms wait as the algorithm
/// does, without bound (`--wait spin`, for study); parking otherwise.
static SPIN_UNBOUNDED: AtomicBool = AtomicBool::new(false);

/// Sets how unmanaged waiters of spinning algorithms wait.
pub fn set_waiting(waiting: crate::config::Waiting) {
    // Relaxed: a mode read at each contended wait.
    SPIN_UNBOUNDED.store(waiting == crate::config::Waiting::Spin, Ordering::Relaxed);
}

/// Whether unmanaged waiters spin without bound (`--wait spin`).
#[inline]
pub fn spins_unbounded() -> bool {
    SPIN_UNBOUNDED.load(Ordering::Relaxed) // Relaxed: see `set_waiting`.
}

/// Sets the brief spin of waiters before they park.
pub fn set_spin_before_park(spins: u32) {
    SPIN_BEFORE_PARK.store(spins, Ordering::Relaxed); // Relaxed: a tuning knob.
}

/// The brief spin of waiters before they park.
#[inline]
pub fn spin_before_park() -> u32 {
    SPIN_BEFORE_PARK.load(Ordering::Relaxed) // Relaxed: a tuning knob.
}

/// In a forked child: only the forking thread survives, with a new tid.
/// Forgets every slot, stops placement and gives the thread back the CPUs
/// it had before corral moved it. Async-signal-safe (atomics and one syscall).
pub fn reset_after_fork() {
    MANAGED.store(false, Ordering::Relaxed); // Relaxed: single-threaded here.
    let used = slots_in_use();
    for s in &SLOTS[..used] {
        s.tid.store(0, Ordering::Relaxed); // Relaxed: single-threaded here.
        s.want.store(Placement::Unconfined, Ordering::Relaxed);
        s.watch.placement_seq.store(0, Ordering::Relaxed);
        s.applied.store(Placement::Unconfined, Ordering::Relaxed);
        s.gone.store(false, Ordering::Relaxed);
        s.trail.head.store(0, Ordering::Relaxed); // Relaxed: single-threaded here.
        s.wait.reset();
    }
    CLAIMED.store(0, Ordering::Relaxed); // Relaxed: single-threaded here.
    clear_thread_counter();
    hot::with(|h| {
        h.watch.set(core::ptr::null());
        h.quiet.set(0);
    });
    LOCAL.with(|l| {
        l.slot.set(Standing::Unregistered);
        l.tid.set(0);
        l.applied_want.set(Placement::Unconfined);
        l.applied_seq.set(0);
        // The surviving thread gets back its own CPUs if corral moved it.
        if let (Some(own), Some(ours)) = (l.own_mask.take(), l.applied_mask.take()) {
            if CpuMask::of_thread(0) == Some(ours) {
                own.apply(0);
            }
        }
    });
}

/// Marks the calling thread as never managed (the monitor itself).
pub fn exclude_current_thread() {
    LOCAL.with(set_unmanaged);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_registers_once_with_its_tid() {
        let (slot_tid, tid, first, second) = std::thread::spawn(|| {
            on_lock_attempt();
            let first = LOCAL.with(|l| l.slot.get());
            on_lock_attempt();
            let second = LOCAL.with(|l| l.slot.get());
            let Standing::Slot(i) = first else {
                panic!("not registered: {first:?}")
            };
            (
                slot(i as usize).tid.load(Ordering::Acquire),
                current_tid(),
                first,
                second,
            )
        })
        .join()
        .unwrap();
        assert_eq!(slot_tid, tid);
        assert_eq!(first, second, "registered once");
    }

    #[test]
    fn an_excluded_thread_takes_no_slot() {
        let (standing, in_table, confined) = std::thread::spawn(|| {
            exclude_current_thread();
            on_lock_attempt();
            let confined = LOCAL.with(|l| l.applied_want.get()) == Placement::Ssc;
            // Other tests register threads meanwhile; none of the slots is
            // this one's (checked while it lives, so its tid is not reused).
            let tid = current_tid();
            let in_table = (0..slots_in_use()).any(|i| slot(i).tid.load(Ordering::Acquire) == tid);
            (LOCAL.with(|l| l.slot.get()), in_table, confined)
        })
        .join()
        .unwrap();
        assert!(!confined);
        assert_eq!(standing, Standing::Unmanaged);
        assert!(!in_table);
    }
}
