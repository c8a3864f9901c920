//! Helpers shared by the unit tests.

/// A reproducible stream of pseudo-random `u64`s from `seed` (not zero): Marsaglia's
/// xorshift64 (shifts 13, 7, 17), enough to vary generated test inputs.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
