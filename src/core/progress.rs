//! Progress of long steps: reported by the library, shown by the command line.

/// What a step's progress counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nothing: the step only runs (a spinner).
    None,
    /// Rows written.
    Rows,
    /// Bytes read, hashed or sent.
    Bytes,
}

/// Progress of long steps, reported by the library and shown by the front end.
pub trait Progress: Send + Sync {
    /// A step begins; `total` is its size in `unit`s, the unit of `advance`, when known.
    fn start(&self, step: &str, unit: Unit, total: Option<u64>);
    /// Some of the current step is done.
    fn advance(&self, n: u64);
    /// The current step is done.
    fn finish(&self);
}

/// A [`Progress`] that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: Unit, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}
