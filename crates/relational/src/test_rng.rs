//! A seeded generator for the crate's tests: a 64-bit linear congruential generator (Knuth's
//! MMIX constants), the same numbers on every run and machine, with no dependency.

/// The generator's state.
pub(crate) struct Lcg(u64);

const MUL: u64 = 6_364_136_223_846_793_005;
const ADD: u64 = 1_442_695_040_888_963_407;

impl Lcg {
    /// The generator whose first step is from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The generator of `seed` scrambled once, so that seeds 0, 1, 2 … start far apart.
    pub(crate) fn scrambled(seed: u64) -> Self {
        Self(seed.wrapping_mul(MUL).wrapping_add(1))
    }

    /// The next 31 random bits.
    pub(crate) fn bits(&mut self) -> i64 {
        self.0 = self.0.wrapping_mul(MUL).wrapping_add(ADD);
        (self.0 >> 33) as i64
    }

    /// A number in `[0, n)` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.bits() as u64 % n
    }
}
