//! The exact sum of `f64` values, for moving window frames whose values leave as they came.
//!
//! A fixed-point accumulator wide enough for any sum of up to 2^63 finite doubles: 68 digits
//! of 32 bits, from 2^-1074 (the smallest subnormal) up, each held in an `i64` so that
//! additions carry lazily. Adding a value and adding its negation leave it as it was, so a
//! value leaving a frame takes away exactly what it brought. The sum is rounded once, to
//! nearest with ties to even, as IEEE 754 rounds the sum of two values.
//!
//! Why not a crate: the one published superaccumulator for Rust (`xsum` 0.1.6) rounds some
//! sums of negative values to the wrong neighbour (-6811613792448635 + -7576185203043383
//! gave -14387798995492020 against the exact, representable -14387798995492018).

/// Digits of the accumulator.
const DIGITS: usize = 68;

/// Additions a digit takes (each below 2^32) before the digits carry, so that none
/// overflows an `i64`.
const ADDS_BEFORE_CARRY: u32 = 1 << 30;

/// An exact sum of finite `f64` values (see the module docs).
#[derive(Debug)]
pub(super) struct ExactSum {
    digits: [i64; DIGITS],
    /// The digits added to since the accumulator was empty: `lo..hi`.
    lo: usize,
    hi: usize,
    adds: u32,
    /// Values added minus values taken away that were not -0.0 (so that a sum of -0.0 alone
    /// is -0.0, as IEEE 754 has it).
    not_negative_zero: i64,
}

impl Default for ExactSum {
    fn default() -> Self {
        Self { digits: [0; DIGITS], lo: DIGITS, hi: 0, adds: 0, not_negative_zero: 0 }
    }
}

impl ExactSum {
    /// Adds finite `x` (`sign` 1) or takes it away (`sign` -1).
    pub(super) fn add(&mut self, x: f64, sign: i64) {
        debug_assert!(x.is_finite());
        if !(x == 0.0 && x.is_sign_negative()) {
            self.not_negative_zero += sign;
        }
        let bits = x.to_bits();
        let field = ((bits >> 52) & 0x7ff) as usize;
        let mut m = bits & ((1 << 52) - 1);
        if field > 0 {
            m |= 1 << 52;
        }
        if m == 0 {
            return;
        }
        let sign = if bits >> 63 == 1 { -sign } else { sign };
        // the value is m × 2^(pos - 1074)
        let pos = field.max(1) - 1;
        let wide = (m as u128) << (pos % 32);
        let at = pos / 32;
        if self.adds >= ADDS_BEFORE_CARRY {
            self.carry();
        }
        self.adds += 1;
        for k in 0..3 {
            self.digits[at + k] += sign * ((wide >> (32 * k)) & 0xffff_ffff) as i64;
        }
        self.lo = self.lo.min(at);
        self.hi = self.hi.max(at + 3);
    }

    /// Carries every digit but the top one into [0, 2^32); the top digit keeps the sign.
    fn carry(&mut self) {
        for i in self.lo..self.hi.saturating_sub(1) {
            let c = self.digits[i] >> 32;
            self.digits[i] -= c << 32;
            self.digits[i + 1] += c;
        }
        self.adds = 0;
    }

    /// The sum rounded once to the nearest `f64` (ties to even), after scaling it by
    /// 2^-`down` (`down` is 0, or 64 for a sum beyond the floats); an infinity when it is
    /// beyond them.
    pub(super) fn sum(&mut self, down: usize) -> f64 {
        if self.lo >= self.hi {
            return if self.not_negative_zero == 0 { -0.0 } else { 0.0 };
        }
        self.carry();
        // the magnitude, digits in [0, 2^32), with room for the top digit's carries
        let mut d = [0i64; DIGITS + 4];
        let (lo, mut hi) = (self.lo, self.hi);
        d[lo..hi].copy_from_slice(&self.digits[lo..hi]);
        let negative = d[hi - 1] < 0;
        if negative {
            for x in &mut d[lo..hi] {
                *x = -*x;
            }
            for i in lo..hi - 1 {
                let c = d[i] >> 32;
                d[i] -= c << 32;
                d[i + 1] += c;
            }
        }
        while d[hi - 1] >> 32 != 0 {
            let c = d[hi - 1] >> 32;
            d[hi - 1] -= c << 32;
            d[hi] += c;
            hi += 1;
        }
        let Some(top) = (lo..hi).rev().find(|&i| d[i] != 0) else {
            return if self.not_negative_zero == 0 { -0.0 } else { 0.0 };
        };
        // `n` (at most 64) bits from bit `at` up
        let bits = |at: usize, n: usize| -> u64 {
            let i = at / 32;
            let wide = (d[i] as u128) | (d[i + 1] as u128) << 32 | (d[i + 2] as u128) << 64;
            ((wide >> (at % 32)) as u64) & ((1u128 << n) - 1) as u64
        };
        // whether any bit below bit `at` is set
        let below = |at: usize| d[..at / 32].iter().any(|&x| x != 0) || d[at / 32] & ((1 << (at % 32)) - 1) != 0;
        // the top bit's place, in units of 2^-1074
        let p = 32 * top + 63 - (d[top] as u64).leading_zeros() as usize;
        // the lowest bit kept: 2^-1074 after scaling (a subnormal's spacing), or 52 below the top
        let mut lsb = if p < 53 + down { down } else { p - 52 };
        let mut m = bits(lsb, p + 1 - lsb);
        if lsb > 0 && bits(lsb - 1, 1) == 1 && (below(lsb - 1) || m & 1 == 1) {
            m += 1;
            if m == 1 << 53 {
                m >>= 1;
                lsb += 1;
            }
        }
        let magnitude = if m < 1 << 52 {
            // a subnormal after scaling (lsb is `down` here)
            f64::from_bits(m)
        } else {
            // m in [2^52, 2^53): the exponent field is 1 for lsb = down (m × 2^-1074)
            let field = lsb + 1 - down;
            if field >= 0x7ff { f64::INFINITY } else { f64::from_bits((field as u64) << 52 | (m & ((1 << 52) - 1))) }
        };
        if negative { -magnitude } else { magnitude }
    }
}
