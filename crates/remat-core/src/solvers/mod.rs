//! The algorithms that turn a chain and a budget into a schedule.
//!
//! Each module states its paper, complexity and assumptions. A solver only
//! proposes: the [simulator](crate::simulator) measures every schedule.
//!
//! The explorer's slider asks many budgets of one chain, so solving is split
//! in two: [`Planner::build`] does the expensive part once for the largest
//! budget (a DP table, the k candidates of `sequential`), and
//! [`Planner::plan`] answers any budget up to it quickly (O(L) nodes).

pub mod offload;
pub mod persistent;
pub mod pofo;
pub mod sequential;
mod slots;
pub mod store_all;

use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::{simulate_with, SimOptions};
use persistent::{PersistentTable, Variant};
pub use slots::{Memory, SlotPolicy};
use std::fmt;

/// A progress callback: receives the fraction done, returns false to cancel.
pub type Progress<'a> = dyn FnMut(f64) -> bool + 'a;

/// No progress report, never cancels.
pub fn no_progress() -> impl FnMut(f64) -> bool {
    |_| true
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    StoreAll,
    Sequential,
    Revolve,
    Rotor,
    Pofo,
    OffloadOnly,
    Opportunist,
    Autocapper,
}

impl Algorithm {
    pub const ALL: [Algorithm; 8] = [
        Algorithm::StoreAll,
        Algorithm::Sequential,
        Algorithm::Revolve,
        Algorithm::Rotor,
        Algorithm::Pofo,
        Algorithm::OffloadOnly,
        Algorithm::Opportunist,
        Algorithm::Autocapper,
    ];

    /// The algorithms that recompute only (no transfer).
    pub const REMATERIALIZATION: [Algorithm; 4] = [
        Algorithm::StoreAll,
        Algorithm::Sequential,
        Algorithm::Revolve,
        Algorithm::Rotor,
    ];

    /// The algorithms that offload (POFO); each budget is a new solve.
    pub const OFFLOADING: [Algorithm; 4] = [
        Algorithm::Pofo,
        Algorithm::OffloadOnly,
        Algorithm::Opportunist,
        Algorithm::Autocapper,
    ];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::StoreAll => "store-all",
            Algorithm::Sequential => "sequential",
            Algorithm::Revolve => "revolve",
            Algorithm::Rotor => "rotor",
            Algorithm::Pofo => "pofo",
            Algorithm::OffloadOnly => "offload-only",
            Algorithm::Opportunist => "opportunist",
            Algorithm::Autocapper => "autocapper",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Algorithm::StoreAll => "keep every activation (PyTorch default); its peak is M_high",
            Algorithm::Sequential => {
                "PyTorch checkpoint_sequential with the best number of equal segments for the budget"
            }
            Algorithm::Revolve => {
                "optimal persistent schedule of the automatic-differentiation model (F_all right before each B)"
            }
            Algorithm::Rotor => {
                "optimal persistent schedule for heterogeneous chains (rotor report, Theorem 1)"
            }
            Algorithm::Pofo => {
                "optimal mix of recomputation and offloading under POFO's assumptions (NeurIPS 2021, Appendix B)"
            }
            Algorithm::OffloadOnly => {
                "best choice of activations to offload with no recomputation (POFO's model)"
            }
            Algorithm::Opportunist => {
                "POFO heuristic: keep the link busy offloading groups, recompute inside each group"
            }
            Algorithm::Autocapper => {
                "POFO heuristic: rotor for 40 larger budgets, offload at each peak until it fits; best kept"
            }
        }
    }

    /// Whether it moves activations over the host link.
    pub fn offloads(self) -> bool {
        Algorithm::OFFLOADING.contains(&self)
    }

    pub fn from_name(name: &str) -> Result<Algorithm, SolveError> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                SolveError::BadOption(format!(
                    "algorithm: unknown algorithm `{name}`; choose one of {}",
                    names.join(", ")
                ))
            })
    }

    /// Whether its planner builds a persistent table (revolve, rotor).
    pub fn uses_slots(self) -> bool {
        matches!(self, Algorithm::Revolve | Algorithm::Rotor)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    #[error("{0}")]
    BadOption(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("cancelled")]
    Cancelled,
}

