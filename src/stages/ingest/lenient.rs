//! Python-flavoured JSON: bare `NaN`, `Infinity`, `-Infinity` tokens (written by `json.dumps`
//! with its default `allow_nan=True`) and integers too large for 64 bits.
//!
//! In: raw JSON bytes (a line, or a stream in chunks). Out: strict JSON bytes in which each such
//! token is replaced by a string literal that starts with U+FDD0 (a Unicode noncharacter,
//! reserved for internal use and never produced by real data): `"\u{FDD0}NaN"`,
//! `"\u{FDD0}Infinity"`, `"\u{FDD0}-Infinity"`, `"\u{FDD0}int:<digits>"`. The rest of the
//! text is copied unchanged, so a strict parser (serde_json) can read it and the reader can
//! turn the markers back into IEEE values or precise range errors.

/// First character of every marker string.
pub const MARK: char = '\u{FDD0}';

/// A token that strict JSON cannot hold, recovered from a marker string.
#[derive(Debug, Clone, PartialEq)]
pub enum Special<'a> {
    /// Bare `NaN`.
    NaN,
    /// Bare `Infinity`.
    PosInf,
    /// Bare `-Infinity`.
    NegInf,
    /// An integer token outside the u64 and i64 ranges; the digits as written.
    BigInt(&'a str),
}

impl Special<'_> {
    /// The IEEE value of a non-finite token (`None` for big integers).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Special::NaN => Some(f64::NAN),
            Special::PosInf => Some(f64::INFINITY),
            Special::NegInf => Some(f64::NEG_INFINITY),
            Special::BigInt(_) => None,
        }
    }

    /// The token as it was written in the input.
    pub fn token(&self) -> &str {
        match self {
            Special::NaN => "NaN",
            Special::PosInf => "Infinity",
            Special::NegInf => "-Infinity",
            Special::BigInt(d) => d,
        }
    }
}

