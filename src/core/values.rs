//! Values compared as runpack compares them: JSON numbers exactly (integers as integers), JSON
//! Pointers in document order.

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::DataType;

/// A number of a cell or a constraint: integers stay integers, so that bounds and `enum`
/// values above 2^53 compare exactly (as 64-bit floats, 2^53 + 1 would equal 2^53), with each
/// other and with floats.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// The number in row `r` of an integer or float column (`None` for other types).
    pub(crate) fn at(a: &ArrayRef, r: usize) -> Option<Num> {
        match a.data_type() {
            DataType::Int64 => Some(Num::Int(a.as_primitive::<arrow::datatypes::Int64Type>().value(r).into())),
            DataType::UInt64 => Some(Num::Int(a.as_primitive::<arrow::datatypes::UInt64Type>().value(r).into())),
            DataType::Float64 => Some(Num::Float(a.as_primitive::<arrow::datatypes::Float64Type>().value(r))),
            _ => None,
        }
    }

    /// A JSON number.
    pub(crate) fn of(n: &serde_json::Number) -> Num {
        match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Num::Int(i.into()),
            (None, Some(u)) => Num::Int(u.into()),
            _ => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    pub(crate) fn is_nan(self) -> bool {
        matches!(self, Num::Float(x) if x.is_nan())
    }

    /// Exact, also between an integer and a float (`None` with a NaN).
    pub(crate) fn cmp(self, other: Num) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
            (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b),
            (Num::Int(a), Num::Float(b)) => int_cmp_float(a, b),
            (Num::Float(a), Num::Int(b)) => int_cmp_float(b, a).map(std::cmp::Ordering::reverse),
        }
    }
}

/// Orders integer `i` against float `f` without rounding `i` to a float: by `f`'s integer
/// part, then by its fraction.
fn int_cmp_float(i: i128, f: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    // 2^127: no i128 reaches it
    const LIMIT: f64 = 170141183460469231731687303715884105728.0;
    if f.is_nan() {
        return None;
    }
    if f >= LIMIT {
        return Some(Ordering::Less);
    }
    if f < -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    Some(i.cmp(&(whole as i128)).then(if f > whole {
        Ordering::Less
    } else if f < whole {
        Ordering::Greater
    } else {
        Ordering::Equal
    }))
}

/// Whether `text` stands for a missing value where a number or a boolean is expected: empty,
/// punctuation alone (`-`, `?`, `--`), or, in any case, `n/a`, `na`, `n.a.`, `none`, `null`,
/// `nil`, `missing`, Excel's `#N/A` and pandas' `<NA>`; spaces around ignored. Such a text
/// decides no column's type when the input is typed by reading it, and `runpack init` lists it
/// in the column's `missingValues` (Table Schema v2). Excel's error values (`#DIV/0!`,
/// `#VALUE!`) say a formula failed, not that a value is missing: they are not among them.
pub fn missing_text(text: &str) -> bool {
    const WORDS: [&str; 10] = ["n/a", "na", "n.a.", "none", "null", "nil", "missing", "#n/a", "#na", "<na>"];
    let t = text.trim();
    !t.chars().any(char::is_alphanumeric) || WORDS.iter().any(|m| t.eq_ignore_ascii_case(m))
}

/// Orders two JSON numbers exactly (integers as integers, an integer against a float without
/// rounding); `None` when either is NaN.
pub fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Option<std::cmp::Ordering> {
    Num::of(a).cmp(Num::of(b))
}

