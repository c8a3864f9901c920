//! Progress of long steps: reported by the library, shown by the command line.
//!
//! A build reports its phases in this order: `reading sources` (bytes read out of the input
//! files' total size, known before reading), then per table `running table <name>'s SQL`
//! (rows, or the bytes of the sources streamed into it) and `writing table <name>` (rows out
//! of the rows the SQL returned, when the table is sorted before it is written), then
//! `hashing`. `verify` reports `hashing` (bytes out of the release's total) and, with
//! `--data`, `reading rows` (rows out of the manifest's total).

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
    /// The current step goes on under another name (`reading source metrics`): its count
    /// and total stay.
    fn rename(&self, _step: &str) {}
}

/// A [`Progress`] that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: Unit, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// A [`Progress`] that records what it is told, in order: for tests of the library's reports,
/// and for a front end that shows progress its own way.
#[derive(Debug, Default)]
pub struct Recorder {
    events: std::sync::Mutex<Vec<Event>>,
}

/// One report a [`Recorder`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// [`Progress::start`].
    Start(String, Unit, Option<u64>),
    /// [`Progress::advance`].
    Advance(u64),
    /// [`Progress::finish`].
    Finish,
    /// [`Progress::rename`].
    Rename(String),
}

impl Recorder {
    /// The reports received so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().expect("lock").clone()
    }
}

impl Progress for Recorder {
    fn start(&self, step: &str, unit: Unit, total: Option<u64>) {
        self.events.lock().expect("lock").push(Event::Start(step.to_string(), unit, total));
    }
    fn advance(&self, n: u64) {
        self.events.lock().expect("lock").push(Event::Advance(n));
    }
    fn finish(&self) {
        self.events.lock().expect("lock").push(Event::Finish);
    }
    fn rename(&self, step: &str) {
        self.events.lock().expect("lock").push(Event::Rename(step.to_string()));
    }
}
