//! A chain rescaled to another batch size, sequence length or precision.
//!
//! The rule is linear: every size a stage keeps or needs (ω_a, ω_ā, ω_δ,
//! o_f, the no-grad o_f, o_b, the input) is multiplied by `bytes`, every time (u_f, u_b and
//! the no-grad forward) by `seconds`. That is what happens to activations
//! when the batch grows, and it is only an approximation, on purpose said
//! wherever a scaled chain is shown:
//! * parameter gradients ∂W, measured inside o_b, do not grow with the
//!   batch, so a scaled-up chain overstates o_b a little (and a scaled-down
//!   one understates it). Where a stage says how many it keeps (g^ℓ,
//!   `parameter_gradient_bytes`), those are kept as they are and only the
//!   rest of o_b is scaled;
//! * a small batch does not fill the GPU, so times grow less than linearly
//!   from a small profiled batch, and kernels change with the shape;
//! * attention scores grow with the square of the sequence length.
//!
//! Where two profiles at two batches exist, an affine fit (size = fixed +
//! per-sample × batch) is the better model: [`AffineFit`] draws every field
//! through both profiles, so ∂W and the launch time a small batch is bound
//! by land in the fixed part. [`BatchModel`] is either rule, as a function
//! of the batch.
//!
//! A chain's `inputs` describe the tensors it was measured on. A scaled
//! chain was not measured on them, and which dimension is the batch (or
//! what the dtype becomes at another precision) is not known here: a
//! position-ids tensor of shape [1, 128] does not grow with the batch, and
//! a sequence-first one has its batch second. So the inputs are kept only
//! where the chain is a measured one unchanged: [`scaled`] by factors of
//! exactly 1, or an affine fit read at one of its two profiled batches
//! (that profile's inputs); anywhere else the scaled chain has none. Stage
//! names and modules are kept: the stages are the same.

use super::{Chain, ChainError, MenuOption, Stage};

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

/// `chain` with its sizes and times multiplied by `scale`, its `inputs`
/// dropped unless both factors are 1 (the module doc says why). Sizes round
/// to the nearest byte. Refused (naming the factor) when a factor is not a
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
    if scale.bytes != 1.0 || scale.seconds != 1.0 {
        // Measured on the batch the chain was: not this one's (and a step
        // constant may scale with the batch, a mask, or not, a table).
        out.inputs = None;
        out.peers.clear();
        out.constant_bytes = None;
    }
    out.input_bytes = size("input_bytes", chain.input_bytes)?;
    out.input_gradient_bytes = size("input_gradient_bytes", chain.input_gradient_bytes)?;
    for (l, s) in out.stages.iter_mut().enumerate() {
        let at = |field: &str| format!("stages[{l}].{field}");
        s.output_bytes = size(&at("output_bytes"), s.output_bytes)?;
        s.saved_bytes = size(&at("saved_bytes"), s.saved_bytes)?;
        s.gradient_bytes = size(&at("gradient_bytes"), s.gradient_bytes)?;
        s.input_freed_bytes = size(&at("input_freed_bytes"), s.input_freed_bytes)?;
        s.forward_overhead_bytes = signed(&at("forward_overhead_bytes"), s.forward_overhead_bytes)?;
        s.forward_nograd_overhead_bytes = s
            .forward_nograd_overhead_bytes
            .map(|o| signed(&at("forward_nograd_overhead_bytes"), o))
            .transpose()?;
        // g^ℓ is the parameters' and stays; o_b scales around it.
        let g = s.parameter_gradient_bytes as i64;
        s.backward_overhead_bytes = signed(
            &at("backward_overhead_bytes"),
            s.backward_overhead_bytes - g,
        )? + g;
        s.forward_seconds *= scale.seconds;
        s.backward_seconds *= scale.seconds;
        s.forward_nograd_seconds = s.forward_nograd_seconds.map(|t| t * scale.seconds);
        for (k, o) in s.menu.iter_mut().enumerate() {
            let at = |field: &str| format!("stages[{l}].menu[{k}].{field}");
            o.saved_bytes = size(&at("saved_bytes"), o.saved_bytes)?;
            o.backward_overhead_bytes = signed(
                &at("backward_overhead_bytes"),
                o.backward_overhead_bytes - g,
            )? + g;
            o.forward_overhead_bytes = o
                .forward_overhead_bytes
                .map(|v| signed(&at("forward_overhead_bytes"), v))
                .transpose()?;
            o.backward_extra_seconds *= scale.seconds;
        }
    }
    out.validate()?;
    Ok(out)
}

