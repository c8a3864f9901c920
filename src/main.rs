//! The `runpack` command: parses arguments, runs the verb, maps the outcome to an exit code
//! (0 success, 1 invalid data or failed verification, 2 any other error).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = runpack::cli::Cli::parse();
    runpack::cli::init_tracing(cli.verbose, cli.quiet);
    match runpack::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => ExitCode::from(runpack::cli::report(&err)),
    }
}
