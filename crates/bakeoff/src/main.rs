//! The `bakeoff` command: parses arguments and hands them to the library.

use clap::Parser;

fn main() {
    let cli = bakeoff::cli::Cli::parse();
    std::process::exit(bakeoff::app::main(cli));
}
