//! Python-flavoured JSON: bare `NaN`, `Infinity`, `-Infinity` tokens (written by `json.dumps`
//! with its default `allow_nan=True`), integers too large for 64 bits, and the few number
//! tokens whose text a column must see (see [`Special::Float`]).
//!
//! In: raw JSON bytes (a line, or a stream in chunks). Out: strict JSON bytes in which each such
//! token is replaced by a string literal that starts with U+FDD0 (a Unicode noncharacter,
//! reserved for internal use and never produced by real data): `"\u{FDD0}NaN"`,
//! `"\u{FDD0}Infinity"`, `"\u{FDD0}-Infinity"`, `"\u{FDD0}int:<digits>"`,
//! `"\u{FDD0}num:<token>"`. The rest of the text is copied unchanged, so a strict parser
//! (serde_json) can read it and the reader can turn the markers back into IEEE values or
//! precise range errors.

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
    /// A number token written with a fraction or an exponent that a column must see as written:
    /// one that a 64-bit float reads as a whole number though it is none (`2.0000000000000000001`
    /// reads as 2.0, `1e-400` as 0.0), so that an integer column can refuse it; or one of more
    /// than 768 characters, which serde_json rounds otherwise than the standard library (read
    /// here by the latter, correctly rounded); or, in a YAML document, one beyond the float's
    /// range (`1e400`), which a column refuses. The token as written.
    Float(&'a str),
}

impl Special<'_> {
    /// The IEEE value of a non-finite token (`None` for big integers).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Special::NaN => Some(f64::NAN),
            Special::PosInf => Some(f64::INFINITY),
            Special::NegInf => Some(f64::NEG_INFINITY),
            Special::BigInt(_) => None,
            // the standard library's reading: infinite beyond the float's range (YAML's `1e400`)
            Special::Float(t) => Some(t.parse().unwrap_or(f64::NAN)),
        }
    }

    /// Whether this is a bare `NaN`, `Infinity` or `-Infinity` token.
    pub fn is_nonfinite(&self) -> bool {
        matches!(self, Special::NaN | Special::PosInf | Special::NegInf)
    }

    /// The token as it was written in the input.
    pub fn token(&self) -> &str {
        match self {
            Special::NaN => "NaN",
            Special::PosInf => "Infinity",
            Special::NegInf => "-Infinity",
            Special::BigInt(d) | Special::Float(d) => d,
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
        _ => match rest.strip_prefix("num:") {
            Some(t) => Special::Float(t),
            None => Special::BigInt(rest.strip_prefix("int:")?),
        },
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
        // the marker's text: the token itself, after `int:` or `num:` for a number
        let marker: Option<(&str, &[u8])> = match t {
            b"NaN" | b"Infinity" | b"-Infinity" => Some(("", t)),
            _ => number_mark(t).map(|prefix| (prefix, t)),
        };
        match marker {
            Some((prefix, token)) => {
                out.push(b'"');
                let mut buf = [0u8; 4];
                out.extend_from_slice(MARK.encode_utf8(&mut buf).as_bytes());
                out.extend_from_slice(prefix.as_bytes());
                out.extend_from_slice(token);
                out.push(b'"');
            }
            None => out.extend_from_slice(t),
        }
        self.token.clear();
    }
}

/// The prefix of the marker a number token needs: `int:` for an integer beyond 64 bits, `num:`
/// for a [`Special::Float`]; `None` for a token that needs none.
fn number_mark(t: &[u8]) -> Option<&'static str> {
    let digits = t.strip_prefix(b"-").unwrap_or(t);
    if digits.len() >= 19 && digits.iter().all(u8::is_ascii_digit) {
        let s = std::str::from_utf8(t).ok()?;
        let fits = s.parse::<i64>().is_ok() || s.parse::<u64>().is_ok();
        (!fits).then_some("int:")
    } else {
        kept_as_written(t).then_some("num:")
    }
}

