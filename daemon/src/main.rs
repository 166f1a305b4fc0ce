//! Entry point of `openhumand-mcp`: parse the command line and hand over to the library.

use clap::Parser;

// The daemon allocates many short-lived JSON values per call; mimalloc handles that pattern far
// better than the system allocator (measured in BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = match openhuman_daemon::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let code = if e.use_stderr() { openhuman_daemon::EXIT_USAGE } else { openhuman_daemon::EXIT_OK };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(openhuman_daemon::main_with(cli));
}
