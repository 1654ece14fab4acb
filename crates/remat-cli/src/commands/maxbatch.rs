//! `remat maxbatch`: the largest batch each method runs within a device's
//! memory, its throughput and its growth over store-all
//! ([`remat_core::maxbatch`]); the rest reads flags and prints.

use super::{plan_options, TerminalProgress};
use crate::args::{bytes_per_s, MaxbatchArgs};
use crate::error::{CliError, Result};
use crate::input;
use crate::report::{self, MaxBatchReport, MaxBatchRow};
use remat_core::maxbatch::{
    max_batches, Device, Field, Largest, Margin, MaxBatchError, MaxBatches, DEFAULT_ALGORITHMS,
    DEFAULT_MARGIN,
};
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::model::{AffineFit, BatchModel, ChainError};

pub fn run(a: &MaxbatchArgs) -> Result<()> {
    let model = batch_model(a)?;
    let device = Device {
        memory_bytes: a.memory.0,
        fixed_bytes: a.fixed.0,
        margin: a.margin.map_or(DEFAULT_MARGIN, |m| m.0),
    };
    let algorithms = if a.algorithms.is_empty() {
        DEFAULT_ALGORITHMS.to_vec()
    } else {
        a.algorithms.clone()
    };
    let options = plan_options(&a.plan, bytes_per_s(a.bandwidth));
    // A search of a long chain takes a while: its percentage on a terminal.
    let mut shown = TerminalProgress::new("searching");
    let found = max_batches(
        &model,
        &algorithms,
        &device,
        a.max_batch,
        &options,
        &mut |done| shown.report(done),
    );
    drop(shown);
    let found = found.map_err(flag_error)?;
    if a.json {
        report::print(&json_report(&model, &device, &found));
    } else {
        print_table(&model, &device, &found);
    }
    Ok(())
}

/// CHAIN at --batch, scaled linearly, or the affine fit through it and
/// --second-profile at --second-batch; a fit refused names the flag.
fn batch_model(a: &MaxbatchArgs) -> Result<BatchModel> {
    let chain = input::chain(&a.chain)?;
    match (&a.second_profile, a.second_batch) {
        (Some(second), Some(second_batch)) => {
            let second = input::chain(second)?;
            AffineFit::new(chain, a.batch, second, second_batch)
                .map(BatchModel::Affine)
                .map_err(fit_error)
        }
        _ => BatchModel::linear(chain, a.batch).map_err(fit_error),
    }
}

/// A profile problem, named by the flag that gave it.
fn fit_error(e: ChainError) -> CliError {
    let flag = if e.path.starts_with("second.batch") {
        "--second-batch"
    } else if e.path.starts_with("second.") {
        "--second-profile"
    } else {
        "--batch"
    };
    CliError::BadValue {
        flag,
        message: e.to_string(),
    }
}

/// A refused input, named by its flag; other errors as they are.
fn flag_error(e: MaxBatchError) -> CliError {
    match e {
        MaxBatchError::Input { field, message } => CliError::BadValue {
            flag: match field {
                Field::Memory => "--memory",
                Field::Fixed => "--fixed",
                Field::Margin => "--margin",
                Field::MaxBatch => "--max-batch",
            },
            message,
        },
        e => CliError::MaxBatch(e),
    }
}

/// How the chain grows with the batch, in words.
fn model_words(model: &BatchModel) -> String {
    match model {
        // `scaled` keeps the gradients a chain counts (g^ℓ) as they are.
        BatchModel::Linear { batch, .. } if model.profile().counts_parameter_gradients() => format!(
            "profiled at batch {batch}, sizes and times scaled linearly but the parameter gradients, which stay as profiled (times from a small batch grow less than linearly)"
        ),
        BatchModel::Linear { batch, .. } => format!(
            "profiled at batch {batch}, sizes and times scaled linearly (parameter gradients inside o_b grow too; times from a small batch grow less than linearly)"
        ),
        BatchModel::Affine(_) => {
            let b = model.profiled_batches();
            format!(
                "profiled at batches {} and {}, every size and time fitted as fixed + per sample × batch",
                b[0], b[1]
            )
        }
    }
}

