//! The device-memory view of the budget: what a GPU's memory leaves for
//! activations once the model's own state is in it.
//!
//! activations = GPU memory − weights − gradients − optimizer state − margin
//!
//! The budget the slider sets counts activations only (everything the chain
//! describes); this is the arithmetic an engineer does to get it from the
//! card in the machine. Plain Rust, tested on the host.

use remat_core::model::units::format_bytes;
use std::fmt;

/// GPU memory presets (bytes, label): the nominal sizes; a device reports a
/// little less to the allocator (an H100 80GB: 79.6 GiB), which the margin
/// covers together with the CUDA context.
pub const GPU_PRESETS: [(u64, &str); 3] = [
    (80 << 30, "80 GB (H100, A100)"),
    (40 << 30, "40 GB (A100 40GB)"),
    (24 << 30, "24 GB (RTX 4090, L4)"),
];

/// How the weights, their gradients and the optimizer's state are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    /// fp32 weights and gradients, fp32 optimizer state.
    Fp32,
    /// bf16 weights and gradients, bf16 optimizer state (pure bf16).
    Bf16,
    /// Mixed precision: bf16 weights and gradients, an fp32 master copy and
    /// fp32 optimizer state (ZeRO's count: 2 + 2 + 12 bytes with Adam).
    Mixed,
}

impl Weights {
    pub const ALL: [Weights; 3] = [Weights::Fp32, Weights::Bf16, Weights::Mixed];

    pub fn name(self) -> &'static str {
        match self {
            Weights::Fp32 => "fp32",
            Weights::Bf16 => "bf16",
            Weights::Mixed => "mixed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Weights::Fp32 => "fp32: 4 B + 4 B",
            Weights::Bf16 => "bf16: 2 B + 2 B",
            Weights::Mixed => "mixed bf16/fp32",
        }
    }

    pub fn from_name(name: &str) -> Option<Weights> {
        Weights::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Bytes per parameter of the weights and of the gradients.
    fn element_bytes(self) -> u64 {
        match self {
            Weights::Fp32 => 4,
            Weights::Bf16 | Weights::Mixed => 2,
        }
    }

    /// Bytes per parameter of the optimizer's state with `optimizer`.
    fn state_bytes(self, optimizer: Optimizer) -> u64 {
        match self {
            Weights::Fp32 => 4 * optimizer.moments(),
            Weights::Bf16 => 2 * optimizer.moments(),
            // The fp32 master copy, whatever the optimizer.
            Weights::Mixed => 4 + 4 * optimizer.moments(),
        }
    }
}

/// The optimizer, by the state it keeps per parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    Sgd,
    Momentum,
    Adam,
}

impl Optimizer {
    pub const ALL: [Optimizer; 3] = [Optimizer::Sgd, Optimizer::Momentum, Optimizer::Adam];

    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Sgd => "sgd",
            Optimizer::Momentum => "momentum",
            Optimizer::Adam => "adam",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Optimizer::Sgd => "SGD: ×0",
            Optimizer::Momentum => "SGD + momentum: ×1",
            Optimizer::Adam => "Adam(W): ×2",
        }
    }

    pub fn from_name(name: &str) -> Option<Optimizer> {
        Optimizer::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Buffers of one parameter's size the optimizer keeps.
    pub fn moments(self) -> u64 {
        match self {
            Optimizer::Sgd => 0,
            Optimizer::Momentum => 1,
            Optimizer::Adam => 2,
        }
    }
}

/// The model's own state on the device: typed in as one size, or counted
/// from the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelState {
    /// Weights + gradients + optimizer state, as measured or known.
    Entered(u64),
    Counted {
        parameters: u64,
        weights: Weights,
        optimizer: Optimizer,
    },
}

/// The allocator's margin: a share of the GPU memory, or a size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Margin {
    /// Percent of the GPU memory (0 to 100).
    Percent(f64),
    Bytes(u64),
}

impl Margin {
    pub fn bytes(self, gpu: u64) -> u64 {
        match self {
            Margin::Percent(p) => (gpu as f64 * p / 100.0).round() as u64,
            Margin::Bytes(b) => b,
        }
    }
}

impl fmt::Display for Margin {
    /// As a link and the text box write it: `10%` or a size in bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Margin::Percent(p) => write!(f, "{p}%"),
            Margin::Bytes(b) => write!(f, "{b}"),
        }
    }
}

/// Reads a margin: `10%`, or a size (`2 GiB`, `1.5e9`).
pub fn parse_margin(text: &str) -> Result<Margin, String> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        return match p.trim().parse::<f64>() {
            Ok(p) if (0.0..100.0).contains(&p) => Ok(Margin::Percent(p)),
            _ => Err(format!(
                "margin: \"{t}\" is not a percentage from 0 to under 100"
            )),
        };
    }
    remat_core::model::units::parse_size(t)
        .map(Margin::Bytes)
        .map_err(|e| format!("margin: {e}"))
}

