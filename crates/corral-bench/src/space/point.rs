//! A point of the workload space, its printed form, and the sampler that
//! draws points from a seed.
//!
//! The printed form is what the program takes and what a user replays:
//! `threads=8,locks=4,skew=0.50,cs-ns=1200,out-ns=300,inside=yield,kind=rwlock,read-share=0.80`.
//! Every value is kept as it prints (whole nanoseconds, shares in
//! hundredths), so a point parsed from its printed form is the same point.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// What a critical section does besides its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Inside {
    /// Only its `cs-ns` of work.
    None,
    /// Its work, then `sched_yield`: the holder gives its CPU away.
    Yield,
    /// A `nanosleep` of `cs-ns` instead of work (50 us or more: the
    /// kernel's timer slack): the holder blocks.
    Sleep,
    /// Its work and a 64-byte `read` of `/dev/zero`.
    Syscall,
    /// Its work and a `malloc`, touch and `free` of 64 B to 4 KiB.
    Alloc,
}

/// How the threads use their locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// `pthread_mutex_lock`.
    Mutex,
    /// `pthread_rwlock_rdlock` with probability `read-share`, else the
    /// write lock.
    Rwlock,
    /// A bounded queue per lock, a mutex and two condition variables;
    /// threads in producer and consumer pairs.
    Condvar,
}

impl Inside {
    const ALL: [Inside; 5] = [
        Inside::None,
        Inside::Yield,
        Inside::Sleep,
        Inside::Syscall,
        Inside::Alloc,
    ];

    fn name(self) -> &'static str {
        match self {
            Inside::None => "none",
            Inside::Yield => "yield",
            Inside::Sleep => "sleep",
            Inside::Syscall => "syscall",
            Inside::Alloc => "alloc",
        }
    }
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Mutex, Kind::Rwlock, Kind::Condvar];

    fn name(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Rwlock => "rwlock",
            Kind::Condvar => "condvar",
        }
    }
}

/// One workload: the program's whole configuration but its duration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct Point {
    /// Threads, 1-64.
    pub(crate) threads: u32,
    /// Locks, 1-64.
    pub(crate) locks: u32,
    /// The share of acquisitions that go to lock 0, in hundredths (the rest
    /// are uniform over all locks): 0 is uniform, 100 one hot lock.
    pub(crate) skew_pct: u32,
    /// Work inside the critical section, ns.
    pub(crate) cs_ns: u64,
    /// Work between critical sections, ns.
    pub(crate) out_ns: u64,
    /// What the critical section does besides its work.
    pub(crate) inside: Inside,
    /// Mutex, rwlock or condition-variable hand-off.
    pub(crate) kind: Kind,
    /// With [`Kind::Rwlock`], the share of read locks in hundredths
    /// (0 otherwise).
    pub(crate) read_pct: u32,
}

/// The space's ranges.
pub(crate) const MAX_THREADS: u32 = 64;
/// Most locks a point has.
pub(crate) const MAX_LOCKS: u32 = 64;
/// Shortest and longest critical section, ns.
pub(crate) const CS_NS: (u64, u64) = (10, 100_000);
/// Longest work outside, ns (the shortest is 0).
pub(crate) const OUT_NS_MAX: u64 = 100_000;
/// The share of points with no work outside the critical section.
const NO_OUT_SHARE: f64 = 0.15;

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threads={},locks={},skew={},cs-ns={},out-ns={},inside={},kind={},read-share={}",
            self.threads,
            self.locks,
            Hundredths(self.skew_pct),
            self.cs_ns,
            self.out_ns,
            self.inside.name(),
            self.kind.name(),
            Hundredths(self.read_pct),
        )
    }
}

/// A share in hundredths, printed as `0.35`.
struct Hundredths(u32);

impl fmt::Display for Hundredths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// Why a printed point does not parse: the part and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PointError(pub String);

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PointError {}

fn whole<T: FromStr + PartialOrd + fmt::Display>(
    key: &str,
    v: &str,
    lo: T,
    hi: T,
) -> Result<T, PointError> {
    match v.parse::<T>() {
        Ok(n) if n >= lo && n <= hi => Ok(n),
        _ => Err(PointError(format!(
            "{key}={v}: expected a whole number from {lo} to {hi}"
        ))),
    }
}

