//! `remat_torch._solver`: remat-core's planners inside the Python process,
//! so that a PyTorch user solves a chain with no `remat` binary on the PATH
//! (issue 42, item 3). `remat_torch.solve` (python/remat_torch/solve.py) is
//! the API people call; this module only moves text across:
//!
//! chain JSON (any layout `remat` reads) → [`plan`] → `remat-schedule/1`
//! JSON, exactly what `remat solve CHAIN -a ALGORITHM -b BUDGET -o FILE`
//! writes: the same planner, judged by the same simulator.
//!
//! Bad input is a `ValueError` whose message names the argument (and, for
//! a chain, the field: `stages[3].saved_bytes: …`), never a panic; a budget
//! no schedule of the algorithm meets answers `None`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use remat_core::format::{read_any_chain, write_schedule, ScheduleFile};
use remat_core::model::units::{parse_rate, parse_size};
use remat_core::simulator::judge;
use remat_core::solvers::{
    max_useful_budget, memory_floor, solve as solve_chain, Algorithm, Options,
};

/// Plans `budget` on the chain in `chain_json` with `algorithm`; the
/// schedule file's text, None when no schedule of this algorithm fits.
/// Errors are sentences for people, naming the argument at fault.
pub fn plan(
    chain_json: &str,
    algorithm: &str,
    budget: &str,
    bandwidth: Option<&str>,
) -> Result<Option<String>, String> {
    let chain = read_any_chain(chain_json).map_err(|e| format!("chain: {e}"))?;
    // Its message names the argument already ("algorithm: unknown …").
    let algorithm = Algorithm::from_name(algorithm).map_err(|e| e.to_string())?;
    let m_high = max_useful_budget(&chain);
    let budget = budget_bytes(budget, m_high)?;
    let bandwidth = match bandwidth {
        // The unit parser's message names the bandwidth already.
        Some(text) => Some(parse_rate(text).map_err(|e| e.to_string())?),
        None => chain.bandwidth_bytes_per_s,
    };
    // Every argument read before the chain's floor is asked of the budget.
    memory_floor(&chain)
        .admit(budget)
        .map_err(|e| format!("budget: {e}"))?;
    let options = Options {
        bandwidth_bytes_per_s: bandwidth,
        ..Options::default()
    };
    let solution = solve_chain(&chain, algorithm, budget, &options).map_err(|e| e.to_string())?;
    let Some(ops) = solution.ops else {
        return Ok(None);
    };
    // The solver proposes, the simulator judges: the prediction written
    // is the simulator's, as in `remat solve -o`.
    let trace = judge(&chain, &ops, budget, bandwidth)
        .map_err(|e| format!("{algorithm} made a schedule the simulator rejects (a bug): {e}"))?;
    let file = ScheduleFile::judged(&chain, algorithm.name(), budget, bandwidth, ops, &trace);
    Ok(Some(write_schedule(&file)))
}

/// `8GiB`, `3e9` or `60%` (of M_high, the store-all peak; above 0 % and at
/// most 1000 %), as `remat solve --budget` reads it.
fn budget_bytes(text: &str, m_high: u64) -> Result<u64, String> {
    let text = text.trim();
    if let Some(pct) = text.strip_suffix('%') {
        let pct: f64 = pct
            .trim()
            .parse()
            .map_err(|_| format!("budget: {text:?} is not a percentage (e.g. 60%)"))?;
        if !(pct > 0.0 && pct <= 1000.0) {
            return Err(format!(
                "budget: {text:?} is out of range: a share of M_high above 0 % and at most 1000 %"
            ));
        }
        return Ok((m_high as f64 * pct / 100.0).round() as u64);
    }
    parse_size(text).map_err(|e| format!("budget: {e}"))
}

/// The schedule (`remat-schedule/1` JSON text) that `algorithm` makes for
/// the chain (JSON text) at `budget`, or None when none fits; ValueError
/// naming the argument for bad input. The GIL is released while planning.
#[pyfunction]
#[pyo3(signature = (chain, algorithm, budget, bandwidth=None))]
fn solve(
    py: Python<'_>,
    chain: &str,
    algorithm: &str,
    budget: &str,
    bandwidth: Option<&str>,
) -> PyResult<Option<String>> {
    py.detach(|| plan(chain, algorithm, budget, bandwidth))
        .map_err(PyValueError::new_err)
}

/// `8GiB` or `3e9` as bytes, as `remat solve --budget` reads a size;
/// ValueError naming `budget` otherwise (a share of M_high included: it is
/// a number only for one chain).
#[pyfunction]
fn size_bytes(text: &str) -> PyResult<u64> {
    parse_size(text.trim()).map_err(|e| PyValueError::new_err(format!("budget: {e}")))
}

/// Every algorithm's name, as `solve` takes it.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    Algorithm::ALL.iter().map(|a| a.name()).collect()
}

#[pymodule]
fn _solver(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(size_bytes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
