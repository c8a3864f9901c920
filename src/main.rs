//! The `runpack` command: [`runpack::cli::main`] parses arguments, runs the verb and maps the
//! outcome to an exit code (0 success, 1 invalid data or failed verification, 2 any other
//! error).

/// mimalloc serves the many small, short-lived allocations of parsing records across threads
/// much faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    runpack::cli::main()
}