/// Knobs shared by the solvers.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Memory slots of the persistent DPs when they cannot be exact (the
    /// rotor report uses 500); with [`SlotPolicy::Fixed`], always.
    pub slots: usize,
    /// How `rotor` and `revolve` cut memory into slots.
    pub slot_policy: SlotPolicy,
    /// Memory steps N_GPU of the POFO DPs (the paper uses 50).
    pub offload_slots: usize,
    /// Overrides the chain's bandwidth for offloading algorithms.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// Refuse DP tables larger than this.
    pub max_table_bytes: u64,
    /// `sequential` with exactly this many segments k instead of the best k.
    pub segments: Option<usize>,
    /// How pofo's DP times the loss step (POFO Appendix B.2 by default).
    pub loss_step: pofo::LossStep,
}

pub const DEFAULT_SLOTS: usize = 500;
pub const DEFAULT_OFFLOAD_SLOTS: usize = 50;
/// The default limit on one DP table (native builds): 2 GiB.
pub const DEFAULT_MAX_TABLE_BYTES: u64 = 2 << 30;

impl Default for Options {
    fn default() -> Options {
        Options {
            slots: DEFAULT_SLOTS,
            slot_policy: SlotPolicy::Exact,
            offload_slots: DEFAULT_OFFLOAD_SLOTS,
            bandwidth_bytes_per_s: None,
            // What a laptop can give a table next to everything else.
            max_table_bytes: if cfg!(target_pointer_width = "32") {
                1 << 30
            } else {
                DEFAULT_MAX_TABLE_BYTES
            },
            segments: None,
            loss_step: pofo::LossStep::Paper,
        }
    }
}

/// A solver's answer for one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    pub algorithm: Algorithm,
    pub budget_bytes: u64,
    /// None when no schedule of this algorithm fits the budget.
    pub ops: Option<Vec<Op>>,
    /// The solver's own prediction of the time (the DP value for DPs).
    pub predicted_seconds: Option<f64>,
    /// The solver's own prediction of the peak.
    pub predicted_peak_bytes: Option<u64>,
    /// One line for people: "4 segments", "500 slots of 1.20 MiB".
    pub detail: String,
}

impl Solution {
    pub fn feasible(&self) -> bool {
        self.ops.is_some()
    }
}

/// What `sequential` measured for one number of segments k.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub k: usize,
    pub seconds: f64,
    pub peak_bytes: u64,
}

/// Answers budgets for one chain and one algorithm.
pub enum Planner {
    StoreAll {
        ops: Vec<Op>,
        seconds: f64,
        peak_bytes: u64,
    },
    Sequential {
        candidates: Vec<Candidate>,
    },
    Persistent {
        algorithm: Algorithm,
        table: Box<PersistentTable>,
        /// The least budget `solve` meets with this algorithm and policy.
        min_budget: u64,
        /// Rotor's class contains store-all; checking it exactly spares the
        /// slot grid's rounding at budgets where nothing needs recomputing.
        store_all: Option<(f64, u64)>,
    },
    /// Offloading algorithms depend on the budget throughout: each budget
    /// is solved anew ([`offload::solve`]).
    Offloading {
        algorithm: Algorithm,
        options: Options,
        min_budget: u64,
    },
}

