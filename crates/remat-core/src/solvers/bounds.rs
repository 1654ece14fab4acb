//! The bounds of the budget axis and the one rule for moving along it.
//!
//! * M_high ([`max_useful_budget`]): store-all's peak, the most memory worth
//!   giving;
//! * M_low of a persistent schedule: [`persistent::min_budget`] (exact
//!   bytes) and [`persistent::min_budget_met`] (what a table's lattice
//!   meets) — the DP's own recursion, so it lives with the DP;
//! * the floor no schedule goes below, offloading or not ([`memory_floor`]);
//! * α → budget ([`budget_at_ratio`]), shared by the CLI's sweep, the
//!   explorer and [`crate::sweep`].
//!
//! Below every algorithm but store-all: nothing here calls a solver.
//!
//! [`persistent::min_budget`]: super::persistent::min_budget
//! [`persistent::min_budget_met`]: super::persistent::min_budget_met

use super::store_all;
use crate::model::units::{format_bytes, format_bytes_apart};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::{simulate_with, SimOptions};

/// The least memory any complete schedule of a chain needs, and the
/// operation that needs it ([`memory_floor`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floor {
    pub bytes: u64,
    /// The operation whose working set is `bytes`: every schedule runs it
    /// at least once.
    pub op: Op,
    /// Its workspace in that working set: o_f^ℓ for an F_all^ℓ, o_f∅^ℓ for
    /// a no-grad first forward (F_ck^ℓ or F_∅^ℓ: `op` is `ForwardNone`),
    /// o_b^ℓ (signed) for B^ℓ.
    pub workspace: i64,
    /// Whether `workspace` is a no-grad transient the chain gives apart
    /// (`forward_nograd_overhead_bytes`): it is then named o_f∅, not o_f.
    pub nograd_workspace: bool,
    /// For a B^ℓ: the parameter gradients B^L … B^{ℓ+1} left, which its
    /// δ^ℓ carries ([`Chain::gradient_bytes`]); 0 otherwise.
    pub parameter_gradients: u64,
}

impl std::fmt::Display for Floor {
    /// Why, for a person: `B^3 holds its input a^2, ā^3, δ^3 and δ^2 at
    /// once`, and its workspace when it has one (`, with o_b^3 = 16.0 MiB`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = self.op.stage();
        let p = l - 1;
        let workspace = match self.op {
            Op::Backward { .. } => "o_b",
            _ if self.nograd_workspace => "o_f∅",
            _ => "o_f",
        };
        match self.op {
            Op::Backward { .. } => {
                write!(f, "B^{l} holds its input a^{p}, ā^{l}, δ^{l} and δ^{p} at once")?
            }
            Op::ForwardAll { .. } => write!(
                f,
                "F_all^{l} holds its input a^{p}, ā^{l} and a gradient δ^j (j ≥ {l}) at once"
            )?,
            _ => write!(
                f,
                "the first forward of stage {l} holds its input a^{p}, a^{l} and the loss gradient at once"
            )?,
        }
        if self.workspace != 0 {
            let sign = if self.workspace < 0 { "−" } else { "" };
            let size = format_bytes(self.workspace.unsigned_abs());
            write!(f, ", with its workspace {workspace}^{l} = {sign}{size}")?;
        }
        if self.parameter_gradients > 0 {
            write!(
                f,
                " and the parameter gradients the backwards after it left ({})",
                format_bytes(self.parameter_gradients)
            )?;
        }
        Ok(())
    }
}

impl Floor {
    /// `budget` if a schedule can run in it, else why not ([`BelowFloor`]).
    pub fn admit(self, budget: u64) -> Result<u64, BelowFloor> {
        if budget >= self.bytes {
            Ok(budget)
        } else {
            Err(BelowFloor {
                budget,
                floor: self,
            })
        }
    }
}

/// A budget below the floor: no schedule of the chain runs in it, whatever
/// the algorithm — bad input, not an infeasible budget. The message puts
/// the exact bytes next to sizes that would read the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BelowFloor {
    pub budget: u64,
    pub floor: Floor,
}

impl std::fmt::Display for BelowFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (budget, floor) = format_bytes_apart(self.budget, self.floor.bytes);
        write!(
            f,
            "{budget} is below {floor}, the least memory any schedule of this chain needs ({})",
            self.floor
        )
    }
}

impl std::error::Error for BelowFloor {}

