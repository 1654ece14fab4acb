//! `remat checkpoints CHAIN --model pytorch|chen [--set 3,6,24]`: the
//! checkpoint set of least peak memory in one of Hong et al.'s models, or
//! the peak of a given set, with its memory curve over the training phase
//! index, the paper's √n set for comparison, and the simulator's peak of
//! the set's schedule (Remat's own accounting).

use crate::args::CheckpointsArgs;
use crate::error::{CliError, Result};
use crate::input;
use crate::report::{self, CheckpointsReport};
use remat_core::model::units::format_bytes;
use remat_core::simulator::{simulate_with, SimOptions};
use remat_core::solvers::hong::{self, CheckpointError, Model};
use remat_core::Chain;

/// The most columns the text curve takes; longer curves are drawn with each
/// column the largest of several phases.
const CURVE_COLUMNS: usize = 100;

/// A set, measured every way the report shows it.
struct Measured {
    checkpoints: Vec<usize>,
    optimal: bool,
    peak_bytes: u64,
    curve: Vec<u64>,
    optimal_peak_bytes: Option<u64>,
    sqrt_checkpoints: Vec<usize>,
    sqrt_peak_bytes: u64,
    simulated_peak_bytes: u64,
}

pub fn run(a: &CheckpointsArgs) -> Result<()> {
    let chain = input::chain(&a.chain)?;
    let model = Model::from(a.model);
    let given = match &a.set {
        Some(set) => Some(
            hong::normalize(chain.len(), &set.0).map_err(|e| CliError::Flag {
                flag: "--set",
                source: Box::new(e.into()),
            })?,
        ),
        None => None,
    };
    let m = measure(&chain, model, given)?;
    if a.json {
        report::print(&CheckpointsReport {
            chain: &chain.name,
            stages: chain.len(),
            model,
            checkpoints: &m.checkpoints,
            optimal: m.optimal,
            peak_bytes: m.peak_bytes,
            peak_phase: peak_phase(&m.curve),
            curve: &m.curve,
            optimal_peak_bytes: m.optimal_peak_bytes,
            sqrt_checkpoints: &m.sqrt_checkpoints,
            sqrt_peak_bytes: m.sqrt_peak_bytes,
            simulated_peak_bytes: m.simulated_peak_bytes,
        });
    } else {
        print_text(&chain, model, &m);
    }
    Ok(())
}

/// The optimal set (Algorithm 6 or 3) or `given` (already normalized), its
/// peak and curve in `model`, the √n set's peak and the simulated peak.
/// With a given set, the Chen model past its stage limit leaves the
/// optimal peak unknown rather than refusing the question.
fn measure(chain: &Chain, model: Model, given: Option<Vec<usize>>) -> Result<Measured> {
    let best = match (hong::optimal(chain, model), &given) {
        (Ok(best), _) => Some(best),
        (Err(CheckpointError::TooLong { .. }), Some(_)) => None,
        (Err(e), _) => return Err(e.into()),
    };
    let optimal_peak_bytes = best.as_ref().map(|b| b.peak_bytes);
    let best_set = best.map(|b| b.checkpoints);
    let (checkpoints, optimal) = match given {
        Some(set) => {
            let optimal = best_set.as_ref() == Some(&set);
            (set, optimal)
        }
        None => (best_set.unwrap_or_default(), true),
    };
    let curve = hong::curve(chain, model, &checkpoints)?;
    let sqrt_checkpoints = hong::sqrt_set(chain.len());
    let sqrt_peak_bytes = hong::peak(chain, model, &sqrt_checkpoints)?;
    let ops = hong::schedule(chain, &checkpoints)?;
    let simulated_peak_bytes = simulate_with(chain, &ops, SimOptions::default())?.peak_bytes;
    Ok(Measured {
        optimal,
        peak_bytes: hong::peak(chain, model, &checkpoints)?,
        checkpoints,
        curve,
        optimal_peak_bytes,
        sqrt_checkpoints,
        sqrt_peak_bytes,
        simulated_peak_bytes,
    })
}

/// The first index of the curve's largest value.
fn peak_phase(curve: &[u64]) -> usize {
    let top = curve.iter().copied().max().unwrap_or(0);
    curve.iter().position(|&v| v == top).unwrap_or(0)
}

fn print_text(chain: &Chain, model: Model, m: &Measured) {
    let list = |set: &[usize]| {
        set.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    super::say_chain(chain, 13);
    say!(
        "model        {model}: {}",
        match model {
            Model::PyTorch =>
                "Hong et al. Section 4 (freed as soon as unused, one output-gradient buffer per segment)",
            Model::Chen =>
                "Hong et al. Section 3, Eq. 6 (checkpoints kept throughout, a recomputed segment held whole)",
        }
    );
    let origin = match (m.optimal, m.optimal_peak_bytes) {
        (true, _) => format!(
            "optimal: Algorithm {}",
            if model == Model::PyTorch { 6 } else { 3 }
        ),
        (false, Some(best)) => format!(
            "from --set; the optimal set's peak is {}",
            format_bytes(best)
        ),
        (false, None) => format!(
            "from --set; the optimal set is not computed past {} stages",
            hong::MAX_CHEN_STAGES
        ),
    };
    say!("checkpoints  {} ({origin})", list(&m.checkpoints));
    say!(
        "peak         {} at training phase {} of 0…{}",
        format_bytes(m.peak_bytes),
        peak_phase(&m.curve),
        m.curve.len() - 1
    );
    say!(
        "√n set       {}: {}",
        list(&m.sqrt_checkpoints),
        format_bytes(m.sqrt_peak_bytes)
    );
    say!(
        "simulated    {}: the simulator's peak of this set's schedule (Remat's accounting, docs/model.md)",
        format_bytes(m.simulated_peak_bytes)
    );
    let (line, per_column) = sparkline(&m.curve, CURVE_COLUMNS);
    say!(
        "curve        {line}  (phase 0 → {}{})",
        m.curve.len() - 1,
        if per_column > 1 {
            format!(", each column the largest of {per_column} phases")
        } else {
            String::new()
        }
    );
}

/// The curve as at most `columns` block characters, ▁ (0) to █ (the
/// peak), each the largest of `per_column` consecutive values; and that
/// number.
fn sparkline(curve: &[u64], columns: usize) -> (String, usize) {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per_column = curve.len().div_ceil(columns.max(1)).max(1);
    let top = curve.iter().copied().max().unwrap_or(0).max(1) as u128;
    let line = curve
        .chunks(per_column)
        .map(|chunk| {
            let v = chunk.iter().copied().max().unwrap_or(0) as u128;
            LEVELS[(v * 7 / top) as usize]
        })
        .collect();
    (line, per_column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sparkline_reaches_full_height_only_at_the_peak() {
        // Could fail if a column were scaled by the wrong maximum or the
        // chunks lost a value (mutation tried: `chunk[0]` instead of the
        // chunk's maximum drew ▁▁▁ for the second).
        assert_eq!(sparkline(&[0, 7, 14, 7, 0], 100), ("▁▄█▄▁".into(), 1));
        assert_eq!(sparkline(&[1, 0, 0, 8, 0, 0], 3), ("▁█▁".into(), 2));
        assert_eq!(sparkline(&[0, 0], 10), ("▁▁".into(), 1));
        assert_eq!(peak_phase(&[1, 5, 2, 5]), 1);
    }
}