/// Whether a number token is one of [`Special::Float`]: written as JSON writes a number, with
/// a fraction or an exponent, and of more than 768 characters, or read by a 64-bit float as a
/// finite whole number that the text is not. Only the tokens [`may_read_whole`] lets through
/// are parsed here.
fn kept_as_written(t: &[u8]) -> bool {
    let Some((int, frac, exponent)) = json_number(t) else { return false };
    if frac.is_empty() && exponent.is_none() {
        return false;
    }
    if t.len() <= 768 && !may_read_whole(int, frac, exponent.unwrap_or(0)) {
        return false;
    }
    let Ok(s) = std::str::from_utf8(t) else { return false };
    if t.len() > 768 {
        return s.parse::<f64>().is_ok_and(f64::is_finite);
    }
    s.parse::<f64>().is_ok_and(|f| f.is_finite() && f.fract() == 0.0)
        && !whole_digits(int, frac, i128::from(exponent.unwrap_or(0)))
}

/// A token that is a number as JSON writes one (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`):
/// its integer digits, its fraction's digits and its exponent (saturated at ±10^12); or
/// `None`. (The fast path scans numbers in place inside a line, where the token's end is not
/// known yet: it keeps a scanner of its own, [`super::direct`].)
fn json_number(t: &[u8]) -> Option<(&[u8], &[u8], Option<i64>)> {
    let digits = |from: usize| from + t[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let start = usize::from(t.first() == Some(&b'-'));
    let int_end = digits(start);
    let int = &t[start..int_end];
    if int.is_empty() || int[0] == b'0' && int.len() > 1 {
        return None;
    }
    let mut at = int_end;
    let mut frac: &[u8] = &[];
    if t.get(at) == Some(&b'.') {
        let end = digits(at + 1);
        frac = &t[at + 1..end];
        if frac.is_empty() {
            return None;
        }
        at = end;
    }
    let mut exponent = None;
    if matches!(t.get(at), Some(b'e' | b'E')) {
        at += 1;
        let negative = t.get(at) == Some(&b'-');
        if matches!(t.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let end = digits(at);
        if end == at {
            return None;
        }
        let magnitude = t[at..end].iter().fold(0i64, |v, d| (v * 10 + i64::from(d - b'0')).min(EXPONENT_CAP));
        exponent = Some(if negative { -magnitude } else { magnitude });
        at = end;
    }
    (at == t.len()).then_some((int, frac, exponent))
}

/// Whether a 64-bit float may read the number `int.frac × 10^exponent` as a whole one it is
/// not, judged from its digits alone. A float keeps 15 significant digits exactly, so a
/// number of 16 or more may round to a whole one only when its digits after the units, up to
/// the 15th, are all 0 or all 9 (`2.0000000000000000001`, `0.99999999999999999`), or when it
/// has 15 digits or more before the point; and any number below 1e-300 may read as 0.
fn may_read_whole(int: &[u8], frac: &[u8], exponent: i64) -> bool {
    let zeros = |d: &[u8]| d.iter().take_while(|&&b| b == b'0').count();
    let lead = if zeros(int) < int.len() { zeros(int) } else { int.len() + zeros(frac) };
    let count = int.len() + frac.len() - lead;
    if count == 0 {
        return false;
    }
    // the first significant digit is worth 0.d × 10^point
    let point = int.len() as i64 - lead as i64 + exponent;
    if point <= -300 {
        return true;
    }
    if count < 16 {
        return false;
    }
    if point >= 15 {
        return true;
    }
    let digit = |i: usize| {
        let j = lead + i;
        if j < int.len() { int[j] } else { frac[j - int.len()] }
    };
    if point <= 0 {
        // below 1: only 0.999... may round up to 1
        return point == 0 && (0..15).all(|i| digit(i) == b'9');
    }
    let first = digit(point as usize);
    (first == b'0' || first == b'9') && (point as usize..15).all(|i| digit(i) == first)
}

/// Whether the number written `s` (`12`, `-1.50`, `2.5e3`, `1e-400`, `+1.`: the forms JSON and
/// Rust's float parser take) is a whole number, exactly as written: `2.0000000000000000001`
/// and `1e-400` are not, though a 64-bit float reads them as 2 and 0. `None` for text that is
/// no such number (`nan`, `inf`, words).
pub(crate) fn written_whole(s: &str) -> Option<bool> {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let v = digits.bytes().fold(0i64, |v, d| (v * 10 + i64::from(d - b'0')).min(EXPONENT_CAP));
            if e.starts_with('-') { -v } else { v }
        }
    };
    Some(whole_digits(int.as_bytes(), frac.as_bytes(), i128::from(exponent)))
}