/// The inputs of the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceInputs {
    pub gpu_bytes: u64,
    pub model: ModelState,
    pub margin: Margin,
}

/// The default margin, `remat maxbatch`'s (`remat_core::maxbatch::
/// DEFAULT_MARGIN`, 1 %: what the reference H100's measured largest
/// batches left unexplained): the page and the CLI answer alike unless told
/// otherwise. Without expandable segments fragmentation takes more: about
/// 10 % there (the card says so).
pub const DEFAULT_MARGIN: Margin = match remat_core::maxbatch::DEFAULT_MARGIN {
    remat_core::maxbatch::Margin::OfMemory(share) => Margin::Percent(share * 100.0),
    remat_core::maxbatch::Margin::Bytes(bytes) => Margin::Bytes(bytes),
};

impl DeviceInputs {
    /// An 80 GB GPU, the model counted with fp32 and Adam, the default margin.
    pub fn new(parameters: u64) -> DeviceInputs {
        DeviceInputs {
            gpu_bytes: GPU_PRESETS[0].0,
            model: ModelState::Counted {
                parameters,
                weights: Weights::Fp32,
                optimizer: Optimizer::Adam,
            },
            margin: DEFAULT_MARGIN,
        }
    }
}

/// Where the GPU memory goes, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Breakdown {
    pub gpu: u64,
    /// Weights, gradients, optimizer state; an entered size is all in
    /// `model_total` with the three parts 0.
    pub weights: u64,
    pub gradients: u64,
    pub optimizer: u64,
    pub model_total: u64,
    pub margin: u64,
}

/// The GPU is full before any activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overcommitted {
    /// Bytes too many.
    pub by: u64,
}

impl fmt::Display for Overcommitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the model's state and the margin exceed the GPU memory by {}: no room for activations",
            format_bytes(self.by)
        )
    }
}

impl Breakdown {
    /// `gradients_in_chain`: the chain counts the parameter gradients
    /// (`parameter_gradient_bytes`, `zero_grad(set_to_none=True)`), so a
    /// counted model state leaves them out rather than count them twice.
    pub fn of(inputs: &DeviceInputs, gradients_in_chain: bool) -> Breakdown {
        let (weights, gradients, optimizer) = match inputs.model {
            ModelState::Entered(_) => (0, 0, 0),
            ModelState::Counted {
                parameters,
                weights,
                optimizer,
            } => (
                parameters.saturating_mul(weights.element_bytes()),
                if gradients_in_chain {
                    0
                } else {
                    parameters.saturating_mul(weights.element_bytes())
                },
                parameters.saturating_mul(weights.state_bytes(optimizer)),
            ),
        };
        let model_total = match inputs.model {
            ModelState::Entered(b) => b,
            ModelState::Counted { .. } => {
                weights.saturating_add(gradients).saturating_add(optimizer)
            }
        };
        Breakdown {
            gpu: inputs.gpu_bytes,
            weights,
            gradients,
            optimizer,
            model_total,
            margin: inputs.margin.bytes(inputs.gpu_bytes),
        }
    }

    /// The activation budget: what is left, or by how much it is short.
    pub fn activations(&self) -> Result<u64, Overcommitted> {
        let taken = self.model_total.saturating_add(self.margin);
        self.gpu.checked_sub(taken).ok_or_else(|| Overcommitted {
            by: taken - self.gpu,
        })
    }
}

/// Bytes per parameter of weights + gradients + optimizer state.
pub fn bytes_per_parameter(weights: Weights, optimizer: Optimizer) -> u64 {
    2 * weights.element_bytes() + weights.state_bytes(optimizer)
}

/// Where an activation budget stands against the chain's floor (the least
/// any schedule needs) and its range M_low … M_high.
pub fn against_range(activations: u64, floor: u64, (low, high): (u64, u64)) -> &'static str {
    if activations < floor {
        "below the floor: no schedule of this chain fits, offloading or not; a smaller batch is needed"
    } else if activations < low {
        "below M_low: no schedule that only recomputes fits; offloading can, down to the floor, or a smaller batch"
    } else if activations >= high {
        "at or above M_high: everything can be kept, no recomputation needed"
    } else {
        "between M_low and M_high: checkpointing makes it fit, at some recomputation"
    }
}

