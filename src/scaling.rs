//! A built-in example at another batch size, sequence length or precision:
//! the core's linear rule (`remat_core::model::scale`) applied from the
//! profile the example carries. Plain Rust, tested on the host.

use remat_core::examples::{Example, Precision, Profile};
use remat_core::model::scale::{scaled, Scale};
use remat_core::Chain;

/// The largest batch and sequence the controls take (beyond them a chain
/// is a scaling artefact, not a plan).
pub const MAX_BATCH: u64 = 65_536;
pub const MAX_SEQUENCE: u64 = 1 << 20;

/// What the user changed; None: as profiled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExampleScale {
    pub batch: Option<u64>,
    pub sequence: Option<u64>,
    pub precision: Option<Precision>,
}

impl ExampleScale {
    /// The same scale with what equals the profile left out (a link then
    /// says only what differs).
    pub fn against(self, profile: &Profile) -> ExampleScale {
        ExampleScale {
            batch: self.batch.filter(|&b| b != profile.batch),
            sequence: self.sequence.filter(|&s| Some(s) != profile.sequence),
            precision: self.precision.filter(|&p| p != profile.precision),
        }
    }

    pub fn is_profiled(&self) -> bool {
        *self == ExampleScale::default()
    }
}

/// Why a scale cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleError(pub String);

impl std::fmt::Display for ScaleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The factors from `profile` to `wanted`: batch and sequence linear in
/// sizes and times, precision in sizes only.
pub fn factors(profile: &Profile, wanted: &ExampleScale) -> Result<Scale, ScaleError> {
    let mut scale = Scale::bytes(1.0);
    if let Some(b) = wanted.batch {
        if !(1..=MAX_BATCH).contains(&b) {
            return Err(ScaleError(format!(
                "batch: {b} is outside 1 to {MAX_BATCH}"
            )));
        }
        scale = scale.then(Scale::batch(profile.batch, b));
    }
    if let Some(s) = wanted.sequence {
        let Some(from) = profile.sequence else {
            return Err(ScaleError(
                "sequence: this example has no sequence length (an image model)".into(),
            ));
        };
        if !(1..=MAX_SEQUENCE).contains(&s) {
            return Err(ScaleError(format!(
                "sequence: {s} is outside 1 to {MAX_SEQUENCE}"
            )));
        }
        scale = scale.then(Scale::batch(from, s));
    }
    if let Some(p) = wanted.precision {
        scale = scale.then(Scale::bytes(
            p.bytes() as f64 / profile.precision.bytes() as f64,
        ));
    }
    Ok(scale)
}

/// The example's chain at `wanted`, its name saying how it was scaled.
pub fn scaled_example(example: &Example, wanted: &ExampleScale) -> Result<Chain, ScaleError> {
    let chain = example.chain();
    let Some(profile) = example.profile else {
        return if wanted.is_profiled() {
            Ok(chain)
        } else {
            Err(ScaleError(format!(
                "{}: a hand-made chain has no batch or precision to scale",
                example.name
            )))
        };
    };
    let wanted = wanted.against(&profile);
    if wanted.is_profiled() {
        return Ok(chain);
    }
    let scale = factors(&profile, &wanted)?;
    let mut out = scaled(&chain, scale).map_err(|e| ScaleError(e.to_string()))?;
    out.name = format!(
        "{} · {} (scaled linearly)",
        chain.name,
        describe(&profile, &wanted)
    );
    Ok(out)
}

/// `batch 64, seq 2048, bf16` for what differs from the profile.
pub fn describe(profile: &Profile, wanted: &ExampleScale) -> String {
    let mut parts = Vec::new();
    if let Some(b) = wanted.batch {
        parts.push(format!("batch {b} (profiled {})", profile.batch));
    }
    if let (Some(s), Some(from)) = (wanted.sequence, profile.sequence) {
        parts.push(format!("seq {s} (profiled {from})"));
    }
    if let Some(p) = wanted.precision {
        parts.push(format!(
            "{} (profiled {})",
            p.name(),
            profile.precision.name()
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples::find;

    fn at(batch: Option<u64>, sequence: Option<u64>, precision: Option<Precision>) -> ExampleScale {
        ExampleScale {
            batch,
            sequence,
            precision,
        }
    }

    // Fails if a control is read the wrong way round or not at all: the
    // scaled chain must equal the core's rule applied by hand with the
    // factor written out. Mutations tried: Scale::batch(to, from) (halved
    // instead of doubled), precision ignored: each failed here.
    #[test]
    fn batch_sequence_and_precision_scale_as_the_core_rule_says() {
        let gpt2 = find("gpt2-h100-efficient").unwrap();
        let chain = gpt2.chain();
        let out = scaled_example(gpt2, &at(Some(8), Some(2048), Some(Precision::Bf16))).unwrap();
        // × 2 (batch) × 2 (sequence) × ½ (bf16) in bytes; × 4 in time.
        let by_hand = scaled(
            &chain,
            Scale {
                bytes: 2.0,
                seconds: 4.0,
            },
        )
        .unwrap();
        assert_eq!(out.stages, by_hand.stages);
        assert_eq!(out.input_bytes, by_hand.input_bytes);
        assert!(out.name.contains("batch 8 (profiled 4)"), "{}", out.name);
        assert!(out.name.contains("seq 2048"), "{}", out.name);
        assert!(out.name.contains("bf16"), "{}", out.name);
        let vgg = find("vgg19-h100").unwrap();
        let half = scaled_example(vgg, &at(Some(16), None, None)).unwrap();
        let v = vgg.chain();
        assert_eq!(half.stages[0].saved_bytes, v.stages[0].saved_bytes / 2);
        assert_eq!(
            half.stages[0].forward_seconds,
            v.stages[0].forward_seconds / 2.0
        );
    }

    // Fails if the profiled values count as a change (the link and the
    // chain name would then say "scaled" for nothing).
    #[test]
    fn the_profiled_values_are_no_change() {
        let vgg = find("vgg19-h100").unwrap();
        let same = at(Some(32), None, Some(Precision::Fp32));
        assert!(same.against(&vgg.profile.unwrap()).is_profiled());
        assert_eq!(scaled_example(vgg, &same).unwrap(), vgg.chain());
    }

    #[test]
    fn scales_that_cannot_apply_say_which_control() {
        let vgg = find("vgg19-h100").unwrap();
        let e = scaled_example(vgg, &at(None, Some(2048), None)).unwrap_err();
        assert!(e.0.starts_with("sequence:"), "{e}");
        let e = scaled_example(vgg, &at(Some(0), None, None)).unwrap_err();
        assert!(e.0.starts_with("batch:"), "{e}");
        let e = scaled_example(find("teaching").unwrap(), &at(Some(2), None, None)).unwrap_err();
        assert!(e.0.contains("hand-made"), "{e}");
    }
}
