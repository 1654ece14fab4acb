//! `remat simulate`: a schedule file judged on a chain: time, peak, validity
//! and, with `--states`, where every tensor is after each operation; with
//! `--measured`, a measured run of it held against the simulation op by op.

use crate::args::{bytes_per_s, SimulateArgs};
use crate::error::{InFile, Result};
use crate::input;
use crate::report::{
    self, tensor_names, AtPeakReport, MeasuredRunReport, Run, SimulateReport, StateReport,
};
use remat_core::format::{RunFile, ScheduleFile};
use remat_core::measured::{self, Comparison};
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::schedule::captions;
use remat_core::simulator::{self, judge, OpState, SimOptions, Trace};
use remat_core::Chain;

pub fn run(a: &SimulateArgs) -> Result<()> {
    let chain = input::chain(&a.chain)?;
    let schedule = input::schedule(&a.schedule)?;
    if let Some(warning) = schedule.check_chain(&chain).in_file(&a.schedule)? {
        eprintln!("warning: {}: {warning}", a.schedule.display());
    }
    let bw = bytes_per_s(a.bandwidth)
        .or(schedule.bandwidth_bytes_per_s)
        .or(chain.bandwidth_bytes_per_s);
    let trace = judge(&chain, &schedule.ops, schedule.budget_bytes, bw).in_file(&a.schedule)?;
    let states = if a.states {
        let options = SimOptions {
            bandwidth: bw,
            memory_limit: Some(schedule.budget_bytes),
        };
        Some(simulator::states(&chain, &schedule.ops, options).in_file(&a.schedule)?)
    } else {
        None
    };
    // The run against the very trace reported above.
    let measured = match &a.measured {
        Some(path) => {
            let run = input::measured_run(path, &chain, &schedule, &trace)?;
            let compared = measured::check_chain(&run, &chain)
                .and_then(|()| measured::compare_trace(&schedule.ops, &trace, &run));
            let c = compared.map_err(Box::new).in_file(path)?;
            Some((run, c))
        }
        None => None,
    };
    if a.json {
        let mut r = json_report(&chain, &schedule, bw, &trace, states.as_deref());
        r.measured = measured
            .as_ref()
            .map(|(run, c)| MeasuredRunReport::new(&run.source, c));
        report::print(&r);
    } else {
        print_text(
            &chain,
            &schedule,
            &trace,
            states.as_deref().unwrap_or_default(),
        );
        if let Some((run, c)) = &measured {
            print_measured(run, c);
        }
    }
    Ok(())
}

fn json_report<'a>(
    chain: &'a Chain,
    schedule: &'a ScheduleFile,
    bandwidth: Option<f64>,
    trace: &Trace,
    states: Option<&[OpState]>,
) -> SimulateReport<'a> {
    let predicted = schedule.predicted.as_ref();
    SimulateReport {
        run: Run::new(
            chain,
            &schedule.algorithm,
            schedule.budget_bytes,
            bandwidth,
            Some(trace),
        )
        .predicted(
            predicted.map(|p| p.makespan_seconds),
            predicted.map(|p| p.peak_bytes),
        ),
        ops: schedule.ops.len(),
        initial_bytes: trace.memory.first().map_or(0, |m| m.bytes),
        at_peak: AtPeakReport::new(trace, &schedule.ops),
        states: states.map(|s| {
            let captions = captions(&schedule.ops, chain.len());
            let memory = trace.op_memory();
            (s.iter())
                .map(|s| StateReport::new(s, &captions[s.op], &trace.spans[s.op], memory[s.op]))
                .collect()
        }),
        measured: None,
    }
}