/// A chain as a function of the batch size: one profile scaled linearly,
/// or two profiles fitted affinely.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchModel {
    /// One profile at `batch` samples: sizes and times × b / batch
    /// ([`Scale::batch`], with the limits the module doc states).
    Linear { chain: Chain, batch: u64 },
    /// Two profiles: each field fixed + per-sample × b through both.
    Affine(AffineFit),
}

impl BatchModel {
    /// One profile at `batch` (≥ 1, refused naming `batch`).
    pub fn linear(chain: Chain, batch: u64) -> Result<BatchModel, ChainError> {
        if batch == 0 {
            return Err(ChainError::new(
                "batch",
                "a profile's batch must be at least 1",
            ));
        }
        Ok(BatchModel::Linear { chain, batch })
    }

    /// The chain at `batch` samples (≥ 1, refused naming `batch`). Errors
    /// name the field that cannot be represented there (too large, or
    /// negative on an affine fit that falls with the batch).
    pub fn at(&self, batch: u64) -> Result<Chain, ChainError> {
        if batch == 0 {
            return Err(ChainError::new("batch", "must be at least 1"));
        }
        match self {
            BatchModel::Linear { chain, batch: from } => scaled(chain, Scale::batch(*from, batch)),
            BatchModel::Affine(fit) => fit.at(batch),
        }
    }

    /// The batches profiled: one, or the fit's two.
    pub fn profiled_batches(&self) -> Vec<u64> {
        match self {
            BatchModel::Linear { batch, .. } => vec![*batch],
            BatchModel::Affine(fit) => vec![fit.first_batch, fit.second_batch],
        }
    }

    /// The profile (the first one of a fit): its name, source, stages.
    pub fn profile(&self) -> &Chain {
        match self {
            BatchModel::Linear { chain, .. } => chain,
            BatchModel::Affine(fit) => &fit.first,
        }
    }
}

/// Two profiles of the same chain at two batches; every size and time is
/// the line through both: v(b) = v₁ (b₂ − b)/(b₂ − b₁) + v₂ (b − b₁)/(b₂ − b₁),
/// which is v₁ at b₁ and v₂ at b₂ exactly (sizes in integers, times with
/// one weight 0 and the other 1). Name, source and bandwidth are the first
/// profile's (a link does not depend on the batch); the inputs are the
/// profile's at a profiled batch, none elsewhere (the module doc says why).
#[derive(Clone, Debug, PartialEq)]
pub struct AffineFit {
    first: Chain,
    first_batch: u64,
    second: Chain,
    second_batch: u64,
}

impl AffineFit {
    /// Refused, naming the field, when a batch is 0, the batches are equal,
    /// or the profiles are not of the same stages (`second.stages`: their
    /// number; `second.stages[i].name`: the first name that differs).
    pub fn new(
        first: Chain,
        first_batch: u64,
        second: Chain,
        second_batch: u64,
    ) -> Result<AffineFit, ChainError> {
        for (path, batch) in [("first.batch", first_batch), ("second.batch", second_batch)] {
            if batch == 0 {
                return Err(ChainError::new(
                    path,
                    "a profile's batch must be at least 1",
                ));
            }
        }
        if first_batch == second_batch {
            return Err(ChainError::new(
                "second.batch",
                format!("equals the first profile's batch ({first_batch}): an affine fit needs two different batches"),
            ));
        }
        if first.len() != second.len() {
            return Err(ChainError::new(
                "second.stages",
                format!(
                    "{} stages, the first profile has {}: both must profile the same stages",
                    second.len(),
                    first.len()
                ),
            ));
        }
        for (i, (a, b)) in first.stages.iter().zip(&second.stages).enumerate() {
            if a.name != b.name {
                return Err(ChainError::new(
                    format!("second.stages[{i}].name"),
                    format!(
                        "`{}`, the first profile's stage {i} is `{}`: both must profile the same stages",
                        b.name, a.name
                    ),
                ));
            }
        }
        Ok(AffineFit {
            first,
            first_batch,
            second,
            second_batch,
        })
    }

