//! `remat-profile`: measures a real network into a `remat-chain/1` chain,
//! and runs a `remat-schedule/1` schedule for one training step to show
//! that the plan holds (measured against predicted peak and time, and the
//! parameter gradients against a plain store-all step).
//!
//! libtorch comes through tch behind the feature `torch`; without it the
//! binary lists its models and says how to build it. `--device cuda` needs
//! the feature `cuda` as well (and a GPU at run time). See docs/profiler.md.

mod arg_error;
mod models;
#[cfg(feature = "torch")]
mod torch;
mod user_model;

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
        /// A built-in network (see `models`).
        #[arg(long)]
        model: Option<String>,
        #[command(flatten)]
        scripted: ScriptedFiles,
        /// TorchScript input batch shape, batch first (e.g. 8,3,32,32).
        #[arg(long, value_name = "N,C,H,W")]
        input_shape: Option<String>,
        /// TorchScript input as integer tokens in [0, V) instead of normal floats.
        #[arg(long, value_name = "V")]
        input_vocab: Option<i64>,
        /// What the last TorchScript stage takes besides its input: classes:N or none.
        #[arg(long, default_value = "classes:10")]
        target: String,
        /// Batch size (built-in networks; a TorchScript model takes it from --input-shape).
        #[arg(long)]
        batch: Option<i64>,
        /// Image side in pixels (convolutional nets).
        #[arg(long)]
        image: Option<i64>,
        /// Sequence length (gpt2).
        #[arg(long)]
        seq: Option<i64>,
        #[command(flatten)]
        device: DeviceFlag,
        /// Timed store-all steps after the warm-up (the median is kept).
        #[arg(long, default_value_t = 5)]
        steps: usize,
        #[command(flatten)]
        threads: ThreadsFlag,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Writes a small TorchScript model (the tiny net: 3×16×16 images, 10
    /// classes) to try --torchscript / --torchscript-dir without Python.
    ExampleTorchscript {
        /// Write stage_001.pt … into the folder OUTPUT instead of one Sequential file.
        #[arg(long)]
        dir: bool,
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
        /// The network the chain was measured on, when it is your own (its digest must match).
        #[command(flatten)]
        scripted: ScriptedFiles,
        #[command(flatten)]
        device: DeviceFlag,
        #[command(flatten)]
        threads: ThreadsFlag,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `--threads N`: the CPU threads libtorch computes with (its intra-op
/// pool). A chain's times hold for the thread count they were taken with:
/// `profile` records it in the chain's source and `run` uses it again
/// unless told otherwise.
#[derive(clap::Args)]
struct ThreadsFlag {
    /// CPU threads (default: profile, one per core; run, the chain's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
}

/// Your own network as TorchScript (`profile` and `run` take the same two flags).
#[derive(clap::Args)]
struct ScriptedFiles {
    /// Your own network: a scripted nn.Sequential, each child a stage.
    #[arg(long, value_name = "FILE")]
    torchscript: Option<PathBuf>,
    /// Your own network: stage_001.pt, stage_002.pt, … one scripted module per stage.
    #[arg(long, value_name = "DIR")]
    torchscript_dir: Option<PathBuf>,
}

impl ScriptedFiles {
    fn given(&self) -> bool {
        self.torchscript.is_some() || self.torchscript_dir.is_some()
    }
}

/// `--device cpu|cuda`, checked by [`check_device`] before any file is read.
#[derive(clap::Args)]
struct DeviceFlag {
    /// Where the network runs: cpu, or cuda (the feature `cuda` and a GPU).
    #[arg(long = "device", value_name = "cpu|cuda", default_value = "cpu")]
    name: String,
}

/// Failures: bad input (exit 2) or a run that could not be done (exit 1).
#[derive(Debug)]
pub enum Failure {
    BadInput(String),
    Runtime(String),
}

impl From<arg_error::ArgError> for Failure {
    fn from(e: arg_error::ArgError) -> Failure {
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
    // libtorch reports errors that tch turns into panics (its infallible
    // methods unwrap). None should reach here — the inputs are checked
    // before anything is measured — but if one does, the user gets an error
    // line and exit 1, not a Rust backtrace (RUST_BACKTRACE=1 keeps it).
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli.command)));
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(Failure::BadInput(m))) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Ok(Err(Failure::Runtime(m))) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
        Err(payload) => {
            eprintln!(
                "error: {} (an internal error of remat-profile: please report it with the command line)",
                panic_message(payload.as_ref())
            );
            ExitCode::from(1)
        }
    }
}