fn print_text(chain: &Chain, schedule: &ScheduleFile, trace: &Trace, states: &[OpState]) {
    super::say_chain(chain, 11);
    say!(
        "schedule   {} ops by {}",
        schedule.ops.len(),
        if schedule.algorithm.is_empty() {
            "hand"
        } else {
            &schedule.algorithm
        }
    );
    say!(
        "makespan   {}   (+{:.1}%{})",
        format_seconds(trace.makespan_seconds),
        100.0 * trace.overhead(),
        schedule
            .predicted
            .as_ref()
            .map(|p| format!("; predicted {}", format_seconds(p.makespan_seconds)))
            .unwrap_or_default()
    );
    say!(
        "peak       {}   (budget {}{})",
        format_bytes(trace.peak_bytes),
        format_bytes(schedule.budget_bytes),
        if !trace.fits(schedule.budget_bytes) {
            ", EXCEEDED"
        } else {
            ""
        }
    );
    say!("at peak    {}", trace.peak_line(&schedule.ops));
    say!(
        "idle       {}   recomputations {}",
        format_seconds(trace.idle_seconds),
        trace.recomputations
    );
    for s in states {
        say!(
            "{:>5}  {:<8} device [{}]  host [{}]",
            s.op,
            schedule.ops[s.op].to_string(),
            tensor_names(&s.device).join(" "),
            tensor_names(&s.host).join(" ")
        );
    }
}

/// Predicted against measured, one line per operation, then the peaks and
/// the times.
fn print_measured(run: &RunFile, c: &Comparison) {
    if !run.source.is_empty() {
        say!("measured   {}", run.source);
    }
    say!(
        "{:>5}  {:<9} {:>10} {:>10} {:>11}  {:>10} {:>10} {:>11}  {:>10} {:>10} {:>11}",
        "op",
        "",
        "mem pred",
        "mem meas",
        "Δ mem",
        "peak pred",
        "peak meas",
        "Δ peak",
        "time pred",
        "time meas",
        "Δ time"
    );
    for r in &c.rows {
        say!(
            "{:>5}  {:<9} {:>10} {:>10} {:>11}  {:>10} {:>10} {:>11}  {:>10} {:>10} {:>11}",
            r.index,
            r.op.to_string(),
            format_bytes(r.predicted_memory_bytes),
            format_bytes(r.measured_memory_bytes),
            signed_bytes(r.predicted_memory_bytes, r.measured_memory_bytes),
            format_bytes(r.predicted_peak_bytes),
            format_bytes(r.measured_peak_bytes),
            signed_bytes(r.predicted_peak_bytes, r.measured_peak_bytes),
            format_seconds(r.predicted_seconds),
            format_seconds(r.measured_seconds),
            signed_seconds(r.measured_seconds - r.predicted_seconds),
        );
    }
    say!(
        "summary    peak predicted {}, measured {} ({});  time predicted {} (makespan), measured {} (Σ ops) ({})",
        format_bytes(c.predicted_peak_bytes),
        format_bytes(c.measured_peak_bytes),
        percent(c.peak_change()),
        format_seconds(c.predicted_makespan_seconds),
        format_seconds(c.measured_seconds),
        percent(c.time_change()),
    );
}

/// `+1.20 MiB`, `-512 B`, `0 B`: measured − predicted.
fn signed_bytes(predicted: u64, measured: u64) -> String {
    match measured.cmp(&predicted) {
        std::cmp::Ordering::Equal => "0 B".into(),
        std::cmp::Ordering::Greater => format!("+{}", format_bytes(measured - predicted)),
        std::cmp::Ordering::Less => format!("-{}", format_bytes(predicted - measured)),
    }
}

/// `+1.20 ms`, `-850.0 µs`, `0 s`.
fn signed_seconds(d: f64) -> String {
    if d > 0.0 {
        format!("+{}", format_seconds(d))
    } else {
        format_seconds(d)
    }
}

/// `+4.1 %`, `-0.3 %`; `n/a` when nothing was predicted.
fn percent(change: Option<f64>) -> String {
    change.map_or("n/a".into(), |x| format!("{:+.1} %", 100.0 * x))
}