/// The document order of two JSON Pointers, as their [`pointer_order_key`]s compare, without
/// building the keys (rejects and messages are sorted by place).
pub(crate) fn compare_pointers(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // the reference tokens, as `pointer_order_key` reads them (a text that is no pointer is one)
    fn tokens(p: &str) -> impl Iterator<Item = &str> {
        let rest = match p.strip_prefix('/') {
            Some(rest) => Some(rest),
            None if p.is_empty() => None,
            None => Some(p),
        };
        rest.into_iter().flat_map(|r| r.split('/'))
    }
    let index = |t: &str| t.bytes().all(|b| b.is_ascii_digit()).then(|| t.parse::<u64>().ok()).flatten();
    let (mut ta, mut tb) = (tokens(a), tokens(b));
    loop {
        let (x, y) = match (ta.next(), tb.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => (x, y),
        };
        let order = match (index(x), index(y)) {
            (Some(i), Some(j)) => i.cmp(&j),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => x.as_bytes().cmp(y.as_bytes()),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
}

/// Whether the number written `s` was read as `f` = 0 though it is not zero (`1e-400`): below
/// the smallest 64-bit float, a value the float would change.
pub(crate) fn underflows_to_zero(s: &str, f: f64) -> bool {
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    f == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// Whether the number written `s` is changed by reading it as the 64-bit float `f`: below the
/// smallest float (`1e-400` read as 0), beyond the largest (`1e400` read as infinite; the words
/// `inf` and `NaN` hold no digit, and are the values they name), or an integer a float cannot
/// hold exactly (`9007199254740993`, 2^53 + 1, read as 2^53).
pub(crate) fn float_text_changed(s: &str, f: f64) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let inexact = integer && f.is_finite() && s.parse::<i128>().ok().is_none_or(|v| f as i128 != v);
    underflows_to_zero(s, f) || (f.is_infinite() && s.bytes().any(|b| b.is_ascii_digit())) || inexact
}

/// `column` with every NaN of a float column, or of the floats inside its lists, structs and
/// maps, made the one quiet NaN with the sign bit clear.
/// SQL can make a NaN with the sign bit set (`0.0 / 0.0` on x86, `-x`), which Arrow's total
/// order puts below every number: `max` would pass it over and `ORDER BY … DESC` put it last.
/// A NaN's sign and payload mean nothing, so a release holds only the NaN that sorts above
/// every number, as README says NaN does; the sort and the order checks compare keys so made,
/// so that rows are in order as stored. Other columns are returned as they are.
pub fn positive_nan(column: &arrow::array::ArrayRef) -> arrow::array::ArrayRef {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::DataType;
    use arrow::datatypes::{Float32Type, Float64Type};
    match column.data_type() {
        DataType::Float64 => {
            let values = column.as_primitive::<Float64Type>();
            if !values.values().iter().any(|v| v.is_nan() && v.is_sign_negative()) {
                return column.clone();
            }
            std::sync::Arc::new(values.unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v }))
        }
        DataType::Float32 => {
            let values = column.as_primitive::<Float32Type>();
            if !values.values().iter().any(|v| v.is_nan() && v.is_sign_negative()) {
                return column.clone();
            }
            std::sync::Arc::new(values.unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v }))
        }
        // lists, structs and maps: their float values at any depth
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::FixedSizeList(..)
        | DataType::Struct(_)
        | DataType::Map(..) => {
            let data = column.to_data();
            let children: Vec<arrow::array::ArrayRef> =
                data.child_data().iter().map(|c| positive_nan(&arrow::array::make_array(c.clone()))).collect();
            if children.iter().zip(data.child_data()).all(|(new, old)| new.to_data().ptr_eq(old)) {
                return column.clone();
            }
            let rebuilt = data.into_builder().child_data(children.iter().map(|c| c.to_data()).collect()).build();
            match rebuilt {
                Ok(d) => arrow::array::make_array(d),
                Err(_) => column.clone(),
            }
        }
        _ => column.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::missing_text;

    #[test]
    fn texts_that_stand_for_a_missing_value() {
        for t in
            ["", " ", "-", "--", "?", "n/a", "N/A", " NA ", "n.a.", "None", "NULL", "nil", "Missing", "#N/A", "<NA>"]
        {
            assert!(missing_text(t), "{t:?}");
        }
        for t in ["0", "nan", "NaN", "error", "#DIV/0!", "#VALUE!", "n/a: timeout", "na7", "false"] {
            assert!(!missing_text(t), "{t:?}");
        }
    }
}
