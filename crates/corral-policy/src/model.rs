//! Analytic lock models: the Markov model of a ticket spin lock (paper 3,
//! Sec. 3.2, eq. 1), its constant-handoff (MCS-like) counterpart, and
//! paper 1's normalised throughput T(n) = n(1 - p(n)).
//!
//! The chain is a closed birth-death process. State k (0..=n) counts the cores
//! holding or waiting for the lock. Arrivals leave state k at rate (n-k)/a.
//! Eq. 1 as printed weights state k by prod_{i=1}^{k}(s + i c), i.e. leaving
//! state k downwards takes `service_time(k) = s + k c`: the serial section
//! plus one directory response per contending core. (The paper's prose gives
//! `s + c k/2` with k the number of requesters; eq. 1 folds the halving into
//! c.) The simulator must use [`TicketModel::service_time`] to be comparable.
//!
//! Everything is computed in log space (ratios of consecutive weights, then
//! log-sum-exp), so n up to many thousands neither overflows nor yields NaN.

use serde::Serialize;

/// Parameters are clamped into `[PARAM_FLOOR, PARAM_CEIL]` (time `a`) or
/// `[0, PARAM_CEIL]` (`s`, `c`); NaN becomes the lower bound. The ceiling keeps
/// `s + n c` finite for any `u32` core count.
const PARAM_CEIL: f64 = 1e300;
/// Smallest non-serial time accepted, so that `ln a` stays finite.
const PARAM_FLOOR: f64 = 1e-300;

/// A lock model whose chain is fully described by its per-state service time.
pub trait LockModel {
    /// Average non-serial time between a core's lock acquisitions (cycles).
    fn non_serial(&self) -> f64;
    /// Mean time to leave state `k >= 1` (serial section plus handoff).
    fn service_time(&self, k: u32) -> f64;
}

/// Markov model of a ticket spin lock, paper 3 (Boyd-Wickizer et al.,
/// "Non-scalable locks are dangerous", Sec. 3.2, Fig. 7, eq. 1).
///
/// All three parameters are in cycles. The paper publishes no value for `c`;
/// Fig. 8 fixes `s = 400` and varies `a` from 12,500 to 200,000.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TicketModel {
    /// Non-serial time between acquisitions on one core.
    pub a: f64,
    /// Serial (critical) section time.
    pub s: f64,
    /// Handoff cost per contending core (home-directory response time).
    pub c: f64,
}

/// A scalable (MCS-like) lock under the same chain: each handoff costs a
/// constant `c`, independent of the number of waiters (paper 3, Sec. 4.1:
/// "a constant number of cache misses per acquisition").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct McsModel {
    /// Non-serial time between acquisitions on one core.
    pub a: f64,
    /// Serial (critical) section time.
    pub s: f64,
    /// Constant handoff cost per acquisition.
    pub c: f64,
}

/// One point of a predicted speedup curve; a reported figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelPoint {
    /// Number of cores.
    pub cores: u32,
    /// Predicted speedup (cores doing useful work on average).
    pub speedup: f64,
}

#[inline]
fn clamp_param(x: f64, lo: f64) -> f64 {
    if x.is_nan() {
        lo
    } else {
        x.clamp(lo, PARAM_CEIL)
    }
}

impl LockModel for TicketModel {
    #[inline]
    fn non_serial(&self) -> f64 {
        clamp_param(self.a, PARAM_FLOOR)
    }
    #[inline]
    fn service_time(&self, k: u32) -> f64 {
        clamp_param(self.s, 0.0) + f64::from(k) * clamp_param(self.c, 0.0)
    }
}

impl LockModel for McsModel {
    #[inline]
    fn non_serial(&self) -> f64 {
        clamp_param(self.a, PARAM_FLOOR)
    }
    #[inline]
    fn service_time(&self, _k: u32) -> f64 {
        clamp_param(self.s, 0.0) + clamp_param(self.c, 0.0)
    }
}