/// Recognises a marker string produced by [`Lexer`].
pub fn special(s: &str) -> Option<Special<'_>> {
    let rest = s.strip_prefix(MARK)?;
    Some(match rest {
        "NaN" => Special::NaN,
        "Infinity" => Special::PosInf,
        "-Infinity" => Special::NegInf,
        _ => Special::BigInt(rest.strip_prefix("int:")?),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Normal,
    InString,
    Escape,
    Token,
}

/// Streaming rewriter; feed it bytes in any chunking, then call [`Lexer::finish`].
#[derive(Debug)]
pub struct Lexer {
    state: State,
    token: Vec<u8>,
}

impl Default for Lexer {
    fn default() -> Self {
        Lexer { state: State::Normal, token: Vec::with_capacity(32) }
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'+' || b == b'.'
}

impl Lexer {
    /// Rewrites `input` into `out` (appending).
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::InString => {
                    // copy up to the next quote or backslash in one go
                    match memchr::memchr2(b'"', b'\\', &input[i..]) {
                        None => {
                            out.extend_from_slice(&input[i..]);
                            return;
                        }
                        Some(k) => {
                            out.extend_from_slice(&input[i..=i + k]);
                            self.state = if input[i + k] == b'"' { State::Normal } else { State::Escape };
                            i += k + 1;
                        }
                    }
                }
                State::Escape => {
                    out.push(input[i]);
                    self.state = State::InString;
                    i += 1;
                }
                State::Token => {
                    let b = input[i];
                    if is_token_byte(b) {
                        self.token.push(b);
                        i += 1;
                    } else {
                        self.flush_token(out);
                        self.state = State::Normal;
                    }
                }
                State::Normal => {
                    let b = input[i];
                    if b == b'"' {
                        out.push(b);
                        self.state = State::InString;
                        i += 1;
                    } else if b == b'N' || b == b'I' || b == b'-' || b.is_ascii_digit() {
                        self.token.clear();
                        self.token.push(b);
                        self.state = State::Token;
                        i += 1;
                    } else {
                        out.push(b);
                        i += 1;
                    }
                }
            }
        }
    }

    /// Ends the input (flushes a token that runs to the end).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.state == State::Token {
            self.flush_token(out);
        }
        self.state = State::Normal;
    }

    fn flush_token(&mut self, out: &mut Vec<u8>) {
        let t = &self.token[..];
        let marker: Option<String> = match t {
            b"NaN" => Some("NaN".into()),
            b"Infinity" => Some("Infinity".into()),
            b"-Infinity" => Some("-Infinity".into()),
            _ => {
                let digits = t.strip_prefix(b"-").unwrap_or(t);
                if digits.len() >= 19 && digits.iter().all(u8::is_ascii_digit) {
                    let s = std::str::from_utf8(t).expect("ascii");
                    let fits = s.parse::<i64>().is_ok() || s.parse::<u64>().is_ok();
                    (!fits).then(|| format!("int:{s}"))
                } else {
                    None
                }
            }
        };
        match marker {
            Some(m) => {
                out.push(b'"');
                let mut buf = [0u8; 4];
                out.extend_from_slice(MARK.encode_utf8(&mut buf).as_bytes());
                out.extend_from_slice(m.as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(t),
        }
        self.token.clear();
    }
}

/// Rewrites one complete text (a JSONL line). Returns `None` when nothing needed rewriting,
/// so the caller can parse the original bytes.
pub fn rewrite(input: &[u8]) -> Option<Vec<u8>> {
    // Fast path: without 'N', 'I' or a long digit run there is nothing to rewrite.
    if memchr::memchr2(b'N', b'I', input).is_none() && !has_long_digit_run(input) {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() + 16);
    let mut lx = Lexer::default();
    lx.feed(input, &mut out);
    lx.finish(&mut out);
    if out == input { None } else { Some(out) }
}

/// The 1-based byte column in the text as written of byte column `column` of `rewritten`
/// (one line, as [`rewrite`] made it): each marker string before it is taken back to the
/// token it replaced, `"\u{FDD0}NaN"` to `NaN` (5 bytes fewer), `"\u{FDD0}int:<digits>"` to
/// `<digits>` (9 fewer).
pub fn original_column(rewritten: &[u8], column: usize) -> usize {
    let mark = {
        let mut b = [0u8; 4];
        let m = MARK.encode_utf8(&mut b).len();
        let mut q = vec![b'"'];
        q.extend_from_slice(&b[..m]);
        q
    };
    let before = &rewritten[..column.saturating_sub(1).min(rewritten.len())];
    let mut removed = 0;
    for start in memchr::memmem::find_iter(before, &mark) {
        let body = &rewritten[start + mark.len()..];
        let Some(close) = memchr::memchr(b'"', body) else { continue };
        // only a marker that ends before the column counts
        if start + mark.len() + close < before.len() {
            // the quotes and the mark, and the `int:` of a big integer
            removed += mark.len() + 1 + if body.starts_with(b"int:") { 4 } else { 0 };
        }
    }
    column.saturating_sub(removed)
}

/// Shortest digit run that may not fit in 64 bits.
const LONG_RUN: usize = 19;

/// Whether `input` holds `LONG_RUN` or more ASCII digits in a row. Only every `LONG_RUN`-th
/// byte is probed (any such run covers one of them); the run around a digit probe is then
/// measured, and probing resumes `LONG_RUN` bytes past its end.
fn has_long_digit_run(input: &[u8]) -> bool {
    let mut i = LONG_RUN - 1;
    while i < input.len() {
        if !input[i].is_ascii_digit() {
            i += LONG_RUN;
            continue;
        }
        let start = input[..i].iter().rposition(|b| !b.is_ascii_digit()).map_or(0, |p| p + 1);
        let end = input[i..].iter().position(|b| !b.is_ascii_digit()).map_or(input.len(), |p| i + p);
        if end - start >= LONG_RUN {
            return true;
        }
        i = end + LONG_RUN;
    }
    false
}

/// A [`std::io::Read`] adapter applying [`Lexer`] to a byte stream (for JSON documents).
pub struct LenientRead<R> {
    inner: R,
    lexer: Lexer,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
    chunk: Vec<u8>,
}

impl<R: std::io::Read> LenientRead<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        LenientRead { inner, lexer: Lexer::default(), buf: Vec::new(), pos: 0, done: false, chunk: vec![0; 64 * 1024] }
    }
}