/// An exponent's magnitude, saturated: beyond it, the exponent decides alone.
const EXPONENT_CAP: i64 = 1_000_000_000_000;

/// Whether the number of digits `int`.`frac` times 10^`exponent` is whole: the value is the
/// digits times 10^(exponent − frac's length), and each trailing zero of the digits moves one
/// power of ten over.
fn whole_digits(int: &[u8], frac: &[u8], exponent: i128) -> bool {
    let all = || int.iter().chain(frac);
    if all().all(|&b| b == b'0') {
        return true;
    }
    let trailing_zeros = all().rev().take_while(|&&b| b == b'0').count() as i128;
    exponent - frac.len() as i128 + trailing_zeros >= 0
}

/// Rewrites one complete text (a JSONL line). Returns `None` when nothing needed rewriting,
/// so the caller can parse the original bytes.
pub fn rewrite(input: &[u8]) -> Option<Vec<u8>> {
    // Fast path: without 'N', 'I', or a number token that needs a mark, there is nothing to
    // rewrite.
    if memchr::memchr2(b'N', b'I', input).is_none() && !has_marked_number(input) {
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
/// `<digits>` (9 fewer), `"\u{FDD0}num:<token>"` to `<token>` (9 fewer).
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
            removed += mark.len() + 1 + if body.starts_with(b"int:") || body.starts_with(b"num:") { 4 } else { 0 };
        }
    }
    column.saturating_sub(removed)
}

/// Fewest digits in a row that make a token worth a look: an integer beyond 64 bits has 19.
const LONG_RUN: usize = 19;

/// Whether `input` holds a run of `LONG_RUN` or more ASCII digits for which `check` (given the
/// run's range) is true. Only every `LONG_RUN`-th byte is probed (any such run covers one of
/// them); the run around a digit probe is then measured, and probing resumes `LONG_RUN` bytes
/// past its end.
fn any_long_run(input: &[u8], mut check: impl FnMut(std::ops::Range<usize>) -> bool) -> bool {
    let mut i = LONG_RUN - 1;
    while i < input.len() {
        if !input[i].is_ascii_digit() {
            i += LONG_RUN;
            continue;
        }
        let start = input[..i].iter().rposition(|b| !b.is_ascii_digit()).map_or(0, |p| p + 1);
        let end = input[i..].iter().position(|b| !b.is_ascii_digit()).map_or(input.len(), |p| i + p);
        if end - start >= LONG_RUN && check(start..end) {
            return true;
        }
        i = end + LONG_RUN;
    }
    false
}

/// The whole token around `at` (bytes a token may hold, as [`Lexer`] reads one).
fn token_around(input: &[u8], at: std::ops::Range<usize>) -> &[u8] {
    let start = input[..at.start].iter().rposition(|b| !is_token_byte(*b)).map_or(0, |p| p + 1);
    let end = input[at.end..].iter().position(|b| !is_token_byte(*b)).map_or(input.len(), |p| at.end + p);
    &input[start..end]
}

