//! The Markov model of ticket-lock collapse and its MCS counterpart
//! (paper 3): curves, peaks and normalised throughput.

use corral_policy::model::{curve, normalised_throughput, peak, McsModel, ModelPoint, TicketModel};

const FIG8: TicketModel = TicketModel {
    a: 12_500.0,
    s: 400.0,
    c: 100.0,
};

/// Eq. 1 evaluated literally with factorials, for small n only.
fn direct_eq1(a: f64, s: f64, c: f64, n: u32, ticket: bool) -> Vec<f64> {
    let fact = |m: u32| (1..=m).map(f64::from).product::<f64>();
    let weight = |k: u32| {
        let prod: f64 = (1..=k)
            .map(|i| if ticket { s + f64::from(i) * c } else { s + c })
            .product();
        prod / (a.powi(k as i32) * fact(n - k))
    };
    let total: f64 = (0..=n).map(weight).sum();
    (0..=n).map(|k| weight(k) / total).collect()
}

#[test]
fn one_core_is_the_fraction_of_time_outside_the_lock() {
    // With one core, P_1 = (s + c)/(a + s + c): speedup a / (a + s + c).
    let m = TicketModel {
        a: 1000.0,
        s: 200.0,
        c: 50.0,
    };
    assert!((m.speedup(1) - 1000.0 / 1250.0).abs() < 1e-12);
    let mcs = McsModel {
        a: 1000.0,
        s: 200.0,
        c: 50.0,
    };
    assert!((mcs.speedup(1) - 1000.0 / 1250.0).abs() < 1e-12);
    // No contention at all: every core is useful.
    let free = TicketModel {
        a: 1000.0,
        s: 0.0,
        c: 0.0,
    };
    assert_eq!(free.speedup(64), 64.0);
}

#[test]
fn log_space_agrees_with_direct_eq1_for_small_n() {
    let mut got = Vec::new();
    for &(a, s, c) in &[
        (12_500.0, 400.0, 100.0),
        (2_000.0, 1_000.0, 30.0),
        (50.0, 5.0, 1.0),
    ] {
        for n in [1u32, 2, 5, 10, 20] {
            for ticket in [true, false] {
                let want = direct_eq1(a, s, c, n, ticket);
                if ticket {
                    TicketModel { a, s, c }.distribution(n, &mut got);
                } else {
                    McsModel { a, s, c }.distribution(n, &mut got);
                }
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() < 1e-9,
                        "n={n} a={a} ticket={ticket}: {g} vs {w}"
                    );
                }
                let mean: f64 = want.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
                let speedup = if ticket {
                    TicketModel { a, s, c }.speedup(n)
                } else {
                    McsModel { a, s, c }.speedup(n)
                };
                assert!((speedup - (f64::from(n) - mean)).abs() < 1e-8);
            }
        }
    }
}

#[test]
fn probabilities_sum_to_one() {
    let mut p = Vec::new();
    for n in [1u32, 7, 48, 512, 4096] {
        FIG8.distribution(n, &mut p);
        assert_eq!(p.len(), n as usize + 1);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(p.iter().all(|x| (0.0..=1.0).contains(x)));
        let mean: f64 = p.iter().enumerate().map(|(k, x)| k as f64 * x).sum();
        assert!((mean - FIG8.mean_waiters(n)).abs() < 1e-6 * f64::from(n));
    }
}

#[test]
fn extreme_parameters_never_produce_nan_or_inf() {
    let values = [
        0.0,
        1e-300,
        1e-9,
        1.0,
        400.0,
        1e9,
        1e300,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
    ];
    let mut p = Vec::new();
    for &a in &values {
        for &s in &values {
            for &c in &values {
                for n in [1u32, 48, 4096] {
                    let t = TicketModel { a, s, c };
                    let m = McsModel { a, s, c };
                    for v in [
                        t.speedup(n),
                        t.mean_waiters(n),
                        m.speedup(n),
                        m.mean_waiters(n),
                    ] {
                        assert!(v.is_finite(), "a={a} s={s} c={c} n={n}: {v}");
                        assert!((0.0..=f64::from(n)).contains(&v));
                    }
                    t.distribution(n, &mut p);
                    assert!(p.iter().all(|x| x.is_finite()));
                }
            }
        }
    }
}

#[test]
fn ticket_collapses_after_its_peak_while_mcs_does_not() {
    let ticket = curve(&FIG8, 48);
    let top = *peak(&ticket).expect("non-empty");
    let at48 = ticket[47].speedup;
    assert!(top.cores < 48);
    assert!(at48 < 0.5 * top.speedup, "peak {top:?}, at 48 {at48}");

    let mcs = McsModel {
        a: FIG8.a,
        s: FIG8.s,
        c: FIG8.c,
    };
    let points = curve(&mcs, 48);
    // Non-decreasing: the constant-handoff chain saturates instead.
    for w in points.windows(2) {
        assert!(w[1].speedup >= w[0].speedup - 1e-9);
    }
    // One handoff per s + c cycles bounds the useful cores at a / (s + c).
    assert!(points[47].speedup > 0.9 * (FIG8.a / (FIG8.s + FIG8.c)));
}

#[test]
fn longer_non_serial_time_moves_the_collapse_later() {
    let cores_at_peak = |a: f64| {
        let m = TicketModel { a, ..FIG8 };
        peak(&curve(&m, 512)).unwrap().cores
    };
    assert!(cores_at_peak(12_500.0) < cores_at_peak(50_000.0));
    assert!(cores_at_peak(50_000.0) < cores_at_peak(200_000.0));
}

#[test]
fn normalised_throughput_and_peak() {
    assert_eq!(normalised_throughput(8, 0.25), 6.0);
    assert_eq!(normalised_throughput(8, 1.5), 0.0);
    assert_eq!(normalised_throughput(8, -0.5), 8.0);
    assert_eq!(normalised_throughput(8, f64::NAN), 0.0);

    assert!(peak(&[]).is_none());
    let pts = [
        ModelPoint {
            cores: 1,
            speedup: 1.0,
        },
        ModelPoint {
            cores: 2,
            speedup: 3.0,
        },
        ModelPoint {
            cores: 3,
            speedup: f64::NAN,
        },
        ModelPoint {
            cores: 4,
            speedup: 3.0,
        },
    ];
    assert_eq!(peak(&pts).unwrap().cores, 2);
}