impl<R: std::io::Read> std::io::Read for LenientRead<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.buf.clear();
            self.pos = 0;
            let n = self.inner.read(&mut self.chunk)?;
            if n == 0 {
                self.lexer.finish(&mut self.buf);
                self.done = true;
            } else {
                self.lexer.feed(&self.chunk[..n], &mut self.buf);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_of_a_rewritten_line_are_those_of_the_line_as_written() {
        // the error after each line's tokens is at the `}` that follows `tru`
        for line in [
            "{\"n\":1,\"f\":tru}",
            "{\"n\":NaN,\"f\":tru}",
            "{\"n\":-Infinity,\"m\":Infinity,\"f\":tru}",
            "{\"i\":12345678901234567890123,\"f\":tru}",
        ] {
            let rewritten = rewrite(line.as_bytes()).unwrap_or_else(|| line.as_bytes().to_vec());
            let e = serde_json::from_slice::<serde_json::Value>(&rewritten).unwrap_err();
            assert_eq!(original_column(&rewritten, e.column()), line.len(), "{line}");
        }
    }

    fn rw(s: &str) -> String {
        String::from_utf8(rewrite(s.as_bytes()).unwrap_or_else(|| s.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn long_digit_runs_are_found_wherever_they_are() {
        fn naive(input: &[u8]) -> bool {
            input.split(|b| !b.is_ascii_digit()).any(|run| run.len() >= LONG_RUN)
        }
        for len in 0..60 {
            for run in [1, 17, 18, 19, 20, 40] {
                for at in 0..len {
                    let mut v = vec![b'x'; len];
                    for b in v.iter_mut().skip(at).take(run) {
                        *b = b'7';
                    }
                    // a short run just before it, to trip the resumption point
                    if at >= 3 {
                        v[at - 3] = b'1';
                    }
                    assert_eq!(has_long_digit_run(&v), naive(&v), "{}", String::from_utf8_lossy(&v));
                }
            }
        }
    }

    #[test]
    fn rewrites_bare_tokens_only() {
        assert_eq!(
            rw(r#"{"a": NaN, "b": "NaN", "c": -Infinity}"#),
            "{\"a\": \"\u{FDD0}NaN\", \"b\": \"NaN\", \"c\": \"\u{FDD0}-Infinity\"}"
        );
        assert_eq!(
            rw(r#"{"s": "x\"NaN", "v": [Infinity,1]}"#),
            "{\"s\": \"x\\\"NaN\", \"v\": [\"\u{FDD0}Infinity\",1]}"
        );
        assert_eq!(
            rw(r#"{"a": 18446744073709551615, "b": 18446744073709551616}"#),
            "{\"a\": 18446744073709551615, \"b\": \"\u{FDD0}int:18446744073709551616\"}"
        );
        assert_eq!(rw(r#"{"a": 1.5e300, "b": true, "c": null}"#), r#"{"a": 1.5e300, "b": true, "c": null}"#);
    }

    #[test]
    fn stream_handles_any_chunking() {
        let src = r#"{"a": NaN, "k": "In\\finity", "z": -Infinity}"#;
        let want = rw(src);
        for split in 1..src.len() {
            let mut lx = Lexer::default();
            let mut out = Vec::new();
            lx.feed(&src.as_bytes()[..split], &mut out);
            lx.feed(&src.as_bytes()[split..], &mut out);
            lx.finish(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "split at {split}");
        }
    }
}
