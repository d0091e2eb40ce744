//! Seeded, reproducible randomness: xoshiro256++ seeded through splitmix64.

/// xoshiro256++ (Blackman and Vigna): fast, small state, good statistics.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn seeded(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            // splitmix64 spreads any seed (even 0) over the full state.
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in the open interval (0, 1), so `ln` never sees 0.
    #[inline]
    pub fn unit_open(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with the given mean.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit_open().ln()
    }

    /// Uniform integer in `0..n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_different_seeds_differ() {
        let (mut a, mut b, mut c) = (Rng::seeded(7), Rng::seeded(7), Rng::seeded(8));
        let xa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn exponential_mean_and_bounds() {
        let mut r = Rng::seeded(1);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exp(400.0)).sum::<f64>() / n as f64;
        assert!((mean - 400.0).abs() < 6.0, "mean {mean}");
        for _ in 0..10_000 {
            assert!(r.below(5) < 5);
            let u = r.unit_open();
            assert!(u > 0.0 && u < 1.0);
        }
    }
}
