//! `remat`: solve, simulate, sweep, convert and benchmark checkpointing
//! schedules. The contract (flags, JSON fields, exit codes) is in
//! `docs/cli.md`: exit 0 on success (an infeasible budget is a
//! result), 2 on bad input with the error on stderr.

/// `println!` that ignores a closed stdout (`remat … | head`), where
/// `println!` would panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod bench;
mod commands;
mod export;
mod input;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "remat",
    version,
    about = "Plan what to recompute and what to keep so a training step fits in memory",
    after_help = "CHAIN is a chain file (remat-chain/1 or rotor's fw/bw/cw/cbw/ftmp/btmp) or example:NAME (see `remat examples`).\nSIZE is bytes or units (8GiB, 512MiB, 3.5GB); RATE is bytes/s or units (12GB/s)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Find a schedule for a budget.
    Solve(commands::SolveArgs),
    /// Run a schedule file on a chain and report time, peak and validity.
    Simulate(commands::SimulateArgs),
    /// Makespan overhead of each algorithm for budgets from M_low to M_high.
    Sweep(commands::SweepArgs),
    /// Convert rotor's chain parameters to remat-chain/1.
    Convert(commands::ConvertArgs),
    /// Write a schedule as torch.utils.checkpoint segments (when it is one).
    Export(export::ExportArgs),
    /// List the algorithms.
    Algorithms,
    /// List the built-in example chains, or write one to a file.
    Examples(commands::ExamplesArgs),
    /// Measure the solvers and the simulator on this machine.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(a) => commands::solve(a),
        Command::Simulate(a) => commands::simulate(a),
        Command::Sweep(a) => commands::sweep(a),
        Command::Convert(a) => commands::convert(a),
        Command::Export(a) => export::run(a),
        Command::Algorithms => commands::algorithms(),
        Command::Examples(a) => commands::examples(a),
        Command::Bench(a) => bench::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
