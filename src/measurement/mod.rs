//! A measured run over the plan on screen: an imported `remat-run/1` file
//! (one training step as `remat_torch` recorded it) held against the
//! simulation of the schedule it ran (the core's `measured`, the same as
//! `remat simulate --measured`), and the two step lines the memory chart
//! draws from it. Plain Rust, tested on the host.
//!
//! A run belongs to one schedule: it is drawn only while the plan on screen
//! has the same operations (and, when the run names it, the chain's
//! digest); otherwise the page says which plan it was measured for.

use remat_core::format::RunFile;
use remat_core::measured::{check_chain, compare_trace, CompareError, Comparison, OpRow};
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::simulator::Trace;
use remat_core::{Chain, Op};

/// The run held against the plan on screen (`ops`, simulated as `trace`),
/// or why it cannot be: a sentence for people naming the plan it belongs to.
pub fn against_plan(
    run: &RunFile,
    chain: &Chain,
    ops: &[Op],
    trace: Option<&Trace>,
) -> Result<Comparison, String> {
    if let Err(e) = check_chain(run, chain) {
        return Err(format!("{e}; load that chain"));
    }
    let Some(trace) = trace else {
        return Err(format!(
            "{}; there is no schedule on screen to hold it against",
            measured_for(run)
        ));
    };
    compare_trace(ops, trace, run).map_err(|e| match e {
        CompareError::OpsDiffer { .. } => {
            format!(
                "{}; pick that plan (the plan on screen differs: {e})",
                measured_for(run)
            )
        }
        other => other.to_string(),
    })
}

/// "this run was measured for rotor at 28.6 MiB".
pub fn measured_for(run: &RunFile) -> String {
    let algorithm = if run.algorithm.is_empty() {
        "a hand-written schedule"
    } else {
        &run.algorithm
    };
    format!(
        "this run was measured for {algorithm} at {}",
        format_bytes(run.budget_bytes)
    )
}

/// The card's one line: "peak predicted 23.8 MiB, measured 25.0 MiB
/// (+5.0 %) · step predicted 135.24 ms, measured 134.50 ms (−0.5 %)".
pub fn summary(c: &Comparison) -> String {
    format!(
        "peak predicted {}, measured {} ({}) · step predicted {}, measured {} ({})",
        format_bytes(c.predicted_peak_bytes),
        format_bytes(c.measured_peak_bytes),
        signed_percent(c.peak_change()),
        format_seconds(c.predicted_makespan_seconds),
        format_seconds(c.measured_seconds),
        signed_percent(c.time_change()),
    )
}

/// `+5.0 %`, `−0.5 %` (a true minus), `0.0 %`; `n/a` without a prediction.
pub fn signed_percent(change: Option<f64>) -> String {
    match change {
        None => "n/a".into(),
        Some(x) if x < 0.0 && (x * 1000.0).round() != 0.0 => format!("−{:.1} %", -100.0 * x),
        Some(x) => format!("+{:.1} %", (100.0 * x).abs()),
    }
}

/// Which side of a row a step line draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Predicted,
    Measured,
}

/// A step line over the operations' predicted spans, so that predicted and
/// measured align op for op: across each operation its peak, then at its
/// end the memory it leaves, held until the next operation starts. Points
/// are (seconds, bytes), in pieces: the compute lane's operations make one
/// line (a new piece only where one starts before the line's end), each
/// transfer, which runs beside them on the copy lane, a piece of its own.
pub fn step_line(rows: &[OpRow], side: Side) -> Vec<Vec<(f64, u64)>> {
    let levels = |r: &OpRow| match side {
        Side::Predicted => (r.predicted_peak_bytes, r.predicted_memory_bytes),
        Side::Measured => (r.measured_peak_bytes, r.measured_memory_bytes),
    };
    let (transfers, mut compute): (Vec<&OpRow>, Vec<&OpRow>) =
        rows.iter().partition(|r| r.op.is_transfer());
    compute.sort_by(|a, b| {
        a.predicted_start_seconds
            .total_cmp(&b.predicted_start_seconds)
            .then(a.index.cmp(&b.index))
    });
    let mut pieces: Vec<Vec<(f64, u64)>> = Vec::new();
    let mut at = f64::NEG_INFINITY;
    for r in compute {
        let (peak, after) = levels(r);
        let (start, end) = (r.predicted_start_seconds, r.predicted_end_seconds);
        match pieces.last_mut() {
            Some(piece) if start >= at => {
                // Held at the last level until this operation starts.
                let level = piece.last().map_or(peak, |p| p.1);
                if start > at {
                    piece.push((start, level));
                }
                piece.push((start, peak));
            }
            _ => pieces.push(vec![(start, peak)]),
        }
        let piece = pieces.last_mut().expect("a piece was just made");
        piece.push((end, peak));
        piece.push((end, after));
        at = at.max(end);
    }
    for r in transfers {
        let (peak, after) = levels(r);
        let (start, end) = (r.predicted_start_seconds, r.predicted_end_seconds);
        pieces.push(vec![(start, peak), (end, peak), (end, after)]);
    }
    pieces
}

/// The highest level either line reaches (the chart's scale must hold it).
pub fn highest(c: &Comparison) -> u64 {
    c.rows
        .iter()
        .map(|r| r.measured_peak_bytes.max(r.predicted_peak_bytes))
        .max()
        .unwrap_or(0)
        .max(c.predicted_peak_bytes)
}

#[cfg(test)]
mod tests;
