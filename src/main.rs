//! The `runpack` command: [`runpack::cli::main`] parses arguments, runs the verb and maps the
//! outcome to an exit code (0 success, 1 invalid data or failed verification, 2 any other
//! error).

/// mimalloc serves the many small, short-lived allocations of parsing records across threads
/// much faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc's option setter, declared here: the `mimalloc` crate binds it only with its
// `extended` feature, which adds a crate to the tree for this one call
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // mimalloc gives memory freed back to the system after 10 ms; a build frees and takes
    // again hundreds of MB as its batches go by, and each page taken again is a page fault
    // and a page cleared (about 3 % of a build's time on 1 GB, measured side by side; the
    // peak of a build with copies grew from 404-426 to 414-470 MiB). The cluster's
    // long-running servers keep the default (so does any command with an argument `cluster`).
    if !std::env::args_os().any(|a| a == "cluster") {
        // SAFETY: a plain setter of an integer option, called before any other thread runs
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
    runpack::cli::main()
}
