//! Links the `runpack` executable at a fixed address on Linux with the GNU toolchain
//! (`-no-pie`).
//!
//! Why: a position-independent executable is relocated by the dynamic loader at every start.
//! runpack's ~100 MB of code hold pointer tables (vtables, DataFusion's function registries)
//! on about 1,200 pages that each relocation writes to: measured, `runpack query REL
//! 'SELECT 1'` took 2,045 page faults and 13 ms as a whole process, against 880 and 6-8 ms
//! linked at a fixed address. Shared libraries are still placed at random addresses.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