/// `0.35` as 35 hundredths; at most two decimals, from 0 to 1.
fn hundredths(key: &str, v: &str) -> Result<u32, PointError> {
    let bad = || {
        PointError(format!(
            "{key}={v}: expected a share from 0 to 1 (two decimals at most)"
        ))
    };
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 2
        || int.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let int: u32 = int.parse().map_err(|_| bad())?;
    let frac: u32 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    let pct = int.checked_mul(100).ok_or_else(bad)? + frac;
    if pct > 100 {
        return Err(bad());
    }
    Ok(pct)
}

impl FromStr for Point {
    type Err = PointError;

    /// Parses the printed form; every key must be there once.
    fn from_str(s: &str) -> Result<Point, PointError> {
        let mut seen = Vec::new();
        let mut p = Point {
            threads: 1,
            locks: 1,
            skew_pct: 0,
            cs_ns: 0,
            out_ns: 0,
            inside: Inside::None,
            kind: Kind::Mutex,
            read_pct: 0,
        };
        for part in s.trim().split(',') {
            let (key, v) = part
                .split_once('=')
                .ok_or_else(|| PointError(format!("'{part}': expected key=value")))?;
            if seen.contains(&key) {
                return Err(PointError(format!("{key} is given twice")));
            }
            seen.push(key);
            match key {
                "threads" => p.threads = whole(key, v, 1, MAX_THREADS)?,
                "locks" => p.locks = whole(key, v, 1, MAX_LOCKS)?,
                "skew" => p.skew_pct = hundredths(key, v)?,
                "cs-ns" => p.cs_ns = whole(key, v, 0, 1_000_000_000)?,
                "out-ns" => p.out_ns = whole(key, v, 0, 1_000_000_000)?,
                "read-share" => p.read_pct = hundredths(key, v)?,
                "inside" => {
                    p.inside = *Inside::ALL.iter().find(|i| i.name() == v).ok_or_else(|| {
                        PointError(format!(
                            "inside={v}: expected none, yield, sleep, syscall or alloc"
                        ))
                    })?
                }
                "kind" => {
                    p.kind = *Kind::ALL.iter().find(|k| k.name() == v).ok_or_else(|| {
                        PointError(format!("kind={v}: expected mutex, rwlock or condvar"))
                    })?
                }
                _ => {
                    return Err(PointError(format!(
                        "unknown key '{key}' (threads, locks, skew, cs-ns, out-ns, inside, kind, read-share)"
                    )))
                }
            }
        }
        const KEYS: [&str; 8] = [
            "threads",
            "locks",
            "skew",
            "cs-ns",
            "out-ns",
            "inside",
            "kind",
            "read-share",
        ];
        if let Some(missing) = KEYS.iter().find(|k| !seen.contains(k)) {
            return Err(PointError(format!("{missing} is missing")));
        }
        Ok(p)
    }
}

/// splitmix64 (Steele, Lea and Flood): a small generator whose stream for
/// a seed never changes with a crate's version.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    /// The stream of `seed`.
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Dimensions the sampler stratifies.
const DIMS: usize = 8;

/// `n` points from `seed` by Latin hypercube sampling: each dimension is
/// cut into `n` equal strata and every stratum gets exactly one point, so
/// even 20 points cover every range end to end (plain random draws leave
/// gaps), while which values go together is random.
pub(crate) fn sample(n: usize, seed: u64) -> Vec<Point> {
    let mut rng = SplitMix::new(seed);
    // One permutation of the strata per dimension (Fisher-Yates).
    let strata: Vec<Vec<usize>> = (0..DIMS)
        .map(|_| {
            let mut perm: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                perm.swap(i, rng.below(i + 1));
            }
            perm
        })
        .collect();
    (0..n)
        .map(|i| {
            let mut u = [0.0; DIMS];
            for (d, perm) in strata.iter().enumerate() {
                u[d] = (perm[i] as f64 + rng.unit()) / n as f64;
            }
            point_at(u)
        })
        .collect()
}

/// `lo` to `hi` on a log scale at `u` in [0, 1).
fn log_between(lo: f64, hi: f64, u: f64) -> f64 {
    (lo.ln() + u * (hi.ln() - lo.ln())).exp()
}

