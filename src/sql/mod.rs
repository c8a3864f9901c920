//! SQL: the DataFusion sessions shared by the stages and the verbs (session setup, their
//! memory pool, result printing, runpack's functions, the `GROUP BY` operator for text keys, the operator
//! for moving float sums, sessions whose plans run on a Ballista cluster).

pub mod clock;
pub mod coercion;
pub mod engine;
mod exact;
mod floatsum;
pub mod groups;
mod intsum;
pub mod join;
pub mod memory;
pub mod nan;
pub mod overflow;
pub mod print;
pub mod session;
pub mod subquery;
pub mod udf;
pub mod window;
