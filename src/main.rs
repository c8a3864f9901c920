//! The `runpack` command: parses arguments, runs the verb, maps the outcome to an exit code
//! (0 success, 1 invalid data or failed verification, 2 any other error).

use std::process::ExitCode;

use clap::Parser;

/// mimalloc serves the many small, short-lived allocations of parsing records across threads
/// much faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stack of the thread that runs the command, in bytes: SQL planning recurses over long
/// expressions.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let cli = runpack::cli::Cli::parse();
    runpack::cli::init_tracing(cli.verbose, cli.quiet);
    let worker = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || match runpack::cli::run(cli) {
        Ok(code) => code,
        Err(err) => runpack::cli::report(&err),
    });
    match worker.map(|w| w.join()) {
        Ok(Ok(code)) => ExitCode::from(code),
        _ => ExitCode::from(2),
    }
}