    /// The chain at `batch` (any batch ≥ 1: between the two profiles it
    /// interpolates, beyond them it extrapolates). Validated like a chain
    /// read from a file.
    pub fn at(&self, batch: u64) -> Result<Chain, ChainError> {
        let line = Line {
            b1: self.first_batch as i128,
            b2: self.second_batch as i128,
            b: batch as i128,
        };
        let (a, c) = (&self.first, &self.second);
        let mut out = a.clone();
        out.input_bytes = line.size("input_bytes", a.input_bytes, c.input_bytes)?;
        out.input_gradient_bytes = line.size(
            "input_gradient_bytes",
            a.input_gradient_bytes,
            c.input_gradient_bytes,
        )?;
        out.bandwidth_bytes_per_s = a.bandwidth_bytes_per_s.or(c.bandwidth_bytes_per_s);
        (out.inputs, out.peers) = match batch {
            b if b == self.first_batch => (a.inputs.clone(), a.peers.clone()),
            b if b == self.second_batch => (c.inputs.clone(), c.peers.clone()),
            _ => (None, Vec::new()),
        };
        // A constant is a mask (linear in the batch) or a table (fixed):
        // the line through both batches holds either.
        out.constant_bytes = match (a.constant_bytes, c.constant_bytes) {
            (Some(x), Some(y)) => Some(line.size("constant_bytes", x, y)?),
            _ => None,
        };
        for (l, (s, (x, y))) in out
            .stages
            .iter_mut()
            .zip(a.stages.iter().zip(&c.stages))
            .enumerate()
        {
            *s = line.stage(l, x, y)?;
        }
        out.validate()?;
        Ok(out)
    }
}

/// The line through (b₁, v₁) and (b₂, v₂), read at b.
struct Line {
    b1: i128,
    b2: i128,
    b: i128,
}

impl Line {
    fn stage(&self, l: usize, x: &Stage, y: &Stage) -> Result<Stage, ChainError> {
        let at = |field: &str| format!("stages[{l}].{field}");
        let nograd = (x.forward_nograd_seconds.is_some() || y.forward_nograd_seconds.is_some())
            .then(|| {
                self.seconds(
                    &at("forward_nograd_seconds"),
                    x.nograd_forward_seconds(),
                    y.nograd_forward_seconds(),
                )
            })
            .transpose()?;
        let nograd_overhead = (x.forward_nograd_overhead_bytes.is_some()
            || y.forward_nograd_overhead_bytes.is_some())
        .then(|| {
            self.signed(
                &at("forward_nograd_overhead_bytes"),
                x.nograd_forward_overhead() as i64,
                y.nograd_forward_overhead() as i64,
            )
        })
        .transpose()?;
        Ok(Stage {
            name: x.name.clone(),
            forward_seconds: self.seconds(
                &at("forward_seconds"),
                x.forward_seconds,
                y.forward_seconds,
            )?,
            backward_seconds: self.seconds(
                &at("backward_seconds"),
                x.backward_seconds,
                y.backward_seconds,
            )?,
            output_bytes: self.size(&at("output_bytes"), x.output_bytes, y.output_bytes)?,
            saved_bytes: self.size(&at("saved_bytes"), x.saved_bytes, y.saved_bytes)?,
            gradient_bytes: self.size(&at("gradient_bytes"), x.gradient_bytes, y.gradient_bytes)?,
            parameter_gradient_bytes: self.size(
                &at("parameter_gradient_bytes"),
                x.parameter_gradient_bytes,
                y.parameter_gradient_bytes,
            )?,
            forward_overhead_bytes: self.signed(
                &at("forward_overhead_bytes"),
                x.forward_overhead_bytes,
                y.forward_overhead_bytes,
            )?,
            backward_overhead_bytes: self.signed(
                &at("backward_overhead_bytes"),
                x.backward_overhead_bytes,
                y.backward_overhead_bytes,
            )?,
            input_freed_bytes: self.size(
                &at("input_freed_bytes"),
                x.input_freed_bytes,
                y.input_freed_bytes,
            )?,
            forward_nograd_seconds: nograd,
            forward_nograd_overhead_bytes: nograd_overhead,
            module: x.module.clone(),
            parameters: x.parameters.clone(),
            menu: self.menu(l, x, y)?,
        })
    }