/// A budget below which no schedule can run, whatever it recomputes,
/// offloads or releases: some operation every complete schedule runs needs
/// more. Three such operations per stage ℓ, each with what must be on the
/// device while it runs (docs/model.md's accounting):
///
/// * the first forward of ℓ (it runs before B^L, since B^L needs every
///   stage's output computed once): its input (≥ ω_a^{ℓ-1}), δ^L, and
///   either ω_a^ℓ + o_f∅^ℓ (a no-grad F_ck^ℓ / F_∅^ℓ) or ω_ā^ℓ + o_f^ℓ (an
///   F_all^ℓ): the schedule picks the kind, so the lesser of the two;
/// * an F_all^ℓ (B^ℓ reads ā^ℓ, which only F_all^ℓ produces — a prefetch
///   only brings back what an F_all^ℓ made): its input, ω_ā^ℓ, o_f^ℓ and
///   the one gradient then resident, δ^j for some j ≥ ℓ (no operation frees
///   a gradient but the backward that consumes it);
/// * B^ℓ: its input and `Chain::backward_bytes(ℓ)` (δ^ℓ, ā^ℓ, δ^{ℓ-1}).
///
/// With a menu, ā^ℓ and B^ℓ's needs are those of the option the F_all^ℓ
/// ran; the floor takes the option whose two needs peak lowest.
///
/// Nothing else need be resident: a^0 and every other tensor can be
/// offloaded. So the floor is a lower bound for every algorithm (pofo's
/// included), not always met: `optimal::least_budget` is the exact least
/// of the schedules without transfers. O(L).
///
/// ```
/// use remat_core::examples;
/// use remat_core::schedule::Op;
/// use remat_core::solvers::memory_floor;
///
/// // The teaching chain: B^1 holds a^0 (64 MiB), ā^1 (128 MiB), δ^1 and δ^0
/// // (64 MiB each), however the rest is scheduled.
/// let floor = memory_floor(&examples::teaching());
/// assert_eq!(floor.bytes, 320 << 20);
/// assert_eq!(floor.op, Op::Backward { stage: 1 });
/// assert_eq!(floor.to_string(), "B^1 holds its input a^0, ā^1, δ^1 and δ^0 at once");
/// ```
pub fn memory_floor(chain: &Chain) -> Floor {
    let n = chain.len();
    let sum = |xs: &[u64]| xs.iter().fold(0u64, |acc, &x| acc.saturating_add(x));
    // least_gradient[ℓ] = min_{j ≥ ℓ} ω_δ^j: the least front a forward of ℓ can run beside.
    let gradients = chain.gradient_sizes();
    let mut least_gradient = vec![u64::MAX; n + 2];
    for l in (1..=n).rev() {
        least_gradient[l] = least_gradient[l + 1].min(gradients[l]);
    }
    let seed = gradients[n];
    let mut floor = Floor {
        bytes: chain.input_bytes.saturating_add(seed),
        op: Op::ForwardNone { stage: 1 },
        workspace: 0,
        nograd_workspace: false,
        parameter_gradients: 0,
    };
    for (l, &least) in least_gradient.iter().enumerate().take(n + 1).skip(1) {
        let s = chain.stage(l);
        let input = chain.output_bytes(l - 1);
        // The first forward of ℓ, of whichever kind needs less. As an
        // F_all^ℓ it is never above the F_all^ℓ term below with δ^L for δ^j.
        let nograd = sum(&[input, s.output_bytes, s.nograd_forward_overhead(), seed]);
        // With a menu, the schedule also picks the option of F_all^ℓ (and so
        // of B^ℓ): the one whose two needs peak lowest (option 0 first, so a
        // chain without menus keeps its floor and its op).
        let all_need = |k: usize, front: u64| {
            let c = s.choice(k);
            sum(&[input, c.saved_bytes, c.forward_overhead, front])
        };
        let k = (0..s.option_count())
            .min_by_key(|&k| {
                all_need(k, least).max(input.saturating_add(chain.backward_bytes_of(l, k)))
            })
            .unwrap_or(0);
        let (first_k, recording) = (0..s.option_count())
            .map(|k| (k, all_need(k, seed)))
            .min_by_key(|&(_, bytes)| bytes)
            .unwrap_or((0, all_need(0, seed)));
        let option = |k: usize| Op::ForwardAll {
            stage: l,
            option: k as u8,
        };
        let first = if nograd <= recording {
            (
                nograd,
                Op::ForwardNone { stage: l },
                s.nograd_forward_overhead() as i64,
                s.forward_nograd_overhead_bytes.is_some(),
                0,
            )
        } else {
            (
                recording,
                option(first_k),
                s.choice(first_k).forward_overhead as i64,
                false,
                0,
            )
        };
        let left = gradients[l] - chain.activation_gradient_bytes(l);
        let needs = [
            first,
            (
                all_need(k, least),
                option(k),
                s.choice(k).forward_overhead as i64,
                false,
                0,
            ),
            (
                input.saturating_add(chain.backward_bytes_of(l, k)),
                Op::Backward { stage: l },
                s.choice(k).backward_overhead_bytes,
                false,
                left,
            ),
        ];
        for (bytes, op, workspace, nograd_workspace, parameter_gradients) in needs {
            if bytes > floor.bytes {
                floor = Floor {
                    bytes,
                    op,
                    workspace,
                    nograd_workspace,
                    parameter_gradients,
                };
            }
        }
    }
    floor
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
