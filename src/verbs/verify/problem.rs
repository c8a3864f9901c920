//! What `verify` finds wrong, one [`Problem`] each.
//!
//! In: the checks of the verify verb. Out: problems whose [`ProblemKind`] says what sort of
//! fault it is (a checksum that differs, a file missing, a card that `datasets` cannot load…)
//! and whose message is the line the command prints. `verify --format json` gives both:
//! `{"kind": "sha256_mismatch", "message": "data/t.parquet: sha256 mismatch: …"}`.

use serde::Serialize;

/// The sort of fault a [`Problem`] is. Serialised in snake case (`sha256_mismatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A file the manifest, `SHA256SUMS` or the card needs is not there.
    Missing,
    /// A file of the manifest's size whose SHA-256 is not the one the manifest or
    /// `SHA256SUMS` gives.
    Sha256Mismatch,
    /// A file's size in bytes is not the one the manifest gives (its SHA-256 differs too).
    SizeMismatch,
    /// A Git LFS pointer stands where the file itself should be.
    LfsPointer,
    /// A file cannot be read (an operating-system error, or not Parquet).
    Unreadable,
    /// A symbolic link, folder, pipe, socket or device where a regular file should be.
    NotRegular,
    /// A file in the release that the manifest does not list.
    Unexpected,
    /// A file holds another number of rows than the manifest gives.
    RowCount,
    /// A file's Arrow schema (or its columns) is not its table's.
    Schema,
    /// `manifest.json` cannot be read, or disagrees with itself.
    Manifest,
    /// A line of `SHA256SUMS` is malformed, missing or disagrees with the manifest.
    Checksums,
    /// The dataset card (`README.md`) is malformed, or `datasets` or the Hub's viewer would
    /// read the release otherwise than its manifest says.
    Card,
    /// A Parquet row group is above the dataset viewer's size limit.
    RowGroupSize,
    /// A Parquet column chunk holds a data page of no values (apache/arrow-rs#10929), which
    /// pyarrow, and so `datasets`, refuses to read.
    EmptyPage,
    /// `croissant.json` does not describe the release.
    Croissant,
    /// `datapackage.json` does not describe the release.
    DataPackage,
    /// `verify --data`: rows break the table's schema, key order, splits or JSON Lines copies.
    Rows,
}

/// One thing wrong with a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The sort of fault.
    pub kind: ProblemKind,
    /// The line printed for it: `place: what is wrong` (a file, `file:line`, `table t`, a card's
    /// front-matter path), control characters escaped.
    pub message: String,
    /// The release's file the problem is in, as the message's place names it (`data/t.parquet`
    /// of `data/t.parquet: row group 0 …`, `README.md` of `README.md:12: …`); `None` for a
    /// place that is no file (`table t`).
    pub file: Option<String>,
}

impl Problem {
    /// A problem of `kind` said by `message`.
    pub fn new(kind: ProblemKind, message: impl Into<String>) -> Self {
        let message = message.into();
        // the place is the text up to the first `:`; a file's path holds no blank
        let file = message
            .split_once(':')
            .map(|(place, _)| place)
            .filter(|p| !p.is_empty() && !p.contains(char::is_whitespace))
            .map(str::to_string);
        Problem { kind, message, file }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