fn margin_words(device: &Device) -> String {
    let bytes = format_bytes(device.margin.bytes(device.memory_bytes));
    match device.margin {
        Margin::Bytes(_) => format!("{bytes} margin"),
        Margin::OfMemory(f) => format!("{bytes} margin ({} % of memory)", f * 100.0),
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}×"))
}

fn print_table(model: &BatchModel, device: &Device, found: &MaxBatches) {
    say!("chain: {}", model.profile().name);
    if let Some(batch) = model.profile().inputs_summary() {
        say!("batch: {batch}");
    }
    say!("model: {}", model_words(model));
    if let Some(words) = super::parameter_gradient_words(model.profile()) {
        say!("gradients: {words}; leave them out of --fixed");
    }
    say!(
        "activation budget: {} memory − {} fixed − {} = {}",
        format_bytes(device.memory_bytes),
        format_bytes(device.fixed_bytes),
        margin_words(device),
        format_bytes(found.budget_bytes)
    );
    say!();
    say!(
        "{:<14} {:>13} {:>11} {:>11} {:>11} {:>11}  detail",
        "method",
        "largest batch",
        "× store-all",
        "step time",
        "samples/s",
        "× store-all"
    );
    for m in &found.methods {
        let batch = match (m.batch, m.at_limit) {
            (None, _) => "none".to_string(),
            (Some(b), false) => b.to_string(),
            (Some(b), true) => format!("≥ {b}"),
        };
        let step = m
            .trace
            .as_ref()
            .map_or_else(|| "-".into(), |t| format_seconds(t.makespan_seconds));
        let sps = m
            .samples_per_second()
            .map_or_else(|| "-".into(), |x| format!("{x:.0}"));
        say!(
            "{:<14} {:>13} {:>11} {:>11} {:>11} {:>11}  {}",
            m.algorithm.name(),
            batch,
            ratio(found.growth(m)),
            step,
            sps,
            ratio(found.throughput_ratio(m)),
            detail(m)
        );
    }
    say!();
    say!("Each batch was solved and judged by the simulator; one more sample did not fit. Larger batches were not tried where a method may fit again (heuristics; docs/maxbatch.md).");
}

fn detail(m: &Largest) -> String {
    match (&m.solution, m.batch) {
        (Some(s), _) => s.detail.clone(),
        (None, None) => "not even one sample fits".into(),
        (None, Some(_)) => String::new(),
    }
}

fn json_report<'a>(
    model: &'a BatchModel,
    device: &Device,
    found: &'a MaxBatches,
) -> MaxBatchReport<'a> {
    let row = |m: &'a Largest| MaxBatchRow {
        algorithm: m.algorithm.name(),
        batch: m.batch,
        at_limit: m.at_limit,
        makespan_seconds: m.trace.as_ref().map(|t| t.makespan_seconds),
        samples_per_second: m.samples_per_second(),
        peak_bytes: m.trace.as_ref().map(|t| t.peak_bytes),
        recomputations: m.trace.as_ref().map(|t| t.recomputations),
        offloaded_bytes: m.trace.as_ref().map(|t| t.offloaded_bytes),
        growth_over_store_all: found.growth(m),
        throughput_over_store_all: found.throughput_ratio(m),
        detail: m.solution.as_ref().map(|s| s.detail.as_str()),
        probes: m.probes.len(),
    };
    MaxBatchReport {
        chain: &model.profile().name,
        model: match model {
            BatchModel::Linear { .. } => "linear",
            BatchModel::Affine(_) => "affine",
        },
        profiled_batches: model.profiled_batches(),
        memory_bytes: device.memory_bytes,
        fixed_bytes: device.fixed_bytes,
        margin_bytes: device.margin.bytes(device.memory_bytes),
        activation_budget_bytes: found.budget_bytes,
        max_batch: found.max_batch,
        store_all_batch: found.store_all.batch,
        methods: found.methods.iter().map(row).collect(),
    }
}
