//! The secrets this process holds (Hub tokens, object-store credentials) and the one
//! redaction that takes them out of any text: the last guard before a message is printed or
//! returned.
//!
//! In: secrets, as they are read ([`remember`]). Out: text with each one replaced by the mark
//! it was remembered with ([`redact`]).

use std::sync::Mutex;

/// Every secret remembered, with the mark that stands for it in redacted text.
static SECRETS: Mutex<Vec<(String, &'static str)>> = Mutex::new(Vec::new());

/// Remembers `secret`, to be shown as `mark` (`<token>`, `***`) by [`redact`]. A secret
/// shorter than 8 characters is ignored: no token is that short, and replacing every `1` or
/// `e` of every message would leave none readable. One remembered before is kept once.
pub fn remember(secret: &str, mark: &'static str) {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return;
    }
    let mut secrets = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|(s, _)| s == secret) {
        secrets.push((secret.to_string(), mark));
    }
}

/// The fewest characters a secret [`remember`]ed has.
const MIN_SECRET_CHARS: usize = 8;

/// The shortest start of a secret that a message cut short (`hf_A…`) is taken for it: the
/// fewer characters shown, the fewer of the secret a message gives away (three are `hf_`,
/// the form's own).
const CUT_PREFIX_CHARS: usize = 4;

/// `text` with every secret [`remember`]ed so far replaced by its mark, as written or in
/// lower case (SQL folds an unquoted name that holds it), and its start too where a message
/// cut the value it quotes (`hf_Ab…`: 4 characters or more, then `…`).
pub fn redact(text: &str) -> String {
    let secrets = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = text.to_string();
    for (s, mark) in secrets.iter() {
        for form in [s.clone(), s.to_ascii_lowercase()] {
            if out.contains(form.as_str()) {
                out = out.replace(form.as_str(), mark);
            }
        }
        if !out.contains('…') {
            continue;
        }
        let ends: Vec<usize> = s.char_indices().map(|(i, _)| i).skip(CUT_PREFIX_CHARS).collect();
        for end in ends.into_iter().rev() {
            let cut = format!("{}…", &s[..end]);
            if out.contains(&cut) {
                out = out.replace(&cut, &format!("{mark}…"));
            }
        }
    }
    out
}

/// Whether `text` holds a secret [`remember`]ed so far, or [`HELD_PIECE`] characters of one
/// in a row (a start cut short, as a file named with the first half of a token), in any case.
pub fn holds(text: &str) -> bool {
    !held_pieces(text).is_empty()
}

/// `text` with each secret, and each run of [`HELD_PIECE`] characters or more of one, in any
/// case, replaced by the secret's mark: a path named with a piece of a token, said in a message.
pub fn hide_pieces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, mark) in held_pieces(text) {
        out.push_str(&text[at..range.start]);
        out.push_str(mark);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The byte ranges of `text` that hold a secret or a piece of one (merged where they meet), in
/// order, each with its secret's mark.
fn held_pieces(text: &str) -> Vec<(std::ops::Range<usize>, &'static str)> {
    let secrets = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    // ASCII lower case keeps every byte where it was
    let lower = text.to_ascii_lowercase();
    let mut held: Vec<(std::ops::Range<usize>, &'static str)> = Vec::new();
    for (secret, mark) in secrets.iter() {
        let s = secret.to_ascii_lowercase();
        let starts: Vec<usize> = s.char_indices().map(|(b, _)| b).chain([s.len()]).collect();
        let n = starts.len() - 1;
        let piece = HELD_PIECE.min(n);
        for i in 0..=n - piece {
            let needle = &s[starts[i]..starts[i + piece]];
            held.extend(lower.match_indices(needle).map(|(b, m)| (b..b + m.len(), *mark)));
        }
    }
    held.sort_by_key(|(r, _)| (r.start, r.end));
    let mut merged: Vec<(std::ops::Range<usize>, &'static str)> = Vec::new();
    for (r, mark) in held {
        match merged.last_mut() {
            Some((last, _)) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push((r, mark)),
        }
    }
    merged
}

/// Searchers for every secret [`remember`]ed so far, as written and in lower case, each with
/// its mark: what a scan of bytes (a file, a column's values) looks for. Empty when none is.
pub fn finders() -> Vec<(memchr::memmem::Finder<'static>, &'static str)> {
    let secrets = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for (s, mark) in secrets.iter() {
        out.push((memchr::memmem::Finder::new(s.as_bytes()).into_owned(), *mark));
        let lower = s.to_ascii_lowercase();
        if &lower != s {
            out.push((memchr::memmem::Finder::new(lower.as_bytes()).into_owned(), *mark));
        }
    }
    out
}

/// The forms access tokens are given out in: Hugging Face (`hf_…`), GitHub (`ghp_…`,
/// `github_pat_…`), GitLab (`glpat-…`), AWS (`AKIA…`), OpenAI and Anthropic (`sk-…`), Slack
/// (`xox…-`) and JSON Web Tokens (`eyJ….….…`), each as (its pattern, whether it is looked for
/// at a word's start only even inside longer text). [`token_forms_pattern`] makes them one
/// regular expression.
const TOKEN_FORMS: [(&str, bool); 8] = [
    (r"hf_[A-Za-z0-9]{20,}", false),
    (r"gh[pousr]_[A-Za-z0-9]{30,}", false),
    (r"github_pat_[A-Za-z0-9_]{30,}", false),
    (r"glpat-[A-Za-z0-9_-]{20,}", false),
    (r"AKIA[0-9A-Z]{16}", false),
    (r"sk-[A-Za-z0-9_-]*[A-Za-z0-9]{16,}[A-Za-z0-9_-]*", true),
    (r"xox[abposr]-[A-Za-z0-9-]{10,}", true),
    (r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", true),
];

/// The forms access tokens are given out in, as one regular expression. `at_words`: every
/// form at a word's start (an AWS key ending one too), as a refusal looks for them, where text
/// inside a longer word (`abchf_…`, `TAKIAGUCHI…`, a random blob) is no token; else the
/// prefixes no word has are found inside longer text too (`xxhf_…`: what a redaction takes
/// out).
pub fn token_forms_pattern(at_words: bool) -> String {
    let forms: Vec<String> = TOKEN_FORMS
        .iter()
        .map(|(p, word)| match (at_words || *word, at_words && p.starts_with("AKIA")) {
            (true, true) => format!(r"\b{p}\b"),
            (true, false) => format!(r"\b{p}"),
            _ => p.to_string(),
        })
        .collect();
    format!("(?:{})", forms.join("|"))
}

/// The token forms at a word's start ([`token_forms_pattern`]), over bytes, compiled once.
pub fn token_forms() -> &'static regex::bytes::Regex {
    static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::bytes::Regex::new(&token_forms_pattern(true)).expect("static pattern"))
}

/// The token forms without word boundaries, over bytes: what a search of many values
/// written one after the other (a column's text buffer) looks for first, each value it may
/// hold then searched with [`token_forms`].
pub fn token_forms_anywhere() -> &'static regex::bytes::Regex {
    static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::bytes::Regex::new(&token_forms_pattern(false).replace(r"\b", "")).expect("static pattern"))
}

