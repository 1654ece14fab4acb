//! A chain rescaled to another batch size, sequence length or precision.
//!
//! The rule is linear: every size a stage keeps or needs (ω_a, ω_ā, ω_δ,
//! o_f, o_b, the input) is multiplied by `bytes`, every time (u_f, u_b and
//! the no-grad forward) by `seconds`. That is what happens to activations
//! when the batch grows, and it is only an approximation, on purpose said
//! wherever a scaled chain is shown:
//! * parameter gradients ∂W, measured inside o_b, do not grow with the
//!   batch, so a scaled-up chain overstates o_b a little (and a scaled-down
//!   one understates it);
//! * a small batch does not fill the GPU, so times grow less than linearly
//!   from a small profiled batch, and kernels change with the shape;
//! * attention scores grow with the square of the sequence length.
//!
//! Where two profiles at two batches exist, an affine fit (size = fixed +
//! per-sample × batch) is the better model.

use super::{Chain, ChainError};

/// Factors applied to a chain's sizes and times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Multiplies every byte count.
    pub bytes: f64,
    /// Multiplies every duration.
    pub seconds: f64,
}

impl Scale {
    /// From a chain profiled at `from` samples to `to` samples: sizes and
    /// times both × to / from.
    pub fn batch(from: u64, to: u64) -> Scale {
        let ratio = to as f64 / from as f64;
        Scale {
            bytes: ratio,
            seconds: ratio,
        }
    }

    /// Sizes only (a change of precision: fp32 → bf16 is `bytes(0.5)`; the
    /// time a real device then takes depends on its tensor cores, not on
    /// this model).
    pub fn bytes(factor: f64) -> Scale {
        Scale {
            bytes: factor,
            seconds: 1.0,
        }
    }

    /// The two scales applied one after the other.
    pub fn then(self, next: Scale) -> Scale {
        Scale {
            bytes: self.bytes * next.bytes,
            seconds: self.seconds * next.seconds,
        }
    }
}

/// `chain` with its sizes and times multiplied by `scale`. Sizes round to
/// the nearest byte. Refused (naming the factor) when a factor is not a
/// finite positive number or a size would not fit in 64 bits; the result is
/// validated like a chain read from a file.
pub fn scaled(chain: &Chain, scale: Scale) -> Result<Chain, ChainError> {
    for (name, factor) in [
        ("scale.bytes", scale.bytes),
        ("scale.seconds", scale.seconds),
    ] {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(ChainError::new(
                name,
                format!("must be a finite number > 0, got {factor}"),
            ));
        }
    }
    let size = |path: &str, bytes: u64| -> Result<u64, ChainError> {
        let x = (bytes as f64 * scale.bytes).round();
        if x >= u64::MAX as f64 / 2.0 {
            return Err(ChainError::new(path, "too large once scaled"));
        }
        Ok(x as u64)
    };
    let signed = |path: &str, bytes: i64| -> Result<i64, ChainError> {
        let x = (bytes as f64 * scale.bytes).round();
        if x.abs() >= i64::MAX as f64 / 2.0 {
            return Err(ChainError::new(path, "too large once scaled"));
        }
        Ok(x as i64)
    };
    let mut out = chain.clone();
    out.input_bytes = size("input_bytes", chain.input_bytes)?;
    out.input_gradient_bytes = size("input_gradient_bytes", chain.input_gradient_bytes)?;
    for (l, s) in out.stages.iter_mut().enumerate() {
        let at = |field: &str| format!("stages[{l}].{field}");
        s.output_bytes = size(&at("output_bytes"), s.output_bytes)?;
        s.saved_bytes = size(&at("saved_bytes"), s.saved_bytes)?;
        s.gradient_bytes = size(&at("gradient_bytes"), s.gradient_bytes)?;
        s.forward_overhead_bytes = signed(&at("forward_overhead_bytes"), s.forward_overhead_bytes)?;
        s.backward_overhead_bytes =
            signed(&at("backward_overhead_bytes"), s.backward_overhead_bytes)?;
        s.forward_seconds *= scale.seconds;
        s.backward_seconds *= scale.seconds;
        s.forward_nograd_seconds = s.forward_nograd_seconds.map(|t| t * scale.seconds);
    }
    out.validate()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples;

    // Fails if a field is left out of the rule (a stage's ω_δ, an overhead,
    // the input): the doubled chain must equal the chain with each field
    // doubled by hand. Mutation tried: dropping the gradient_bytes line.
    #[test]
    fn doubling_the_batch_doubles_every_size_and_time() {
        let chain = examples::resnet50();
        let twice = scaled(&chain, Scale::batch(32, 64)).unwrap();
        assert_eq!(twice.input_bytes, 2 * chain.input_bytes);
        assert_eq!(twice.input_gradient_bytes, 2 * chain.input_gradient_bytes);
        for (a, b) in chain.stages.iter().zip(&twice.stages) {
            assert_eq!(b.output_bytes, 2 * a.output_bytes);
            assert_eq!(b.saved_bytes, 2 * a.saved_bytes);
            assert_eq!(b.gradient_bytes, 2 * a.gradient_bytes);
            assert_eq!(b.forward_overhead_bytes, 2 * a.forward_overhead_bytes);
            assert_eq!(b.backward_overhead_bytes, 2 * a.backward_overhead_bytes);
            assert_eq!(b.forward_seconds, 2.0 * a.forward_seconds);
            assert_eq!(b.backward_seconds, 2.0 * a.backward_seconds);
        }
    }

    // Fails if precision scaling touched the times.
    #[test]
    fn a_precision_change_keeps_the_times() {
        let chain = examples::gpt2();
        let half = scaled(&chain, Scale::bytes(0.5)).unwrap();
        assert_eq!(half.sequential_seconds(), chain.sequential_seconds());
        assert_eq!(
            half.stages[0].output_bytes,
            chain.stages[0].output_bytes / 2
        );
    }

    #[test]
    fn absurd_factors_are_refused_by_name() {
        let chain = examples::teaching();
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = scaled(&chain, Scale::bytes(bad)).unwrap_err();
            assert_eq!(e.path, "scale.bytes");
        }
        let e = scaled(&chain, Scale::batch(1, u64::MAX)).unwrap_err();
        assert!(e.message.contains("too large"), "{e}");
    }
}