impl Planner {
    /// Does the expensive part once, for budgets up to `max_budget_bytes`.
    pub fn build(
        chain: &Chain,
        algorithm: Algorithm,
        max_budget_bytes: u64,
        options: &Options,
        progress: &mut Progress<'_>,
    ) -> Result<Planner, SolveError> {
        match algorithm {
            Algorithm::StoreAll => {
                let ops = store_all::schedule(chain);
                let trace = simulate_with(chain, &ops, SimOptions::default())
                    .expect("store-all is valid on every chain");
                Ok(Planner::StoreAll {
                    ops,
                    seconds: chain.sequential_seconds(),
                    peak_bytes: trace.peak_bytes,
                })
            }
            Algorithm::Sequential => {
                let n = chain.len();
                let ks = match options.segments {
                    Some(k) if k == 0 || k > n => {
                        return Err(SolveError::BadOption(format!(
                            "segments: {k} segments for a chain of {n} stages; choose 1 to {n}"
                        )))
                    }
                    Some(k) => k..=k,
                    None => 1..=n,
                };
                let mut candidates = Vec::with_capacity(n);
                for k in ks.clone() {
                    let ops = sequential::schedule(chain, k);
                    let trace = simulate_with(chain, &ops, SimOptions::default())
                        .expect("checkpoint_sequential is valid on every chain");
                    candidates.push(Candidate {
                        k,
                        seconds: sequential::predicted_seconds(chain, k),
                        peak_bytes: trace.peak_bytes,
                    });
                    if !progress((k + 1 - ks.start()) as f64 / ks.clone().count() as f64) {
                        return Err(SolveError::Cancelled);
                    }
                }
                Ok(Planner::Sequential { candidates })
            }
            Algorithm::Pofo
            | Algorithm::OffloadOnly
            | Algorithm::Opportunist
            | Algorithm::Autocapper => Ok(Planner::Offloading {
                algorithm,
                options: options.clone(),
                min_budget: offload_min_budget(chain),
            }),
            Algorithm::Revolve | Algorithm::Rotor => {
                let variant = if algorithm == Algorithm::Rotor {
                    Variant::Rotor
                } else {
                    Variant::Revolve
                };
                let table = PersistentTable::build_with(
                    chain,
                    variant,
                    max_budget_bytes,
                    options.slot_policy,
                    options.slots,
                    options.max_table_bytes,
                    progress,
                )?;
                let store_all = (variant == Variant::Rotor)
                    .then(|| (chain.sequential_seconds(), max_useful_budget(chain)));
                Ok(Planner::Persistent {
                    algorithm,
                    table: Box::new(table),
                    min_budget: persistent_min_budget(chain, variant, options, store_all),
                    store_all,
                })
            }
        }
    }

    /// Takes a DP planner apart into its table's grid and values, to move it
    /// between threads; None for planners without a table.
    pub fn into_table(self) -> Option<(persistent::TableGrid, Vec<f64>)> {
        match self {
            Planner::Persistent { table, .. } => Some(table.into_values()),
            _ => None,
        }
    }