/// A panic's message, without the C++ backtrace libtorch appends to its
/// errors ("Exception raised from … frame #0 …").
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    let text = text.split("\nException raised from").next().unwrap_or(text);
    let text = text.split("Exception raised from").next().unwrap_or(text);
    text.trim().to_string()
}

/// The `--device` flag.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DeviceArg {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda,
}

/// Parses `--device`. A GPU is looked for at once (exit 1 with a message
/// when there is none), before any file is read; the CPU is set up where
/// the measurement starts, as before the `cuda` feature.
fn check_device(device: &str) -> Result<DeviceArg, Failure> {
    match device {
        "cpu" => Ok(DeviceArg::Cpu),
        "cuda" => cuda_device(),
        other => Err(Failure::BadInput(format!(
            "--device: expected cpu or cuda, got \"{other}\""
        ))),
    }
}

#[cfg(feature = "cuda")]
fn cuda_device() -> Result<DeviceArg, Failure> {
    torch::device::Device::Cuda
        .select()
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    Ok(DeviceArg::Cuda)
}

#[cfg(not(feature = "cuda"))]
fn cuda_device() -> Result<DeviceArg, Failure> {
    Err(Failure::Runtime(
        "--device: cuda is not built in this binary (it needs the feature `cuda`: cargo build --release -p remat-profiler --features torch,cuda, with a CUDA libtorch); use --device cpu".into(),
    ))
}

/// TorchScript models load on the CPU (src/shim/torchscript.cpp): not on a GPU yet.
fn check_torchscript_device(device: DeviceArg, torchscript: bool) -> Result<(), Failure> {
    if torchscript && device != DeviceArg::Cpu {
        return Err(Failure::BadInput(
            "--torchscript: TorchScript models run on the CPU only for now; use --device cpu or a built-in --model".into(),
        ));
    }
    Ok(())
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
            scripted,
            input_shape,
            input_vocab,
            target,
            batch,
            image,
            seq,
            device,
            steps,
            threads,
            output,
        } => {
            let spec = match model {
                Some(m) => {
                    if scripted.given() {
                        return Err(Failure::BadInput(
                            "--model: give --model NAME or --torchscript / --torchscript-dir, not both"
                                .into(),
                        ));
                    }
                    if input_shape.is_some() || input_vocab.is_some() {
                        return Err(Failure::BadInput(
                            "--input-shape: only for a TorchScript model; a built-in one takes --batch and --image / --seq".into(),
                        ));
                    }
                    let batch = batch.ok_or_else(|| {
                        Failure::BadInput("--batch: required with --model".into())
                    })?;
                    models::ModelSpec::new(&m, batch, image, seq)?
                }
                None => {
                    if image.is_some() || seq.is_some() {
                        return Err(Failure::BadInput(
                            "--image: only for built-in models; a TorchScript model takes --input-shape".into(),
                        ));
                    }
                    models::ModelSpec::torchscript(user_model::from_flags(
                        scripted.torchscript.as_deref(),
                        scripted.torchscript_dir.as_deref(),
                        input_shape.as_deref(),
                        input_vocab,
                        &target,
                        batch,
                    )?)
                }
            };
            let device = check_device(&device.name)?;
            check_torchscript_device(device, spec.torchscript.is_some())?;
            check_model(&spec)?;
            if !(1..=1000).contains(&steps) {
                return Err(Failure::BadInput(format!(
                    "--steps: must be 1..=1000, got {steps}"
                )));
            }
            profile(&spec, steps, threads.threads.map(usize::from), &output)
        }
        Command::ExampleTorchscript { dir, output } => {
            if dir {
                std::fs::create_dir_all(&output).map_err(|e| {
                    Failure::BadInput(format!("-o: cannot create {}: {e}", output.display()))
                })?;
            }
            write_example(&output, dir)
        }
        Command::Run {
            chain,
            schedule,
            model,
            scripted,
            device,
            threads,
            json,
        } => {
            let device = check_device(&device.name)?;
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
            let spec = if scripted.given() {
                models::ModelSpec::torchscript(user_model::from_source(
                    &chain.source,
                    scripted.torchscript.as_deref(),
                    scripted.torchscript_dir.as_deref(),
                )?)
            } else {
                models::ModelSpec::from_source(&chain.source)?
            };
            check_torchscript_device(device, spec.torchscript.is_some())?;
            check_model(&spec)?;
            if let Some(m) = model {
                models::info(&m)?;
                if m != spec.name {
                    return Err(Failure::BadInput(format!(
                        "--model: {m}, but the chain was measured on {}",
                        spec.name
                    )));
                }
            }
            run_schedule(
                &spec,
                &chain,
                &schedule,
                threads.threads.map(usize::from),
                json,
            )
        }
    }
}

