//! The built-in networks and the size arguments each one takes, checked
//! before anything is built (no libtorch needed here).

use crate::arg_error::ArgError;
use crate::user_model::{self, TorchScript};

/// One built-in network: its name, what it is, and which arguments it takes.
#[derive(Debug)]
pub struct ModelInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// Takes `--image PX` (a convolutional net) or `--seq N` (a transformer).
    pub input: InputKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Image { default_px: i64, multiple_of: i64 },
    Tokens { default_seq: i64, max_seq: i64 },
}

pub const MODELS: &[ModelInfo] = &[
    ModelInfo {
        name: "tiny",
        description: "6 conv+ReLU stages (8 channels), a max-pool and a linear+loss stage (for tests)",
        input: InputKind::Image {
            default_px: 16,
            multiple_of: 2,
        },
    },
    ModelInfo {
        name: "resnet18",
        description: "ResNet-18 (He et al. 2016): stem, pool, 8 basic blocks, head+loss (11 stages)",
        input: InputKind::Image {
            default_px: 224,
            multiple_of: 32,
        },
    },
    ModelInfo {
        name: "resnet50",
        description: "ResNet-50: stem, pool, 16 bottleneck blocks, head+loss (19 stages)",
        input: InputKind::Image {
            default_px: 224,
            multiple_of: 32,
        },
    },
    ModelInfo {
        name: "vgg19",
        description: "VGG-19 (Simonyan & Zisserman 2015): 16 conv+ReLU, 5 pooling stages of their own (as Hong et al.), 3 linear (24 stages)",
        input: InputKind::Image {
            default_px: 224,
            multiple_of: 32,
        },
    },
    ModelInfo {
        name: "gpt2",
        description: "GPT-2-style stack (124M): embedding, 12 blocks, head with tied weights + loss (14 stages)",
        input: InputKind::Tokens {
            default_seq: 1024,
            max_seq: 1024,
        },
    },
];

/// A network and its input size, as the chain's `source` records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    pub name: String,
    pub batch: i64,
    /// Image side in pixels (convolutional nets), else 0.
    pub image: i64,
    /// Sequence length (transformers), else 0.
    pub seq: i64,
    /// The user's own network (name `torchscript`), else None.
    pub torchscript: Option<TorchScript>,
}

fn err(flag: &'static str, message: impl Into<String>) -> ArgError {
    ArgError {
        flag,
        message: message.into(),
    }
}

pub fn info(name: &str) -> Result<&'static ModelInfo, ArgError> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let names: Vec<_> = MODELS.iter().map(|m| m.name).collect();
        err(
            "--model",
            format!("unknown model \"{name}\"; built in: {}", names.join(", ")),
        )
    })
}

impl ModelSpec {
    /// The spec of the user's own network (name `torchscript`): its batch
    /// is the first number of the input's shape.
    pub fn torchscript(ts: TorchScript) -> ModelSpec {
        ModelSpec {
            name: user_model::NAME.to_string(),
            batch: ts.input_shape[0],
            image: 0,
            seq: 0,
            torchscript: Some(ts),
        }
    }

    /// Checks the arguments for `name` and fills in the defaults.
    pub fn new(
        name: &str,
        batch: i64,
        image: Option<i64>,
        seq: Option<i64>,
    ) -> Result<ModelSpec, ArgError> {
        let m = info(name)?;
        if !(1..=1 << 20).contains(&batch) {
            return Err(err("--batch", format!("must be 1..=1048576, got {batch}")));
        }
        let (image, seq) = match m.input {
            InputKind::Image {
                default_px,
                multiple_of,
            } => {
                if seq.is_some() {
                    return Err(err("--seq", format!("{name} takes --image, not --seq")));
                }
                let px = image.unwrap_or(default_px);
                if px < multiple_of || px % multiple_of != 0 || px > 4096 {
                    return Err(err(
                        "--image",
                        format!(
                            "{name} needs a multiple of {multiple_of} pixels up to 4096, got {px}"
                        ),
                    ));
                }
                (px, 0)
            }
            InputKind::Tokens {
                default_seq,
                max_seq,
            } => {
                if image.is_some() {
                    return Err(err("--image", format!("{name} takes --seq, not --image")));
                }
                let s = seq.unwrap_or(default_seq);
                if !(1..=max_seq).contains(&s) {
                    return Err(err("--seq", format!("{name} needs 1..={max_seq}, got {s}")));
                }
                (0, s)
            }
        };
        Ok(ModelSpec {
            name: name.to_string(),
            batch,
            image,
            seq,
            torchscript: None,
        })
    }

    /// `model=vgg19 batch=4 image=32 seq=0`: the part of a chain's `source`
    /// that `run` reads back.
    #[cfg_attr(not(feature = "torch"), allow(dead_code))]
    pub fn tag(&self) -> String {
        let own = match &self.torchscript {
            Some(ts) => format!(" {}", ts.tag()),
            None => String::new(),
        };
        format!(
            "model={} batch={} image={} seq={}{own}",
            self.name, self.batch, self.image, self.seq
        )
    }

    /// Reads [`tag`](Self::tag) back out of a chain's `source`.
    pub fn from_source(source: &str) -> Result<ModelSpec, ArgError> {
        let field = |key: &str| -> Option<&str> {
            source
                .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        };
        let name = field("model").ok_or_else(|| {
            err(
                "--chain",
                "its source has no model=NAME: was it written by remat-profile profile?",
            )
        })?;
        if name == user_model::NAME {
            return Err(err(
                "--torchscript",
                "the chain was measured on a TorchScript model: pass --torchscript FILE or --torchscript-dir DIR",
            ));
        }
        let num = |key: &str| -> Result<i64, ArgError> {
            field(key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| err("--chain", format!("its source has no {key}=N")))
        };
        let (image, seq) = (num("image")?, num("seq")?);
        ModelSpec::new(
            name,
            num("batch")?,
            (image > 0).then_some(image),
            (seq > 0).then_some(seq),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_with_the_flag_named() {
        assert_eq!(info("vgg").unwrap_err().flag, "--model");
        assert_eq!(
            ModelSpec::new("vgg19", 0, None, None).unwrap_err().flag,
            "--batch"
        );
        let e = ModelSpec::new("vgg19", 2, Some(40), None).unwrap_err();
        assert_eq!(e.flag, "--image");
        assert!(e.message.contains("multiple of 32"), "{e}");
        assert_eq!(
            ModelSpec::new("gpt2", 2, Some(32), None).unwrap_err().flag,
            "--image"
        );
        assert_eq!(
            ModelSpec::new("gpt2", 2, None, Some(2048))
                .unwrap_err()
                .flag,
            "--seq"
        );
        assert_eq!(
            ModelSpec::new("tiny", 2, None, Some(8)).unwrap_err().flag,
            "--seq"
        );
    }

    #[test]
    fn the_tag_reads_back_from_a_source() {
        let spec = ModelSpec::new("vgg19", 4, Some(64), None).unwrap();
        let source = format!("remat-profile: {}; cpu; libtorch 2.13.0", spec.tag());
        assert_eq!(ModelSpec::from_source(&source).unwrap(), spec);
        let gpt = ModelSpec::new("gpt2", 1, None, Some(64)).unwrap();
        assert_eq!(ModelSpec::from_source(&gpt.tag()).unwrap(), gpt);
        assert_eq!(
            ModelSpec::from_source("analytic").unwrap_err().flag,
            "--chain"
        );
    }
}
