//! A network as Remat runs it: its stages as functions of their input, its
//! input batch and its parameters, with the gradient bytes each backward
//! creates. The built-in networks (`nets.rs`) and the user's TorchScript
//! (`torchscript.rs`) are both built as a [`Net`].

use super::ffi;
use std::cell::{Cell, RefCell};
use tch::{nn, Device, Tensor};

pub type StageFn = Box<dyn Fn(&Tensor) -> Tensor>;

pub struct Net {
    pub vs: nn::VarStore,
    pub stages: Vec<(String, StageFn)>,
    input: Box<dyn Fn() -> Tensor>,
    /// The trainable parameters, in a fixed order.
    params: Vec<Tensor>,
    /// Bytes of the parameter gradients each stage's backward creates,
    /// learned in the first step.
    created: RefCell<Vec<Option<u64>>>,
    /// Bytes now booked outside the device count.
    booked: Cell<u64>,
    /// Where the parameter gradients a backward creates are counted.
    pub gradients: Gradients,
}

/// Where a step's parameter gradients are counted ([`Net::backward_stage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gradients {
    /// In the chain, as the allocator sees them under PyTorch's
    /// `zero_grad(set_to_none=True)`: B^ℓ's g^ℓ in its o_b^ℓ while it runs
    /// (from each gradient's allocation), then g^ℓ
    /// (`parameter_gradient_bytes`) to the step's end — what
    /// `remat_torch.describe_chain` counts. Chains remat-profile writes.
    InChain,
    /// Booked outside the device count from the start of B^ℓ: chains
    /// remat-profile wrote before 2026-11-30, whose stages carry no
    /// `parameter_gradient_bytes` (`remat-profile run` picks this for
    /// them, so their predictions still hold to the byte).
    OutsideFromBackward,
}

impl Net {
    /// A net from its parts (the user's TorchScript model, `torchscript.rs`).
    pub fn from_parts(
        vs: nn::VarStore,
        stages: Vec<(String, StageFn)>,
        input: Box<dyn Fn() -> Tensor>,
    ) -> Net {
        let params = vs.trainable_variables();
        let n = stages.len();
        Net {
            vs,
            stages,
            input,
            params,
            created: RefCell::new(vec![None; n]),
            booked: Cell::new(0),
            gradients: Gradients::InChain,
        }
    }

    /// The input batch a^0, the same for every call (fixed seed).
    pub fn input(&self) -> Tensor {
        tch::manual_seed(0x5eed);
        (self.input)()
    }

    /// Sets every parameter gradient to none, as PyTorch's
    /// `optimizer.zero_grad()` does by default since 2.0 (`set_to_none`):
    /// the next backward creates them, and AccumulateGrad keeps the new
    /// gradient itself (no temporary, nothing added into a zeroed one).
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            drop(ffi::take_grad(p));
        }
        // Freed just above, they leave the device count through the booking.
        ffi::book_outside(-(self.booked.take() as i64));
    }

    /// Parameter-gradient bytes each stage's backward creates (0 where not
    /// learned yet).
    pub fn parameter_gradient_bytes(&self) -> Vec<u64> {
        self.created
            .borrow()
            .iter()
            .map(|b| b.unwrap_or(0))
            .collect()
    }

    /// B^ℓ: back-propagates `grad` (δ^ℓ) through `out` (ā^ℓ); returns the
    /// bytes of parameter gradients it created. Under
    /// [`Gradients::InChain`] they stay in the device count (the chain's
    /// g^ℓ); under [`Gradients::OutsideFromBackward`] they are booked
    /// outside from the start of B^ℓ (the step's memory is then the budget
    /// plus Σ parameter gradients). A stage whose parameters already have
    /// a gradient (a weight shared with a later stage) adds into it, and
    /// that temporary stays in o_b^ℓ either way.
    pub fn backward_stage(&self, l: usize, out: Tensor, grad: Tensor) -> Result<u64, String> {
        if !out.requires_grad() {
            // A first stage without parameters (a reshape, a pooling) reads
            // an input that needs no gradient: its B^1 has nothing to do.
            // Anywhere else the graph was cut (`torchscript::check` refuses
            // such a network before measuring).
            if l == 1 {
                self.created.borrow_mut()[0].get_or_insert(0);
                return Ok(0);
            }
            return Err(format!(
                "stage {l}: its output does not require grad, so B^{l} cannot propagate δ^{l}"
            ));
        }
        let had: Vec<bool> = self.params.iter().map(|p| p.grad().defined()).collect();
        let expected = self.created.borrow()[l - 1];
        let outside = self.gradients == Gradients::OutsideFromBackward;
        if outside {
            ffi::book_outside(expected.unwrap_or(0) as i64);
        }
        ffi::backward(out, grad)?;
        let created: u64 = self
            .params
            .iter()
            .zip(&had)
            .filter(|(_, &had)| !had)
            .map(|(p, _)| ffi::storage_bytes(&p.grad()))
            .sum();
        let book = |bytes: i64| {
            if outside {
                ffi::book_outside(bytes);
            }
        };
        match expected {
            Some(e) if e != created => {
                book(created as i64 - e as i64);
                if outside {
                    self.booked.set(self.booked.get() + created);
                }
                return Err(format!(
                    "stage {l}: its backward created {created} bytes of parameter gradients, {e} in the first step; \
                     parameter gradients must be none when a step starts"
                ));
            }
            Some(_) => {}
            None => {
                book(created as i64);
                self.created.borrow_mut()[l - 1] = Some(created);
            }
        }
        if outside {
            self.booked.set(self.booked.get() + created);
        }
        Ok(created)
    }

    /// The parameter gradients, by name, copied (into host memory when
    /// they are on a GPU).
    pub fn gradients(&self) -> Vec<(String, Tensor)> {
        let mut out: Vec<_> = self
            .vs
            .variables()
            .into_iter()
            .map(|(name, v)| {
                let g = v.grad();
                (
                    name,
                    if !g.defined() {
                        v.zeros_like().to_device(Device::Cpu)
                    } else if g.device() == Device::Cpu {
                        g.copy()
                    } else {
                        g.to_device(Device::Cpu)
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}