/// The point at the unit-cube coordinates `u`: counts and lengths on log
/// scales (1 to 2 threads matters as much as 32 to 64), categories in
/// equal shares.
fn point_at(u: [f64; DIMS]) -> Point {
    let count =
        |u: f64, max: u32| (log_between(1.0, f64::from(max) + 1.0, u).floor() as u32).clamp(1, max);
    let kind = Kind::ALL[((u[6] * 3.0) as usize).min(2)];
    let out_ns = if u[4] < NO_OUT_SHARE {
        0
    } else {
        let v = (u[4] - NO_OUT_SHARE) / (1.0 - NO_OUT_SHARE);
        log_between(CS_NS.0 as f64, OUT_NS_MAX as f64, v).round() as u64
    };
    Point {
        threads: count(u[0], MAX_THREADS),
        locks: count(u[1], MAX_LOCKS),
        skew_pct: (u[2] * 101.0).floor().min(100.0) as u32,
        cs_ns: log_between(CS_NS.0 as f64, CS_NS.1 as f64, u[3]).round() as u64,
        out_ns,
        inside: Inside::ALL[((u[5] * 5.0) as usize).min(4)],
        kind,
        read_pct: if kind == Kind::Rwlock {
            (u[7] * 101.0).floor().min(100.0) as u32
        } else {
            0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_points_and_another_seed_others() {
        let a = sample(60, 20261128);
        assert_eq!(a, sample(60, 20261128));
        assert_ne!(a, sample(60, 20261129));
        // The first point of the judge's seed, pinned: a change of the
        // sampler changes every table measured with it.
        assert_eq!(a.len(), 60);
        assert_eq!(
            a[0].to_string(),
            "threads=2,locks=2,skew=0.96,cs-ns=75,out-ns=16,inside=none,kind=condvar,read-share=0.00"
        );
    }

    #[test]
    fn every_point_round_trips_through_its_printed_form() {
        for p in sample(200, 7) {
            let printed = p.to_string();
            let back: Point = printed.parse().unwrap();
            assert_eq!(back, p, "{printed}");
            assert_eq!(back.to_string(), printed);
        }
    }

    #[test]
    fn the_sample_covers_every_range_and_category() {
        let pts = sample(60, 1);
        let threads: Vec<u32> = pts.iter().map(|p| p.threads).collect();
        assert!(
            threads.contains(&1) && threads.iter().any(|&t| t >= 48),
            "{threads:?}"
        );
        assert!(pts.iter().any(|p| p.cs_ns < 30) && pts.iter().any(|p| p.cs_ns > 50_000));
        assert!(pts.iter().any(|p| p.out_ns == 0) && pts.iter().any(|p| p.out_ns > 50_000));
        for i in Inside::ALL {
            assert_eq!(pts.iter().filter(|p| p.inside == i).count(), 12, "{i:?}");
        }
        for k in Kind::ALL {
            assert_eq!(pts.iter().filter(|p| p.kind == k).count(), 20, "{k:?}");
        }
        assert!(pts
            .iter()
            .all(|p| (p.kind == Kind::Rwlock) || p.read_pct == 0));
    }

    #[test]
    fn a_bad_printed_point_names_its_part() {
        let ok = "threads=8,locks=4,skew=0.50,cs-ns=1200,out-ns=300,inside=yield,kind=rwlock,read-share=0.80";
        let p: Point = ok.parse().unwrap();
        assert_eq!((p.threads, p.skew_pct, p.read_pct), (8, 50, 80));
        let err = |s: &str| s.parse::<Point>().unwrap_err().0;
        assert!(err(&ok.replace("threads=8", "threads=65")).starts_with("threads=65"));
        assert!(err(&ok.replace("skew=0.50", "skew=1.5")).starts_with("skew=1.5"));
        assert!(err(&ok.replace("skew=0.50", "skew=0.505")).starts_with("skew=0.505"));
        assert!(err(&ok.replace("inside=yield", "inside=spin")).starts_with("inside=spin"));
        assert!(err(&ok.replace(",kind=rwlock", "")).starts_with("kind is missing"));
        assert!(err(&format!("{ok},threads=2")).contains("twice"));
        assert!(err(&ok.replace("locks=4", "lock=4")).starts_with("unknown key 'lock'"));
    }
}
