//! `remat-profile`: measures a real network into a `remat-chain/1` chain,
//! and runs a `remat-schedule/1` schedule for one training step to show
//! that the plan holds (measured against predicted peak and time, and the
//! parameter gradients against a plain store-all step).
//!
//! libtorch comes through tch behind the feature `torch`; without it the
//! binary lists its models and says how to build it. See docs/profiler.md.

mod models;
#[cfg(feature = "torch")]
mod torch;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "remat-profile",
    version,
    about = "Profile real networks into remat chains; run a schedule for one training step"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lists the built-in networks.
    Models,
    /// Measures a network, stage by stage, into a remat-chain/1 file.
    Profile {
        #[arg(long)]
        model: String,
        #[arg(long)]
        batch: i64,
        /// Image side in pixels (convolutional nets).
        #[arg(long)]
        image: Option<i64>,
        /// Sequence length (gpt2).
        #[arg(long)]
        seq: Option<i64>,
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Timed store-all steps after the warm-up (the median is kept).
        #[arg(long, default_value_t = 5)]
        steps: usize,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Runs one training step following a schedule and compares it with the prediction.
    Run {
        /// The chain the schedule was made for (written by `profile`); its
        /// source names the model, batch and size.
        #[arg(long)]
        chain: PathBuf,
        #[arg(long)]
        schedule: PathBuf,
        /// Must agree with the chain's model when given.
        #[arg(long)]
        model: Option<String>,
        #[arg(long, default_value = "cpu")]
        device: String,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// Failures: bad input (exit 2) or a run that could not be done (exit 1).
#[derive(Debug)]
pub enum Failure {
    BadInput(String),
    Runtime(String),
}

impl From<models::ArgError> for Failure {
    fn from(e: models::ArgError) -> Failure {
        Failure::BadInput(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}

fn check_device(device: &str) -> Result<(), Failure> {
    match device {
        "cpu" => Ok(()),
        "cuda" => Err(Failure::Runtime(
            "--device: cuda is not built in this binary (feature `cuda` is not implemented yet); use --device cpu".into(),
        )),
        other => Err(Failure::BadInput(format!(
            "--device: expected cpu or cuda, got \"{other}\""
        ))),
    }
}

fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Models => {
            for m in models::MODELS {
                let arg = match m.input {
                    models::InputKind::Image { default_px, .. } => {
                        format!("--image PX (default {default_px})")
                    }
                    models::InputKind::Tokens { default_seq, .. } => {
                        format!("--seq N (default {default_seq})")
                    }
                };
                println!("{:<10} {}  [{}]", m.name, m.description, arg);
            }
            Ok(())
        }
        Command::Profile {
            model,
            batch,
            image,
            seq,
            device,
            steps,
            output,
        } => {
            let spec = models::ModelSpec::new(&model, batch, image, seq)?;
            check_device(&device)?;
            if !(1..=1000).contains(&steps) {
                return Err(Failure::BadInput(format!(
                    "--steps: must be 1..=1000, got {steps}"
                )));
            }
            profile(&spec, steps, &output)
        }
        Command::Run {
            chain,
            schedule,
            model,
            device,
            json,
        } => {
            check_device(&device)?;
            let read = |p: &PathBuf, flag: &str| {
                std::fs::read_to_string(p).map_err(|e| {
                    Failure::BadInput(format!("{flag}: cannot read {}: {e}", p.display()))
                })
            };
            let chain_text = read(&chain, "--chain")?;
            let chain = remat_core::format::read_any_chain(&chain_text)
                .map_err(|e| Failure::BadInput(format!("--chain: {e}")))?;
            let schedule = remat_core::format::read_schedule(&read(&schedule, "--schedule")?)
                .map_err(|e| Failure::BadInput(format!("--schedule: {e}")))?;
            schedule
                .check_chain(&chain)
                .map_err(|e| Failure::BadInput(format!("--schedule: {e}")))?;
            let spec = models::ModelSpec::from_source(&chain.source)?;
            if let Some(m) = model {
                models::info(&m)?;
                if m != spec.name {
                    return Err(Failure::BadInput(format!(
                        "--model: {m}, but the chain was measured on {}",
                        spec.name
                    )));
                }
            }
            run_schedule(&spec, &chain, &schedule, json)
        }
    }
}

#[cfg(feature = "torch")]
fn profile(
    spec: &models::ModelSpec,
    steps: usize,
    output: &std::path::Path,
) -> Result<(), Failure> {
    let chain = torch::profile::profile(spec, steps).map_err(Failure::Runtime)?;
    std::fs::write(output, remat_core::format::write_chain(&chain))
        .map_err(|e| Failure::BadInput(format!("-o: cannot write {}: {e}", output.display())))?;
    eprintln!("wrote {} ({} stages)", output.display(), chain.len());
    Ok(())
}

#[cfg(feature = "torch")]
fn run_schedule(
    spec: &models::ModelSpec,
    chain: &remat_core::Chain,
    schedule: &remat_core::format::ScheduleFile,
    json: bool,
) -> Result<(), Failure> {
    let report = torch::runner::run(spec, chain, schedule)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else {
        println!("{}", report.human());
    }
    Ok(())
}

#[cfg(not(feature = "torch"))]
const NO_TORCH: &str = "remat-profile was built without the `torch` feature: run scripts/setup-libtorch.sh, then build with LIBTORCH=$PWD/.tools/libtorch/torch cargo build --release -p remat-profiler --features torch";

#[cfg(not(feature = "torch"))]
fn profile(_: &models::ModelSpec, _: usize, _: &std::path::Path) -> Result<(), Failure> {
    Err(Failure::Runtime(NO_TORCH.into()))
}

#[cfg(not(feature = "torch"))]
fn run_schedule(
    _: &models::ModelSpec,
    _: &remat_core::Chain,
    _: &remat_core::format::ScheduleFile,
    _: bool,
) -> Result<(), Failure> {
    Err(Failure::Runtime(NO_TORCH.into()))
}