    /// Both profiles' menus fitted entry by entry; they must list the same
    /// policies in the same order (one `describe_chain` measures both).
    fn menu(&self, l: usize, x: &Stage, y: &Stage) -> Result<Vec<MenuOption>, ChainError> {
        let names = |s: &Stage| s.menu.iter().map(|o| o.policy.clone()).collect::<Vec<_>>();
        if names(x) != names(y) {
            return Err(ChainError::new(
                format!("stages[{l}].menu"),
                format!(
                    "the two profiles offer other options ({:?} and {:?}): measure both with the same menu",
                    names(x),
                    names(y)
                ),
            ));
        }
        x.menu
            .iter()
            .zip(&y.menu)
            .enumerate()
            .map(|(k, (p, q))| {
                let at = |field: &str| format!("stages[{l}].menu[{k}].{field}");
                let forward_overhead_bytes = (p.forward_overhead_bytes.is_some()
                    || q.forward_overhead_bytes.is_some())
                .then(|| {
                    self.signed(
                        &at("forward_overhead_bytes"),
                        x.choice(k + 1).forward_overhead as i64,
                        y.choice(k + 1).forward_overhead as i64,
                    )
                })
                .transpose()?;
                Ok(MenuOption {
                    policy: p.policy.clone(),
                    saved_bytes: self.size(&at("saved_bytes"), p.saved_bytes, q.saved_bytes)?,
                    backward_extra_seconds: self.seconds(
                        &at("backward_extra_seconds"),
                        p.backward_extra_seconds,
                        q.backward_extra_seconds,
                    )?,
                    backward_overhead_bytes: self.signed(
                        &at("backward_overhead_bytes"),
                        p.backward_overhead_bytes,
                        q.backward_overhead_bytes,
                    )?,
                    forward_overhead_bytes,
                })
            })
            .collect()
    }

    /// v₁ (b₂ − b) + v₂ (b − b₁) over b₂ − b₁, rounded to the nearest byte,
    /// in i128 (no overflow for 64-bit sizes and batches).
    fn bytes(&self, v1: i128, v2: i128) -> i128 {
        let (mut num, mut den) = (
            v1 * (self.b2 - self.b) + v2 * (self.b - self.b1),
            self.b2 - self.b1,
        );
        if den < 0 {
            (num, den) = (-num, -den);
        }
        // Round half away from zero.
        let q = (2 * num.abs() + den) / (2 * den);
        if num < 0 {
            -q
        } else {
            q
        }
    }

    fn size(&self, path: &str, v1: u64, v2: u64) -> Result<u64, ChainError> {
        let x = self.bytes(v1 as i128, v2 as i128);
        if x < 0 {
            return Err(self.negative(path, v1 as f64, v2 as f64));
        }
        if x >= (u64::MAX / 2) as i128 {
            return Err(ChainError::new(
                path,
                format!("too large at batch {}", self.b),
            ));
        }
        Ok(x as u64)
    }

    fn signed(&self, path: &str, v1: i64, v2: i64) -> Result<i64, ChainError> {
        let x = self.bytes(v1 as i128, v2 as i128);
        if x.abs() >= (i64::MAX / 2) as i128 {
            return Err(ChainError::new(
                path,
                format!("too large at batch {}", self.b),
            ));
        }
        Ok(x as i64)
    }

    fn seconds(&self, path: &str, t1: f64, t2: f64) -> Result<f64, ChainError> {
        let den = (self.b2 - self.b1) as f64;
        let t = t1 * ((self.b2 - self.b) as f64 / den) + t2 * ((self.b - self.b1) as f64 / den);
        if t < 0.0 {
            return Err(self.negative(path, t1, t2));
        }
        Ok(t)
    }

