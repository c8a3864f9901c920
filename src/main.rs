//! The `runpack` command: parses arguments, runs the verb, maps the outcome to an exit code
//! (0 success, 1 invalid data or failed verification, 2 any other error).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// mimalloc serves the many small, short-lived allocations of parsing records across threads
/// much faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stack of the thread that runs the command, in bytes: SQL planning recurses over long
/// expressions.
const STACK_BYTES: usize = 256 << 20;

/// Turns transparent huge pages off for this process (Linux, `prctl(PR_SET_THP_DISABLE)`).
/// mimalloc asks for them on the memory it maps, and then the first touch of every fresh
/// 2 MiB zeroes all of it: measured on 1 GB of generated logs, a `GROUP BY` over 416,000
/// rows took ~9 % longer and a build held ~30 MiB more and used ~2 % more CPU with them.
/// Failure (an old kernel) changes nothing but speed, so it is ignored.
#[cfg(target_os = "linux")]
fn without_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integers only and reads or writes none of our memory.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    without_transparent_huge_pages();
    runpack::core::error::install_panic_hook();
    let cli = runpack::cli::Cli::parse();
    runpack::cli::init_tracing(cli.verbose, cli.quiet);
    let build = cli.is_build();
    let worker = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || match runpack::cli::run(cli) {
        Ok(code) => code,
        Err(err) => runpack::cli::report(&err, build),
    });
    match worker.map(|w| w.join()) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(payload)) => {
            let seen = runpack::core::error::take_panic();
            let what = seen.unwrap_or_else(|| runpack::core::error::panic_message(payload.as_ref()));
            // written as it can be: a closed stderr must not turn this into a second panic
            let _ = writeln!(
                std::io::stderr(),
                "error: runpack stopped on an internal error: {what}\n\
                 this is a bug in runpack; please report it with the command that led to it \
                 (RUST_BACKTRACE=1 prints where it happened)"
            );
            ExitCode::from(2)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: cannot start the command's thread: {e}");
            ExitCode::from(2)
        }
    }
}