    /// Rebuilds a DP planner for `chain` from [`into_table`](Self::into_table).
    pub fn from_table(
        chain: &Chain,
        grid: persistent::TableGrid,
        values: Vec<f64>,
    ) -> Result<Planner, SolveError> {
        let algorithm = match grid.variant {
            Variant::Rotor => Algorithm::Rotor,
            Variant::Revolve => Algorithm::Revolve,
        };
        let table = PersistentTable::from_values(chain, grid, values)?;
        let store_all = (grid.variant == Variant::Rotor)
            .then(|| (chain.sequential_seconds(), max_useful_budget(chain)));
        Ok(Planner::Persistent {
            algorithm,
            table: Box::new(table),
            min_budget: persistent_min_budget(chain, grid.variant, &Options::default(), store_all),
            store_all,
        })
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            Planner::StoreAll { .. } => Algorithm::StoreAll,
            Planner::Sequential { .. } => Algorithm::Sequential,
            Planner::Persistent { algorithm, .. } | Planner::Offloading { algorithm, .. } => {
                *algorithm
            }
        }
    }

    /// The smallest budget this algorithm can meet, in exact bytes. For
    /// `rotor` and `revolve` it is the least budget [`solve`] meets with the
    /// planner's options ([`persistent::min_budget_met`]): the exact M_low
    /// whenever the lattice at M_low is exact (every example chain), else
    /// the first budget the rounded lattice meets. A table built for a
    /// larger budget and read out lower may need a little more.
    pub fn min_budget_bytes(&self) -> u64 {
        match self {
            Planner::StoreAll { peak_bytes, .. } => *peak_bytes,
            Planner::Sequential { candidates } => {
                candidates.iter().map(|c| c.peak_bytes).min().unwrap_or(0)
            }
            Planner::Persistent { min_budget, .. } | Planner::Offloading { min_budget, .. } => {
                *min_budget
            }
        }
    }

    /// The schedule for `budget_bytes`: `Ok` with `ops: None` when no
    /// schedule of this algorithm meets the budget, `Err` when the question
    /// cannot be answered (a table over the size limit, a bad option).
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Result<Solution, SolveError> {
        match self {
            Planner::Offloading {
                algorithm, options, ..
            } => offload::solve(chain, *algorithm, budget_bytes, options, &mut no_progress()),
            _ => Ok(self.read_out(chain, budget_bytes)),
        }
    }

    /// The answer of a planner that holds everything it needs (a table, the
    /// candidates): reading it out cannot fail.
    fn read_out(&self, chain: &Chain, budget_bytes: u64) -> Solution {
        let algorithm = self.algorithm();
        let infeasible = |detail: String| Solution {
            algorithm,
            budget_bytes,
            ops: None,
            predicted_seconds: None,
            predicted_peak_bytes: None,
            detail,
        };
        match self {
            Planner::Offloading { .. } => unreachable!("offloading planners solve each budget"),
            Planner::StoreAll {
                ops,
                seconds,
                peak_bytes,
            } => {
                if *peak_bytes <= budget_bytes {
                    Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(ops.clone()),
                        predicted_seconds: Some(*seconds),
                        predicted_peak_bytes: Some(*peak_bytes),
                        detail: "every activation kept".into(),
                    }
                } else {
                    infeasible(format!(
                        "needs {}",
                        crate::model::units::format_bytes(*peak_bytes)
                    ))
                }
            }
            Planner::Sequential { candidates } => {
                let best = candidates
                    .iter()
                    .filter(|c| c.peak_bytes <= budget_bytes)
                    .min_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.k.cmp(&b.k)));
                match best {
                    Some(c) => Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(sequential::schedule(chain, c.k)),
                        predicted_seconds: Some(c.seconds),
                        predicted_peak_bytes: Some(c.peak_bytes),
                        detail: format!("{} segment{}", c.k, if c.k == 1 { "" } else { "s" }),
                    },
                    None => infeasible(format!(
                        "no number of segments fits; the least memory is {}",
                        crate::model::units::format_bytes(self.min_budget_bytes())
                    )),
                }
            }
            Planner::Persistent {
                table, store_all, ..
            } => {
                let grid = describe_lattice(table, budget_bytes);
                let from_table = table.plan(chain, budget_bytes);
                if let Some((seconds, peak)) = *store_all {
                    let table_seconds = from_table
                        .as_ref()
                        .map_or(f64::INFINITY, |p| p.predicted_seconds);
                    if peak <= budget_bytes && seconds < table_seconds {
                        return Solution {
                            algorithm,
                            budget_bytes,
                            ops: Some(store_all::schedule(chain)),
                            predicted_seconds: Some(seconds),
                            predicted_peak_bytes: Some(peak),
                            detail: "everything fits: no recomputation".into(),
                        };
                    }
                }
                match from_table {
                    Some(p) => Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(p.ops),
                        predicted_seconds: Some(p.predicted_seconds),
                        predicted_peak_bytes: Some(p.predicted_peak_bytes),
                        detail: grid,
                    },
                    // On an exact lattice the least budget met is M_low;
                    // on a rounding grid a smaller budget may still be met
                    // by a table built for it, so say so.
                    None => infeasible(if table.lost_bytes(budget_bytes) == 0 {
                        format!(
                            "below M_low = {}",
                            crate::model::units::format_bytes(self.min_budget_bytes())
                        )
                    } else {
                        format!(
                            "infeasible on the grid of {grid}: sizes round up (this grid needs {}); solve for this budget or use more slots",
                            crate::model::units::format_bytes(self.min_budget_bytes())
                        )
                    }),
                }
            }
        }
    }
}

