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

mod args;
mod commands;
mod error;
mod input;
mod report;

use clap::{Parser, Subcommand};
use commands::*;
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
    Solve(args::SolveArgs),
    /// Run a schedule file on a chain and report time, peak and validity.
    Simulate(args::SimulateArgs),
    /// Makespan overhead of each algorithm for budgets from M_low to M_high.
    Sweep(args::SweepArgs),
    /// The largest batch each method runs within a device's memory, and its
    /// throughput.
    Maxbatch(args::MaxbatchArgs),
    /// One plan per pipeline rank (GPipe or 1F1B), each judged with its
    /// micro-batches in flight.
    Pipeline(args::PipelineArgs),
    /// Convert rotor's chain parameters to remat-chain/1.
    Convert(args::ConvertArgs),
    /// The checkpoint set of least peak memory (Hong et al.), or the peak of
    /// a given set, with its memory curve.
    Checkpoints(args::CheckpointsArgs),
    /// Write a schedule as torch.utils.checkpoint segments (when it is one).
    Export(args::ExportArgs),
    /// List the algorithms.
    Algorithms,
    /// List the built-in example chains, or write one to a file.
    Examples(args::ExamplesArgs),
    /// Measure the solvers and the simulator on this machine.
    Bench(args::BenchArgs),
}

/// Parses the command line into typed arguments (clap prints its own
/// errors and exits 2 for a value that does not parse), runs the command,
/// and prints its error, if any, as `error: …` with its exit status.
fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Solve(a) => solve::run(&a),
        Command::Simulate(a) => simulate::run(&a),
        Command::Sweep(a) => sweep::run(&a),
        Command::Maxbatch(a) => maxbatch::run(&a),
        Command::Pipeline(a) => pipeline::run(&a),
        Command::Convert(a) => convert::run(&a),
        Command::Checkpoints(a) => checkpoints::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Algorithms => {
            algorithms::run();
            Ok(())
        }
        Command::Examples(a) => examples::run(&a),
        Command::Bench(a) => bench::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
