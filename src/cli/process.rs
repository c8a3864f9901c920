//! The `runpack` process: parses arguments, runs the verb on a thread with a large stack, and
//! maps the outcome to an exit code (0 success, 1 invalid data or failed verification, 2 any
//! other error, a panic included).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser as _;

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

/// Runs the command line of this process and returns its exit code. Panics of the command
/// are caught and said as an internal error (exit code 2).
pub fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    without_transparent_huge_pages();
    crate::core::error::install_panic_hook();
    let cli = match super::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // help and the version go to stdout: one that cannot be written (a full disk) is
            // said, as any document that cannot be; a reader gone away (`| head`) is not
            let printed = e.print().and_then(|()| std::io::stdout().flush());
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            return match printed {
                Err(w) if code == 0 && w.kind() != std::io::ErrorKind::BrokenPipe => {
                    let _ = writeln!(std::io::stderr(), "error: <stdout>: {w}");
                    ExitCode::from(2)
                }
                _ => ExitCode::from(code),
            };
        }
    };
    super::init_tracing(cli.verbose, cli.quiet);
    let build = cli.is_build();
    let verbose = cli.verbose > 0 && !cli.quiet;
    let json = cli.reports_json();
    // a build that broke the rules says its warnings as one that succeeds does
    let warn = build && !json && !cli.quiet;
    let worker = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || match super::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let code = super::report(&err, warn, build, verbose);
            // a build's violations are already a document of their own
            if json && !(build && matches!(err, crate::core::error::Error::Invalid { .. })) {
                let _ = writeln!(std::io::stdout(), "{:#}", super::error_json(&err, code));
            }
            code
        }
    });
    match worker.map(|w| w.join()) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(payload)) => {
            let seen = crate::core::error::take_panic();
            let what = seen.unwrap_or_else(|| crate::core::error::panic_message(payload.as_ref()));
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