/// Whether `input` may hold a number token that [`Lexer`] marks: an integer beyond 64 bits or
/// a [`Special::Float`]. Only a few tokens are looked at whole, those that [`may_read_whole`]
/// could let through:
/// - around a run of 19 digits or more, but for a fraction's of 700 digits or fewer (a big
///   integer, a token that may be longer than 768 characters);
/// - with an exponent;
/// - with a point, when the digits around it are those of a number just above or below a
///   whole one: `d.0…` or `d.9…` (two alike when the integer part leaves room for two),
///   `0.99…`, `0.000000000000000…`, or 15 digits before the point.
///
/// A token inside a string may be looked at too: that only costs the rewrite a look that
/// changes nothing.
fn has_marked_number(input: &[u8]) -> bool {
    let marked = |at: std::ops::Range<usize>| number_mark(token_around(input, at)).is_some();
    let long_run =
        |at: std::ops::Range<usize>| (at.start == 0 || input[at.start - 1] != b'.' || at.len() > 700) && marked(at);
    let near_whole = |p: usize| {
        let int = input[..p].iter().rev().take_while(|b| b.is_ascii_digit()).take(15).count();
        let after = &input[p + 1..];
        let first = after.first().copied().unwrap_or(0);
        match int {
            0 => false,
            1 if input[p - 1] == b'0' => after.starts_with(b"99") || after.starts_with(&[b'0'; 15]),
            // 14 digits before the point leave one after it to be alike
            14.. => true,
            _ => (first == b'0' || first == b'9') && after.get(1) == Some(&first),
        }
    };
    let exponent = |i: usize| {
        i > 0 && input[i - 1].is_ascii_digit() && {
            let rest = &input[i + 1..];
            let rest = rest.strip_prefix(b"-").or_else(|| rest.strip_prefix(b"+")).unwrap_or(rest);
            rest.first().is_some_and(u8::is_ascii_digit)
        }
    };
    any_long_run(input, long_run)
        || memchr::memchr_iter(b'.', input).any(|p| near_whole(p) && marked(p..p + 1))
        || memchr::memchr2_iter(b'e', b'E', input).any(|i| exponent(i) && marked(i..i + 1))
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
                    assert_eq!(any_long_run(&v, |_| true), naive(&v), "{}", String::from_utf8_lossy(&v));
                }
            }
        }
    }

    /// Every token [`Lexer`] marks is found by the look before it (the look may find more).
    #[test]
    fn the_look_before_the_rewrite_misses_no_marked_token() {
        let mut tokens: Vec<String> = Vec::new();
        for int in ["0", "1", "7", "12", "123456789", "12345678901234", "123456789012345", "9007199254740993"] {
            for frac in [
                "",
                "0",
                "5",
                "00000000000000001",
                "99999999999999999",
                "0000000000000000000001",
                "9999999999999999999999",
                "1234567891",
                "5000000000000000",
            ] {
                for exp in ["", "e0", "e1", "e-1", "e5", "E+16", "e-17", "e-330", "e-999", "e400"] {
                    for sign in ["", "-"] {
                        let dot = if frac.is_empty() { "" } else { "." };
                        tokens.push(format!("{sign}{int}{dot}{frac}{exp}"));
                    }
                }
            }
        }
        tokens.push(format!("0.{}1", "0".repeat(330)));
        tokens.push(format!("1.{}1", "0".repeat(800)));
        tokens.push(format!("1.{}", "21".repeat(400)));
        let mut marked = 0;
        for t in &tokens {
            for line in [format!("{{\"k\": {t}}}"), format!("[{t},1]"), t.clone()] {
                let needs = number_mark(t.as_bytes()).is_some();
                marked += usize::from(needs);
                assert!(!needs || has_marked_number(line.as_bytes()), "{line}");
            }
        }
        assert!(marked > 100, "{marked}");
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
    fn marks_the_floats_that_read_as_a_whole_number_they_are_not() {
        for (token, marked) in [
            ("2.0000000000000000001", true),
            ("4503599627370496.5", true),
            ("0.99999999999999999", true),
            ("1e-400", true),
            ("-1.0e-999", true),
            ("99999999999999999e-1", true),
            ("0.30000000000000004", false),
            ("2.0000000000000000000", false),
            ("1.5e-320", false),
            ("0.0e-999", false),
            ("1e-5", false),
            ("12345678901234567", false),
            ("1.5e400", false),
            ("01.5", false),
        ] {
            let line = format!("{{\"x\": {token}}}");
            let want = if marked { format!("{{\"x\": \"\u{FDD0}num:{token}\"}}") } else { line.clone() };
            assert_eq!(rw(&line), want, "{token}");
        }
        // longer than 768 characters: marked, to be read by the standard library
        let long = format!("1.{}1", "0".repeat(800));
        assert_eq!(special(&rw(&format!("[{long}]"))[2..long.len() + 9]), Some(Special::Float(&long)));
    }

    #[test]
    fn tells_whole_numbers_as_written() {
        for (s, whole) in [
            ("12", Some(true)),
            ("-1.50", Some(false)),
            ("2.5e1", Some(true)),
            ("2.55e1", Some(false)),
            ("1e-400", Some(false)),
            ("0.0e-999", Some(true)),
            ("-0.0", Some(true)),
            ("+1.", Some(true)),
            (".5", Some(false)),
            ("1200e-2", Some(true)),
            ("1201e-2", Some(false)),
            ("1e99999999999999999999", Some(true)),
            ("1e-99999999999999999999", Some(false)),
            ("nan", None),
            ("1e", None),
            ("", None),
        ] {
            assert_eq!(written_whole(s), whole, "{s}");
        }
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
