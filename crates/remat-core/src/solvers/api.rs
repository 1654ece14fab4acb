//! The solvers' vocabulary: which [`Algorithm`]s exist, the [`Options`]
//! they share, what they answer ([`Solution`], [`Candidate`]), how they fail
//! ([`SolveError`]) and how they report [`Progress`]. Every algorithm module
//! speaks it; none of it calls an algorithm.

use super::slots::SlotPolicy;
use crate::model::Chain;
use crate::schedule::Op;
use std::fmt;

/// A progress callback: receives the fraction done, returns false to cancel.
pub type Progress<'a> = dyn FnMut(f64) -> bool + 'a;

/// No progress report, never cancels.
pub fn no_progress() -> impl FnMut(f64) -> bool {
    |_| true
}

/// The list of algorithms, the one place where they are named: one row
/// each, `Variant => "cli-name", "what it does";`, grouped by family. The
/// enum, [`Algorithm::ALL`], the family lists, [`Algorithm::name`] and
/// [`Algorithm::description`] are expanded from this list (`$then`
/// receives it). Which module answers each algorithm is the planner's
/// business (`planner.rs`, an exhaustive match the compiler holds to this
/// list): the vocabulary names no solver, so every solver can speak it.
macro_rules! algorithm_list {
    ($then:ident) => {
        $then! {
            rematerialization {
                StoreAll => "store-all", "keep every activation (PyTorch default); its peak is M_high";
                RecomputeAll => "recompute-all", "keep only the input a^0 and re-run the forward from it before each backward: the least memory of the classic strategies, O(L²) time; its schedule whatever the budget";
                Sequential => "sequential", "PyTorch checkpoint_sequential with the best number of equal segments for the budget";
                Revolve => "revolve", "optimal persistent schedule of the automatic-differentiation model (F_all right before each B)";
                Rotor => "rotor", "optimal persistent schedule for heterogeneous chains (rotor report, Theorem 1)";
                Hong => "hong", "checkpoint set of least peak in the paper's PyTorch memory model (Hong et al., Algorithm 6); its schedule whatever the budget";
                HongChen => "hong-chen", "checkpoint set of least peak in Chen's memory model (Hong et al., Algorithm 3); its schedule whatever the budget";
                Dtr => "dtr", "dynamic runtime, simulated: evict the tensor of least compute/(memory × staleness) when memory runs out, recompute on demand (DTR, ICLR 2021)";
                Optimal => "optimal", "true optimum over every sequence of compute operations (exact A* search, no persistence assumed); short chains only";
            }
            offloading {
                Pofo => "pofo", "optimal mix of recomputation and offloading under POFO's assumptions (NeurIPS 2021, Appendix B)";
                OffloadOnly => "offload-only", "best choice of activations to offload with no recomputation (POFO's model)";
                Opportunist => "opportunist", "POFO heuristic: keep the link busy offloading groups, recompute inside each group";
                Autocapper => "autocapper", "POFO heuristic: rotor for 40 larger budgets, offload at each peak until it fits; best kept";
                Delta => "delta", "dynamic runtime, simulated: from 3/4 of the budget release large stale tensors, evict or offload by cost, prefetch in the backward (DELTA, h_base)";
                DeltaLru => "delta-lru", "delta with the Filter's h_LRU = 1/staleness";
                DeltaGreedy => "delta-greedy", "delta with the Filter's h_GREEDY = 1/memory";
            }
        }
    };
}

/// A solver that answers one budget (the planner's `per_budget` dispatch).
pub type SolveFn = fn(&Problem<'_>, &mut Progress<'_>) -> Result<Solution, SolveError>;

/// One question a per-budget solver answers: a schedule for `chain` with
/// `algorithm` within `budget` bytes (M), under `options`.
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    pub chain: &'a Chain,
    pub algorithm: Algorithm,
    /// M: the activation memory the schedule may use, in bytes.
    pub budget: u64,
    pub options: &'a Options,
}

/// Expands [`algorithm_list`] into [`Algorithm`] and its lists and names.
macro_rules! define_algorithms {
    (
        rematerialization { $($r:ident => $rname:literal, $rdesc:literal;)* }
        offloading { $($o:ident => $oname:literal, $odesc:literal;)* }
    ) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Algorithm {
            $($r,)*
            $($o,)*
        }

        impl Algorithm {
            pub const ALL: [Algorithm; [$($rname,)* $($oname,)*].len()] =
                [$(Algorithm::$r,)* $(Algorithm::$o,)*];

            /// The algorithms that recompute only (no transfer).
            pub const REMATERIALIZATION: [Algorithm; [$($rname,)*].len()] =
                [$(Algorithm::$r,)*];

            /// The algorithms that offload (POFO); each budget is a new solve.
            pub const OFFLOADING: [Algorithm; [$($oname,)*].len()] = [$(Algorithm::$o,)*];

            /// The name used on the command line and in files.
            pub fn name(self) -> &'static str {
                match self {
                    $(Algorithm::$r => $rname,)*
                    $(Algorithm::$o => $oname,)*
                }
            }

            pub fn description(self) -> &'static str {
                match self {
                    $(Algorithm::$r => $rdesc,)*
                    $(Algorithm::$o => $odesc,)*
                }
            }
        }
    };
}