/// Log of the unnormalised weight of each state, relative to state 0, fed to
/// `visit(k, log_w)` in order. Uses w_k / w_{k-1} = (n-k+1) t(k) / a, which is
/// eq. 1 with the common factor n! removed.
#[inline]
fn for_each_log_weight<M: LockModel + ?Sized>(model: &M, n: u32, mut visit: impl FnMut(u32, f64)) {
    let ln_a = model.non_serial().ln();
    let mut log_w = 0.0;
    visit(0, log_w);
    for k in 1..=n {
        // ln(0) = -inf when s = c = 0: the state is unreachable, weight 0.
        log_w += f64::from(n - k + 1).ln() + model.service_time(k).ln() - ln_a;
        visit(k, log_w);
    }
}

/// Mean number of cores holding or waiting, `w = sum k P_k`, by log-sum-exp.
fn mean_in_lock<M: LockModel + ?Sized>(model: &M, n: u32) -> f64 {
    let mut max = f64::NEG_INFINITY;
    for_each_log_weight(model, n, |_, lw| max = max.max(lw));
    let (mut total, mut weighted) = (0.0, 0.0);
    for_each_log_weight(model, n, |k, lw| {
        let w = (lw - max).exp();
        total += w;
        weighted += f64::from(k) * w;
    });
    // total >= 1: the maximal state contributes exp(0).
    weighted / total
}

fn fill_distribution<M: LockModel + ?Sized>(model: &M, n: u32, out: &mut Vec<f64>) {
    out.clear();
    out.reserve(n as usize + 1);
    for_each_log_weight(model, n, |_, lw| out.push(lw));
    let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for p in out.iter_mut() {
        *p = (*p - max).exp();
        total += *p;
    }
    for p in out.iter_mut() {
        *p /= total;
    }
}

macro_rules! chain_methods {
    ($ty:ty) => {
        impl $ty {
            /// Predicted speedup on `n` cores: `n - w` (paper 3, Sec. 3.2).
            #[inline]
            pub fn speedup(&self, n: u32) -> f64 {
                (f64::from(n) - mean_in_lock(self, n)).max(0.0)
            }
            /// Mean number of cores holding or waiting: `sum k P_k`.
            #[inline]
            pub fn mean_waiters(&self, n: u32) -> f64 {
                mean_in_lock(self, n)
            }
            /// Steady-state `P_0..=P_n` into `out` (cleared first; the only
            /// allocation is growing the caller's vector).
            pub fn distribution(&self, n: u32, out: &mut Vec<f64>) {
                fill_distribution(self, n, out)
            }
            /// Mean time to leave state `k` (see the module docs).
            #[inline]
            pub fn service_time(&self, k: u32) -> f64 {
                LockModel::service_time(self, k)
            }
        }
    };
}

chain_methods!(TicketModel);
chain_methods!(McsModel);

/// Speedup curve for `1..=max_cores` (allocates the result; not a hot path).
pub fn curve<M: LockModel>(model: &M, max_cores: u32) -> Vec<ModelPoint> {
    (1..=max_cores)
        .map(|cores| ModelPoint {
            cores,
            speedup: (f64::from(cores) - mean_in_lock(model, cores)).max(0.0),
        })
        .collect()
}

/// Paper 1's normalised throughput of the lock-intensive tasks on `n` SSC
/// cores, `T(n) = n (1 - p(n))` (Cui et al., Sec. 3.3, eq. 2), where `p` is the
/// average lock-waiting share, clamped to `[0, 1]` (NaN counts as 1).
#[inline]
pub fn normalised_throughput(n: u32, p: f64) -> f64 {
    let p = if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) };
    f64::from(n) * (1.0 - p)
}

/// The point with the highest speedup; the fewest cores wins a tie. NaN
/// speedups are skipped.
pub fn peak(points: &[ModelPoint]) -> Option<&ModelPoint> {
    points
        .iter()
        .filter(|p| !p.speedup.is_nan())
        .fold(None, |best: Option<&ModelPoint>, p| match best {
            Some(b) if b.speedup >= p.speedup => Some(b),
            _ => Some(p),
        })
}