/// The name of the form a match of [`token_forms_pattern`] has, by its start (`hf_…`, `sk-…`, a JSON
/// Web Token): what a message may say of it without quoting any of its secret part.
pub fn token_form_name(m: &[u8]) -> &'static str {
    const NAMES: [(&[u8], &str); 9] = [
        (b"hf_", "a Hugging Face token (hf_…)"),
        (b"github_pat_", "a GitHub token (github_pat_…)"),
        (b"ghp_", "a GitHub token (ghp_…)"),
        (b"gh", "a GitHub token (gh…_…)"),
        (b"glpat-", "a GitLab token (glpat-…)"),
        (b"AKIA", "an AWS access key (AKIA…)"),
        (b"sk-", "an API key (sk-…)"),
        (b"xox", "a Slack token (xox…)"),
        (b"eyJ", "a JSON Web Token (eyJ…)"),
    ];
    NAMES.iter().find(|(p, _)| m.starts_with(p)).map_or("an access token", |(_, n)| n)
}

/// Characters of a secret in a row that [`holds`] takes for the secret: 16 of a Hugging Face
/// token's 37 are no chance match in a file's path.
pub const HELD_PIECE: usize = 16;

#[cfg(test)]
mod tests {
    #[test]
    fn token_forms_are_looked_for_at_a_words_start() {
        let re = super::token_forms();
        for text in
            ["key hf_abcdefghijklmnopqrstuvwxyz0123", "\"sk-proj-abcdefghijklmnopqrstuv\"", "x=AKIAABCDEFGHIJKLMNOP"]
        {
            assert!(re.is_match(text.as_bytes()), "{text}");
        }
        for text in [
            "abchf_abcdefghijklmnopqrstuvwxyz0123",
            "TAKIAGUCHIHIROSHIMAJAPAN1",
            "aghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ] {
            assert!(!re.is_match(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn a_remembered_secret_is_replaced_by_its_mark() {
        super::remember("s3cr3t-value-for-a-test", "***");
        super::remember("", "<never>");
        // too short for a token: every `e` of every message would go
        super::remember("e", "<never>");
        assert_eq!(super::redact("the message"), "the message");
        assert_eq!(super::redact("key s3cr3t-value-for-a-test refused"), "key *** refused");
        assert_eq!(super::redact("nothing secret"), "nothing secret");
        // a message that cut the value it quotes
        assert_eq!(super::redact("found string \"AAAAs3cr3t-value-f…\""), "found string \"AAAA***…\"");
        assert_eq!(super::redact("found string \"xs3cr…\""), "found string \"x***…\"");
        assert_eq!(super::redact("found string \"xs3c…\""), "found string \"xs3c…\"");
        // folded to lower case, as SQL folds an unquoted name
        super::remember("Tok3nWithCASE-for-a-test", "***");
        assert_eq!(super::redact("table 'public.tok3nwithcase-for-a-test' not found"), "table 'public.***' not found");
    }

    #[test]
    fn a_path_holding_a_piece_of_a_secret_holds_it() {
        super::remember("hf_PieceOfATokenForATestOnly0123456789", "***");
        assert!(super::holds("raw/hf_PieceOfATokenForATestOnly0123456789/log.jsonl"));
        // its first 16 characters, its last 16, in lower case
        assert!(super::holds("raw/hf_pieceofatokenf/log.jsonl"));
        assert!(super::holds("raw/stOnly0123456789.jsonl"));
        // 15 are not enough
        assert!(!super::holds("raw/hf_PieceOfAToke/log.jsonl"));
        assert!(!super::holds("raw/run-1/log.jsonl"));
        assert_eq!(super::hide_pieces("raw/keys_hf_pieceofatokenfor/x.jsonl"), "raw/keys_***/x.jsonl");
        assert_eq!(super::hide_pieces("raw/run-1/log.jsonl"), "raw/run-1/log.jsonl");
    }
}