algorithm_list!(define_algorithms);

impl Algorithm {
    /// Whether it moves activations over the host link.
    pub fn offloads(self) -> bool {
        Algorithm::OFFLOADING.contains(&self)
    }

    /// Whether its planner can hold a table for every budget
    /// ([`Planner::from_offload_tables`](super::Planner::from_offload_tables)):
    /// pofo's DP and its offload-only variant, whose tables answer any
    /// budget in milliseconds once built.
    pub fn plans_every_budget(self) -> bool {
        matches!(self, Algorithm::Pofo | Algorithm::OffloadOnly)
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

    /// Whether it simulates a dynamic runtime (dtr, delta, delta-lru,
    /// delta-greedy): it decides as the step runs, in exact bytes, and its
    /// least budget is only bounded from below.
    pub fn is_dynamic(self) -> bool {
        matches!(
            self,
            Algorithm::Dtr | Algorithm::Delta | Algorithm::DeltaLru | Algorithm::DeltaGreedy
        )
    }

    /// Whether it chooses, per F_all, among the options of a stage's menu
    /// (rotor and revolve, exactly); the others run the classic F_all only.
    pub fn chooses_options(self) -> bool {
        matches!(self, Algorithm::Rotor | Algorithm::Revolve)
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

/// How OC times the loss step (F_all^L, B^L) when transfers are left over;
/// see [`pofo`](super::offload::pofo)'s module doc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossStep {
    /// POFO Appendix B.2: ε_G = (Δ_F' + Δ_B') / β between F_all^L and B^L.
    #[default]
    Paper,
    /// Offloads drain during F_all^L, prefetches overlap B^L.
    Overlap,
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
    /// Whether `offload_slots` was asked for (the CLI's `--slots`): then
    /// POFO's tables over `max_table_bytes` are an error naming it;
    /// otherwise the DP runs on the most slots whose tables fit, and says so
    /// ([`pofo::resolution`](super::offload::pofo::resolution)).
    pub offload_slots_explicit: bool,
    /// Overrides the chain's bandwidth for offloading algorithms.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// Refuse DP tables larger than this.
    pub max_table_bytes: u64,
    /// `sequential` with exactly this many segments k instead of the best k.
    pub segments: Option<usize>,
    /// How pofo's DP times the loss step (POFO Appendix B.2 by default).
    pub loss_step: LossStep,
    /// DELTA's runtime settings (`delta`, `delta-lru`, `delta-greedy`).
    pub delta: DeltaSettings,
}

/// DELTA's settings (Tang et al., *DELTA: Dynamically Optimizing GPU Memory
/// beyond Tensor Recomputation*, 2022, Section 4): the defaults are the
/// paper's where it gives one. Measured on another machine, a user sets the
/// link share that machine achieves.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DeltaSettings {
    /// The share of the link's bandwidth a transfer achieves, in the
    /// Director's swap cost c_s = m / (share · b) (Eq. 6): 0.35, as DELTA
    /// measured ("empirically, only 35 % of the bandwidth is used", §4.1).
    /// The simulated transfer itself runs at the full link. In (0, 1].
    pub link_share: f64,
    /// Releasing starts when this share of the budget is in use: 3/4
    /// (§4.3), to leave room for transfers to overlap. In (0, 1].
    pub trigger: f64,
    /// The Prefetcher's reload limit n (Algorithm 4): the paper gives no
    /// value; 2 hides one transfer behind each backward step without
    /// filling the memory the Filter would then release again. At most
    /// [`MAX_RELOAD_LIMIT`].
    pub reload_limit: usize,
}

/// The largest reload limit accepted: a chain has at most this many stages,
/// so a larger limit would change nothing.
pub const MAX_RELOAD_LIMIT: usize = crate::model::MAX_STAGES;

impl Default for DeltaSettings {
    fn default() -> DeltaSettings {
        DeltaSettings {
            link_share: 0.35,
            trigger: 0.75,
            reload_limit: 2,
        }
    }
}

impl DeltaSettings {
    /// Refuses a setting out of its range, naming it.
    pub fn validate(&self) -> Result<(), SolveError> {
        let share = |name: &str, x: f64| {
            if x > 0.0 && x <= 1.0 {
                Ok(())
            } else {
                Err(SolveError::BadOption(format!(
                    "{name}: a share from above 0 to 1, got {x}"
                )))
            }
        };
        share("link_share", self.link_share)?;
        share("trigger", self.trigger)?;
        if self.reload_limit > MAX_RELOAD_LIMIT {
            return Err(SolveError::BadOption(format!(
                "reload_limit: at most {MAX_RELOAD_LIMIT}, got {}",
                self.reload_limit
            )));
        }
        Ok(())
    }
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
            offload_slots_explicit: false,
            bandwidth_bytes_per_s: None,
            // What a laptop can give a table next to everything else.
            max_table_bytes: if cfg!(target_pointer_width = "32") {
                1 << 30
            } else {
                DEFAULT_MAX_TABLE_BYTES
            },
            segments: None,
            loss_step: LossStep::Paper,
            delta: DeltaSettings::default(),
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
