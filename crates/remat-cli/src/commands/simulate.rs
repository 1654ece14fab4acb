//! `remat simulate`: a schedule file judged on a chain: time, peak, validity
//! and, with `--states`, where every tensor is after each operation.

use crate::args::{bytes_per_s, SimulateArgs};
use crate::error::{InFile, Result};
use crate::input;
use crate::report::{self, tensor_names, Run, SimulateReport, StateReport};
use remat_core::format::ScheduleFile;
use remat_core::model::units::{format_bytes, format_seconds};
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
    if a.json {
        report::print(&json_report(
            &chain,
            &schedule,
            bw,
            &trace,
            states.as_deref(),
        ));
    } else {
        print_text(
            &chain,
            &schedule,
            &trace,
            states.as_deref().unwrap_or_default(),
        );
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
        states: states.map(|s| s.iter().map(StateReport::from).collect()),
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