/// Loads a TorchScript model once and runs a no-grad forward on its input,
/// so that a bad file or shape exits 2 naming the flag before profiling.
/// Without the feature `torch` there is nothing to load.
fn check_model(spec: &models::ModelSpec) -> Result<(), Failure> {
    #[cfg(feature = "torch")]
    if let Some(ts) = &spec.torchscript {
        return torch::torchscript::check(ts).map_err(Failure::from);
    }
    let _ = spec;
    Ok(())
}

// The three commands that need libtorch. Each has one signature; without
// the feature `torch` its body says how to build a binary that can.

fn profile(
    spec: &models::ModelSpec,
    steps: usize,
    threads: Option<usize>,
    output: &std::path::Path,
) -> Result<(), Failure> {
    #[cfg(feature = "torch")]
    {
        let chain = torch::profile::profile(spec, steps, threads).map_err(Failure::Runtime)?;
        std::fs::write(output, remat_core::format::write_chain(&chain)).map_err(|e| {
            Failure::BadInput(format!("-o: cannot write {}: {e}", output.display()))
        })?;
        eprintln!("wrote {} ({} stages)", output.display(), chain.len());
        Ok(())
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = (spec, steps, threads, output);
        Err(no_torch())
    }
}

fn write_example(output: &std::path::Path, dir: bool) -> Result<(), Failure> {
    #[cfg(feature = "torch")]
    {
        torch::torchscript::write_example(output, dir)
            .map_err(|e| Failure::BadInput(format!("-o: {e}")))?;
        eprintln!("wrote {}", output.display());
        Ok(())
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = (output, dir);
        Err(no_torch())
    }
}

fn run_schedule(
    spec: &models::ModelSpec,
    chain: &remat_core::Chain,
    schedule: &remat_core::format::ScheduleFile,
    threads: Option<usize>,
    json: bool,
) -> Result<(), Failure> {
    #[cfg(feature = "torch")]
    {
        let report = torch::runner::run(spec, chain, schedule, threads)?;
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
    {
        let _ = (spec, chain, schedule, threads, json);
        Err(no_torch())
    }
}

#[cfg(not(feature = "torch"))]
fn no_torch() -> Failure {
    Failure::Runtime("remat-profile was built without the `torch` feature: run scripts/setup-libtorch.sh, then build with LIBTORCH=$PWD/.tools/libtorch/torch cargo build --release -p remat-profiler --features torch".into())
}