impl Planner {
    /// How the answer for `budget_bytes` treated memory: [`Memory::Exact`]
    /// for store-all and sequential (measured, no grid) and for a persistent
    /// table whose lattice is exact at this budget (or whose answer is
    /// store-all); otherwise the grid's slot and the worst-case bytes its
    /// rounding hid (none stated for the offloading DPs: POFO's grid rounds
    /// every size).
    pub fn memory(&self, budget_bytes: u64) -> Memory {
        match self {
            Planner::StoreAll { .. } | Planner::Sequential { .. } => Memory::Exact,
            Planner::Persistent {
                table, store_all, ..
            } => {
                let table_seconds = table.best_seconds(budget_bytes).unwrap_or(f64::INFINITY);
                if store_all.is_some_and(|(s, peak)| peak <= budget_bytes && s < table_seconds) {
                    return Memory::Exact;
                }
                match table.lost_bytes(budget_bytes) {
                    0 => Memory::Exact,
                    lost => Memory::Grid {
                        slot_bytes: table.slot_bytes(),
                        lost_bytes: Some(lost),
                    },
                }
            }
            Planner::Offloading { options, .. } => Memory::Grid {
                slot_bytes: (budget_bytes / options.offload_slots.max(1) as u64).max(1),
                lost_bytes: None,
            },
        }
    }
}

/// "exact: 6 slots of 64 MiB" or "500 slots of 1 MiB; rounding may hide up
/// to 2 MiB (0.5% of the budget)".
fn describe_lattice(table: &PersistentTable, budget_bytes: u64) -> String {
    use crate::model::units::format_bytes;
    let slots = format!(
        "{} slots of {}",
        table.slots(),
        format_bytes(table.slot_bytes())
    );
    match table.lost_bytes(budget_bytes) {
        0 => format!("exact: {slots}"),
        lost => format!(
            "{slots}; rounding may hide up to {} ({:.2}% of the budget)",
            format_bytes(lost),
            100.0 * lost as f64 / budget_bytes.max(1) as f64
        ),
    }
}

/// M_low for a persistent planner: what [`solve`] meets under `options`,
/// capped at M_high for rotor (its planner answers store-all there).
fn persistent_min_budget(
    chain: &Chain,
    variant: Variant,
    options: &Options,
    store_all: Option<(f64, u64)>,
) -> u64 {
    let cap = store_all.map(|(_, peak)| peak);
    persistent::min_budget_met(
        chain,
        variant,
        options.slot_policy,
        options.slots,
        options.max_table_bytes,
        cap,
    )
    .map_or_else(|| cap.unwrap_or(u64::MAX), |m| m.bytes)
}

/// Solves one budget: builds a planner for exactly this budget and asks it.
pub fn solve(
    chain: &Chain,
    algorithm: Algorithm,
    budget_bytes: u64,
    options: &Options,
) -> Result<Solution, SolveError> {
    let mut progress = no_progress();
    let planner = Planner::build(chain, algorithm, budget_bytes, options, &mut progress)?;
    planner.plan(chain, budget_bytes)
}

/// A budget below which no schedule can run, however much it offloads:
/// some operation needs its input, its output and its gradients at once
/// (F^ℓ with a^{ℓ-1}, a^ℓ and δ^L; B^ℓ with a^{ℓ-1}, ā^ℓ, δ^ℓ, δ^{ℓ-1}).
pub fn offload_min_budget(chain: &Chain) -> u64 {
    let seed = chain.gradient_bytes(chain.len());
    (1..=chain.len())
        .map(|l| {
            let s = chain.stage(l);
            let input = chain.output_bytes(l - 1);
            let forward = input + s.output_bytes + s.forward_overhead() + seed;
            let backward = input + chain.backward_bytes(l);
            forward.max(backward)
        })
        .max()
        .unwrap_or(0)
}

/// The budget at memory ratio α ∈ [0, 1] between `m_low` (α = 0) and
/// `m_high` (α = 1): (1 − α)·M_low + α·M_high, rounded to a byte (POFO
/// Section 5.2). The one definition the CLI's sweep and the explorer share.
///
/// ```
/// assert_eq!(remat_core::solvers::budget_at_ratio(100, 200, 0.25), 125);
/// ```
pub fn budget_at_ratio(m_low: u64, m_high: u64, alpha: f64) -> u64 {
    m_low + (m_high.saturating_sub(m_low) as f64 * alpha).round() as u64
}

/// M_high: the peak of `store-all`, the most memory worth giving.
pub fn max_useful_budget(chain: &Chain) -> u64 {
    simulate_with(chain, &store_all::schedule(chain), SimOptions::default())
        .expect("store-all is valid on every chain")
        .peak_bytes
}