/// A parameter count in words (143.7 M).
pub fn format_count(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.2} B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// Reads a parameter count: `124439808`, `124.4M`, `1.5B`, `350k`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim().replace(['_', ' '], "");
    let (number, factor) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('b' | 'B' | 'g' | 'G') => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    match number.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x * factor < 1e15 => Ok((x * factor).round() as u64),
        _ => Err(format!(
            "parameters: \"{}\" is not a count (e.g. 124M, 1.5B, 350000)",
            text.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Fails if a term is left out or counted twice; each expected value is
    // the sum written by hand from the per-parameter bytes (ZeRO's 16 B
    // for mixed precision with Adam). Mutations tried: Mixed without the
    // master copy (12 B), Adam with one moment, the margin not subtracted:
    // each failed here.
    #[test]
    fn the_activation_budget_is_what_the_model_and_margin_leave() {
        let p = 1_000_000u64;
        for (weights, optimizer, per_parameter) in [
            (Weights::Fp32, Optimizer::Sgd, 8),
            (Weights::Fp32, Optimizer::Momentum, 12),
            (Weights::Fp32, Optimizer::Adam, 16),
            (Weights::Bf16, Optimizer::Sgd, 4),
            (Weights::Bf16, Optimizer::Adam, 8),
            (Weights::Mixed, Optimizer::Sgd, 8),
            (Weights::Mixed, Optimizer::Momentum, 12),
            (Weights::Mixed, Optimizer::Adam, 16),
        ] {
            assert_eq!(bytes_per_parameter(weights, optimizer), per_parameter);
            let inputs = DeviceInputs {
                gpu_bytes: 100 * p,
                model: ModelState::Counted {
                    parameters: p,
                    weights,
                    optimizer,
                },
                margin: Margin::Percent(10.0),
            };
            let b = Breakdown::of(&inputs, false);
            assert_eq!(b.weights + b.gradients + b.optimizer, b.model_total);
            // A chain that counts the gradients itself: they leave the
            // model state (fails if they were counted twice).
            let inside = Breakdown::of(&inputs, true);
            assert_eq!(inside.gradients, 0);
            assert_eq!(inside.model_total, b.model_total - b.weights);
            assert_eq!(
                b.model_total,
                per_parameter * p,
                "{weights:?} {optimizer:?}"
            );
            assert_eq!(b.margin, 10 * p);
            assert_eq!(b.activations(), Ok((90 - per_parameter) * p));
        }
        // VGG-19 in fp32 with Adam on an 80 GB card: 143.7 M × 16 B = 2.14
        // GiB of model state, a 1 % margin as `remat maxbatch` keeps (the
        // page kept 10 % until issue 45: a max batch the CLI did not give).
        let b = Breakdown::of(&DeviceInputs::new(143_667_240), false);
        assert_eq!(b.model_total, 143_667_240 * 16);
        let margin = remat_core::maxbatch::DEFAULT_MARGIN.bytes(80 << 30);
        assert_eq!(b.margin, margin);
        assert_eq!(b.margin, ((80u64 << 30) as f64 * 0.01).round() as u64);
        assert_eq!(b.activations(), Ok((80 << 30) - margin - 143_667_240 * 16));
    }

    // Fails if an overfull GPU wraps around to a huge budget (tried:
    // wrapping_sub: a budget of 16 EiB).
    #[test]
    fn an_overfull_gpu_says_by_how_much() {
        let b = Breakdown::of(
            &DeviceInputs {
                gpu_bytes: 24 << 30,
                model: ModelState::Entered(23 << 30),
                margin: Margin::Bytes(2 << 30),
            },
            false,
        );
        assert_eq!(b.model_total, 23 << 30);
        assert_eq!(b.activations(), Err(Overcommitted { by: 1 << 30 }));
        assert!(b
            .activations()
            .unwrap_err()
            .to_string()
            .contains("1.00 GiB"));
    }

    #[test]
    fn margins_and_counts_read_as_typed() {
        assert_eq!(parse_margin("10%"), Ok(Margin::Percent(10.0)));
        assert_eq!(parse_margin(" 2.5 % "), Ok(Margin::Percent(2.5)));
        assert_eq!(parse_margin("2 GiB"), Ok(Margin::Bytes(2 << 30)));
        assert!(parse_margin("120%").unwrap_err().starts_with("margin:"));
        assert!(parse_margin("lots").unwrap_err().starts_with("margin:"));
        assert_eq!(Margin::Percent(5.0).bytes(200), 10);
        for m in [Margin::Percent(7.5), Margin::Bytes(123)] {
            assert_eq!(parse_margin(&m.to_string()), Ok(m));
        }
        assert_eq!(parse_count("124.4M"), Ok(124_400_000));
        assert_eq!(parse_count("1.5B"), Ok(1_500_000_000));
        assert_eq!(parse_count("25_557_032"), Ok(25_557_032));
        assert!(parse_count("-3").unwrap_err().starts_with("parameters:"));
        assert_eq!(format_count(143_667_240), "143.7 M");
        assert_eq!(format_count(25_557_032), "25.6 M");
    }

    #[test]
    fn the_budget_is_placed_against_the_range() {
        assert!(against_range(3, 4, (10, 20)).starts_with("below the floor"));
        assert!(against_range(5, 4, (10, 20)).starts_with("below M_low"));
        assert!(against_range(15, 4, (10, 20)).starts_with("between"));
        assert!(against_range(20, 4, (10, 20)).starts_with("at or above"));
    }
}