    fn negative(&self, path: &str, v1: f64, v2: f64) -> ChainError {
        ChainError::new(
            path,
            format!(
                "the affine fit through {v1} at batch {} and {v2} at batch {} is negative at batch {}",
                self.b1, self.b2, self.b
            ),
        )
    }
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
        let mut chain = examples::resnet50();
        chain.stages[1].forward_nograd_overhead_bytes = Some(12345);
        let twice = scaled(&chain, Scale::batch(32, 64)).unwrap();
        assert_eq!(twice.input_bytes, 2 * chain.input_bytes);
        assert_eq!(twice.input_gradient_bytes, 2 * chain.input_gradient_bytes);
        for (a, b) in chain.stages.iter().zip(&twice.stages) {
            assert_eq!(b.output_bytes, 2 * a.output_bytes);
            assert_eq!(b.saved_bytes, 2 * a.saved_bytes);
            assert_eq!(b.gradient_bytes, 2 * a.gradient_bytes);
            assert_eq!(b.forward_overhead_bytes, 2 * a.forward_overhead_bytes);
            assert_eq!(
                b.forward_nograd_overhead_bytes,
                a.forward_nograd_overhead_bytes.map(|o| 2 * o)
            );
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

#[cfg(test)]
mod affine_tests {
    use super::*;
    use crate::examples;

    /// A profile of `chain` at another batch: every size × k plus a fixed
    /// part, every time × k plus a fixed part, so that no field is
    /// proportional to the batch.
    fn at_another_batch(chain: &Chain, k: u64) -> Chain {
        let mut c = scaled(chain, Scale::batch(1, k)).unwrap();
        c.input_bytes += 7;
        for s in &mut c.stages {
            s.saved_bytes += 1000;
            s.output_bytes += 3;
            s.gradient_bytes += 3;
            s.backward_overhead_bytes += 11;
            s.forward_seconds += 1e-4;
            s.backward_seconds += 3e-4;
            s.forward_nograd_seconds = Some(s.forward_seconds * 0.9);
            s.forward_nograd_overhead_bytes = Some(s.forward_overhead_bytes / 2 + 5);
        }
        c
    }

    // Fails if the fit does not go through both profiles exactly (mutation
    // tried: the f64 form v₁ + (v₂ − v₁)·t for the times missed the second
    // profile's backward_seconds by one ulp; a weight swapped (b − b₂) made
    // every field wrong), or if a field is left out of the rule (dropping the
    // gradient_bytes line: the second profile differed).
    #[test]
    fn the_fit_reproduces_both_profiles_exactly() {
        let first = examples::by_name("resnet50-h100").unwrap();
        let second = at_another_batch(&first, 3);
        let fit = AffineFit::new(first.clone(), 32, second.clone(), 96).unwrap();
        for (batch, profile) in [(32, &first), (96, &second)] {
            let got = fit.at(batch).unwrap();
            assert_eq!(got.stages.len(), profile.stages.len());
            for (g, p) in got.stages.iter().zip(&profile.stages) {
                // The first profile has no no-grad times: the fit takes u_f.
                let p_nograd = Some(p.nograd_forward_seconds());
                assert_eq!(g.forward_nograd_seconds, p_nograd, "{}", p.name);
                // Likewise its no-grad overheads: o_f.
                let p_overhead = Some(p.nograd_forward_overhead() as i64);
                assert_eq!(g.forward_nograd_overhead_bytes, p_overhead, "{}", p.name);
                let g = Stage {
                    forward_nograd_seconds: None,
                    forward_nograd_overhead_bytes: None,
                    ..g.clone()
                };
                let p = Stage {
                    forward_nograd_seconds: None,
                    forward_nograd_overhead_bytes: None,
                    ..p.clone()
                };
                assert_eq!(g, p, "at batch {batch}");
            }
            assert_eq!(got.input_bytes, profile.input_bytes);
            assert_eq!(got.input_gradient_bytes, profile.input_gradient_bytes);
        }
        // Half-way, each size is the mean of both (rounded).
        let mid = fit.at(64).unwrap();
        let want = (first.stages[3].saved_bytes + second.stages[3].saved_bytes).div_ceil(2);
        assert_eq!(mid.stages[3].saved_bytes, want);
        // The linear model is Scale::batch, and the identity at its batch.
        let linear = BatchModel::linear(first.clone(), 32).unwrap();
        assert_eq!(
            linear.at(64).unwrap(),
            scaled(&first, Scale::batch(32, 64)).unwrap()
        );
        assert_eq!(linear.at(32).unwrap(), first);
    }

    // Fails if profiles of different chains were fitted silently (mutation
    // tried: dropping the name check let a renamed stage through).
    #[test]
    fn inconsistent_profiles_are_refused_naming_the_field() {
        let a = examples::teaching();
        let mut fewer = a.clone();
        fewer.stages.pop();
        let e = AffineFit::new(a.clone(), 8, fewer, 16).unwrap_err();
        assert_eq!(e.path, "second.stages");
        assert!(
            e.message.starts_with("9 stages, the first profile has 10"),
            "{e}"
        );
        let mut renamed = a.clone();
        renamed.stages[4].name = "other".into();
        let e = AffineFit::new(a.clone(), 8, renamed, 16).unwrap_err();
        assert_eq!(e.path, "second.stages[4].name");
        let e = AffineFit::new(a.clone(), 8, a.clone(), 8).unwrap_err();
        assert_eq!(e.path, "second.batch");
        let e = AffineFit::new(a.clone(), 0, a.clone(), 8).unwrap_err();
        assert_eq!(e.path, "first.batch");
        assert_eq!(BatchModel::linear(a.clone(), 0).unwrap_err().path, "batch");
        assert_eq!(
            BatchModel::linear(a, 8).unwrap().at(0).unwrap_err().path,
            "batch"
        );
    }

    // Fails if a fit that falls with the batch produced a wrapped-around or
    // silently clamped size instead of naming it.
    #[test]
    fn a_fit_that_goes_negative_names_the_field() {
        let a = examples::teaching();
        let mut smaller = a.clone();
        smaller.stages[2].forward_seconds /= 2.0;
        // Times falling with the batch: negative a little past the second.
        let fit = AffineFit::new(a, 1, smaller, 2).unwrap();
        let e = fit.at(4).unwrap_err();
        assert_eq!(e.path, "stages[2].forward_seconds");
        assert!(e.message.contains("negative at batch 4"), "{e}");
    }

    // Fails if a scaled chain kept the inputs it was not measured on (at
    // batch 8, `input_ids [4, 128]` would be wrong), if the identity or a
    // profiled batch dropped them (mutation tried: `out.inputs = None`
    // unconditionally in `scaled`; the fit answering the first profile's
    // inputs at the second batch), or if a rescale lost the stages' modules.
    #[test]
    fn inputs_are_kept_only_where_the_chain_is_measured_and_modules_always() {
        let described = |batch: u64| {
            let mut c = examples::teaching();
            c.inputs = Some(vec![crate::model::InputTensor {
                name: "input_ids".into(),
                shape: vec![batch, 128],
                dtype: "int64".into(),
            }]);
            c.stages[2].module = Some("transformer.h.1".into());
            c
        };
        let first = described(4);
        let twice = scaled(&first, Scale::batch(4, 8)).unwrap();
        assert_eq!(twice.inputs, None);
        assert_eq!(twice.stages[2].module, first.stages[2].module);
        assert_eq!(scaled(&first, Scale::bytes(0.5)).unwrap().inputs, None);
        assert_eq!(scaled(&first, Scale::batch(4, 4)).unwrap(), first);
        let linear = BatchModel::linear(first.clone(), 4).unwrap();
        assert_eq!(linear.at(4).unwrap().inputs, first.inputs);

        let mut second = scaled(&first, Scale::batch(4, 16)).unwrap();
        second.inputs = described(16).inputs;
        let fit = AffineFit::new(first.clone(), 4, second.clone(), 16).unwrap();
        assert_eq!(fit.at(4).unwrap().inputs, first.inputs);
        assert_eq!(fit.at(16).unwrap().inputs, second.inputs);
        let between = fit.at(8).unwrap();
        assert_eq!(between.inputs, None);
        assert_eq!(between.stages[2].module, first.stages[2].module);
    }
}
