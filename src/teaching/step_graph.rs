//! The step as a graph (Salimans & Bulatov's gradient-checkpointing
//! figures): forward nodes a^0 … a^L in a row, backward nodes δ^L … δ^0
//! under them, and at each operation which of them are resident. Pure
//! data, computed once per schedule, so that the kit's graph chart takes
//! it as a prop and the host tests what it marks.

use remat_core::schedule::{captions, recompute_flags};
use remat_core::simulator::{states, OpState, SimOptions, TensorId};
use remat_core::{Chain, Op, TensorKind};
use std::sync::Arc;

/// What a forward node holds on the device after an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    Nothing,
    /// a^ℓ alone: enough to run the forward on, not the backward.
    Output,
    /// ā^ℓ, which contains a^ℓ: what B^ℓ needs.
    Saved,
}

/// A node of the graph: a^ℓ on the forward row, δ^ℓ on the backward one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Forward(usize),
    Backward(usize),
}

/// One schedule's graph: its operations, the tensors after each, which
/// forwards are recomputations, and each operation's caption.
pub struct StepGraph {
    pub chain: Arc<Chain>,
    pub ops: Vec<Op>,
    pub states: Vec<OpState>,
    pub recomputed: Vec<bool>,
    pub captions: Vec<String>,
}

/// The marks of the graph at one operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Marks {
    /// Forward node ℓ's tensor on the device, ℓ in 0..=L.
    pub forward: Vec<Held>,
    /// Forward node ℓ last written by a recomputation (and still resident):
    /// the forward row as a recomputation re-fills it.
    pub refilled: Vec<bool>,
    /// δ^ℓ on the device, ℓ in 0..=L.
    pub backward: Vec<bool>,
    /// Copies on the host (offloaded), by node.
    pub host: Vec<Node>,
    /// The node the operation writes, moves or frees.
    pub computes: Option<Node>,
}

impl StepGraph {
    /// Replays `ops` on `chain` with the host link `bandwidth` (None: no
    /// link): the simulator's own states, so the graph cannot disagree
    /// with the memory curve or `remat simulate --states`.
    pub fn new(chain: Arc<Chain>, ops: &[Op], bandwidth: Option<f64>) -> Result<StepGraph, String> {
        let options = SimOptions {
            bandwidth,
            memory_limit: None,
        };
        let states = states(&chain, ops, options).map_err(|e| e.to_string())?;
        Ok(StepGraph {
            recomputed: recompute_flags(ops, chain.len()),
            captions: captions(ops, chain.len()),
            ops: ops.to_vec(),
            states,
            chain,
        })
    }

    /// The nodes and edges alone, with no operation to show: what the
    /// graph draws while nobody steps, so that a slider move does not
    /// replay a schedule nobody looks at (the replay is O(ops × L)).
    pub fn nodes_only(chain: Arc<Chain>) -> StepGraph {
        StepGraph {
            chain,
            ops: Vec::new(),
            states: Vec::new(),
            recomputed: Vec::new(),
            captions: Vec::new(),
        }
    }

    /// What is resident after operation `i`. O(i + L).
    pub fn marks(&self, i: usize) -> Marks {
        let top = self.chain.len();
        let mut forward = vec![Held::Nothing; top + 1];
        let mut backward = vec![false; top + 1];
        let Some(state) = self.states.get(i) else {
            return Marks {
                refilled: vec![false; top + 1],
                forward,
                backward,
                host: Vec::new(),
                computes: None,
            };
        };
        for t in &state.device {
            match *t {
                TensorId::Activation(l) if l <= top => forward[l] = Held::Output,
                TensorId::Saved(l) if l <= top => forward[l] = Held::Saved,
                TensorId::Gradient(l) if l <= top => backward[l] = true,
                _ => {}
            }
        }
        let mut refilled = vec![false; top + 1];
        for (op, &again) in self.ops.iter().zip(&self.recomputed).take(i + 1) {
            if op.is_forward() && op.stage() <= top {
                refilled[op.stage()] = again;
            }
        }
        for (l, r) in refilled.iter_mut().enumerate() {
            *r &= forward[l] != Held::Nothing;
        }
        let host = state
            .host
            .iter()
            .filter_map(|t| match *t {
                TensorId::Activation(l) | TensorId::Saved(l) => Some(Node::Forward(l)),
                TensorId::Gradient(l) => Some(Node::Backward(l)),
                TensorId::Workspace(_) | TensorId::ParameterGradient(_) => None,
            })
            .collect();
        Marks {
            forward,
            refilled,
            backward,
            host,
            computes: self.ops.get(i).map(node_of),
        }
    }
}

/// The node an operation writes (a forward: a^ℓ; B^ℓ: δ^{ℓ−1}) or moves.
fn node_of(op: &Op) -> Node {
    match *op {
        Op::Backward { stage } => Node::Backward(stage.saturating_sub(1)),
        Op::Offload { stage, tensor }
        | Op::Prefetch { stage, tensor }
        | Op::Release { stage, tensor } => match tensor {
            TensorKind::Output | TensorKind::Saved => Node::Forward(stage),
        },
        _ => Node::Forward(op.stage()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples::teaching;
    use remat_core::solvers::recompute_all;

    fn graph() -> StepGraph {
        let chain = Arc::new(teaching());
        let ops = recompute_all::schedule(&chain);
        StepGraph::new(chain, &ops, None).unwrap()
    }

    #[test]
    fn marks_follow_the_simulator() {
        let g = graph();
        // After F^1 the input a^0 and the seed δ^10 are resident, and a^1.
        let m = g.marks(0);
        assert_eq!(m.forward[0], Held::Output);
        assert_ne!(m.forward[1], Held::Nothing);
        assert!(m.backward[10]);
        assert_eq!(m.computes, Some(Node::Forward(1)));
        // Every resident tensor of every state is one mark, and no more.
        for (i, s) in g.states.iter().enumerate() {
            let m = g.marks(i);
            let marked = m.forward.iter().filter(|h| **h != Held::Nothing).count()
                + m.backward.iter().filter(|b| **b).count();
            assert_eq!(marked, s.device.len(), "op {i}");
        }
    }

    #[test]
    fn a_recomputation_refills_the_forward_row() {
        let g = graph();
        // recompute-all: after B^10 the forward runs again from a^0.
        let i = g.recomputed.iter().position(|&r| r).unwrap();
        let m = g.marks(i);
        let Some(Node::Forward(l)) = m.computes else {
            panic!("a recomputation writes a forward node");
        };
        assert!(m.refilled[l]);
        assert!(g.captions[i].contains("recomputed (2nd time)"));
        // Before it, nothing on the forward row came from a recomputation.
        assert!(!g.marks(i - 1).refilled.iter().any(|&r| r));
    }

    #[test]
    fn a_backward_writes_the_gradient_below_its_input() {
        let g = graph();
        let i = g
            .ops
            .iter()
            .position(|op| matches!(op, Op::Backward { stage: 10 }))
            .unwrap();
        let m = g.marks(i);
        assert_eq!(m.computes, Some(Node::Backward(9)));
        assert!(m.backward[9]);
        assert!(!m.backward[10]);
    }
}
