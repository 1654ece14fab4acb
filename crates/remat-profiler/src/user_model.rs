//! The user's own network as TorchScript: the flags that describe it, checked
//! before anything is loaded (no libtorch needed here), and how a chain's
//! `source` records it so that `run` rebuilds the same network.
//!
//! Conventions (docs/profiler.md, "Your own network"):
//! - `--torchscript FILE`: a scripted `nn.Sequential`; each child, in order,
//!   is a stage. `--torchscript-dir DIR`: `stage_001.pt`, `stage_002.pt`, …
//!   one scripted module per stage, numbered from 1 without gaps.
//! - Every stage but the last maps its input to its output. The last one
//!   returns the loss (a scalar): with `--target classes:N` it is called as
//!   `forward(x, target)` with integer class labels in [0, N) of shape
//!   [batch]; with `--target input` as `forward(x, labels)` where the
//!   labels are the input tokens themselves (a language model's; the stage
//!   shifts them, as transformers does); with `--target none` as
//!   `forward(x)`.
//! - `--input-shape 8,3,32,32`: the input batch a^0, random normal floats
//!   (the first number is the batch); with `--input-vocab V`, random integer
//!   tokens in [0, V) instead.

use crate::arg_error::ArgError;
use std::path::{Path, PathBuf};

/// The model name a TorchScript network has in a chain's source.
pub const NAME: &str = "torchscript";

/// What the last stage takes besides its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `forward(x)` returns the loss.
    None,
    /// `forward(x, target)` with labels in [0, N) of shape [batch].
    Classes(i64),
    /// `forward(x, labels)` with labels equal to the input batch a^0 (a
    /// language model's tokens; the loss stage shifts them).
    Input,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::None => write!(f, "none"),
            Target::Classes(n) => write!(f, "classes:{n}"),
            Target::Input => write!(f, "input"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorchScript {
    /// One Sequential file (`split`), or one file per stage.
    pub files: Vec<PathBuf>,
    pub split: bool,
    /// FNV-1a 64 of the files' bytes: `run` refuses another model.
    pub digest: String,
    pub input_shape: Vec<i64>,
    pub vocab: Option<i64>,
    pub target: Target,
    /// The file or folder name, for the source.
    pub label: String,
}

fn err(flag: &'static str, message: impl Into<String>) -> ArgError {
    ArgError {
        flag,
        message: message.into(),
    }
}

impl TorchScript {
    /// `torchscript=model.pt digest=… input=8x3x32x32 vocab=0 target=classes:10`.
    pub fn tag(&self) -> String {
        let dims: Vec<String> = self.input_shape.iter().map(i64::to_string).collect();
        format!(
            "torchscript={} digest={} input={} vocab={} target={}",
            self.label
                .replace(|c: char| c.is_whitespace() || c == ';' || c == ',', "_"),
            self.digest,
            dims.join("x"),
            self.vocab.unwrap_or(0),
            self.target
        )
    }
}

/// `8,3,32,32` (or `8x3x32x32`, as a source records it): 1 to 8 sizes,
/// each 1..=2^20.
pub fn parse_shape(text: &str) -> Result<Vec<i64>, ArgError> {
    let dims: Result<Vec<i64>, _> = text
        .split([',', 'x'])
        .map(|d| d.trim().parse::<i64>())
        .collect();
    let bad = || {
        err(
            "--input-shape",
            format!("expected sizes like 8,3,32,32 (the batch first), got \"{text}\""),
        )
    };
    let dims = dims.map_err(|_| bad())?;
    if dims.is_empty() || dims.len() > 8 || dims.iter().any(|&d| !(1..=1 << 20).contains(&d)) {
        return Err(bad());
    }
    Ok(dims)
}

/// `none`, `input` or `classes:N` (N ≥ 2).
pub fn parse_target(text: &str) -> Result<Target, ArgError> {
    match text {
        "none" => return Ok(Target::None),
        "input" => return Ok(Target::Input),
        _ => {}
    }
    match text.strip_prefix("classes:").map(str::parse::<i64>) {
        Some(Ok(n)) if (2..=1 << 24).contains(&n) => Ok(Target::Classes(n)),
        _ => Err(err(
            "--target",
            format!(
                "expected classes:N (N ≥ 2 labels), input (the labels are the input tokens, as a language model's) or none, got \"{text}\""
            ),
        )),
    }
}

/// stage_001.pt, stage_002.pt, … in `dir`, numbered from 1 without gaps.
pub fn stage_files(dir: &Path) -> Result<Vec<PathBuf>, ArgError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        err(
            "--torchscript-dir",
            format!("cannot read {}: {e}", dir.display()),
        )
    })?;
    let mut numbers: Vec<usize> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("stage_")?
                .strip_suffix(".pt")?
                .parse()
                .ok()
        })
        .collect();
    numbers.sort_unstable();
    if numbers.is_empty() {
        return Err(err(
            "--torchscript-dir",
            format!("{} holds no stage_001.pt, stage_002.pt, …", dir.display()),
        ));
    }
    for (i, &n) in numbers.iter().enumerate() {
        if n != i + 1 {
            return Err(err(
                "--torchscript-dir",
                format!(
                    "stage_{:03}.pt is missing in {} (stages are numbered from 1 without gaps)",
                    i + 1,
                    dir.display()
                ),
            ));
        }
    }
    Ok(numbers
        .iter()
        .map(|n| dir.join(format!("stage_{n:03}.pt")))
        .collect())
}

/// FNV-1a 64 over the files' bytes, in order.
pub fn digest(files: &[PathBuf], flag: &'static str) -> Result<String, ArgError> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let bytes =
            std::fs::read(f).map_err(|e| err(flag, format!("cannot read {}: {e}", f.display())))?;
        for b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(format!("{h:016x}"))
}

/// The files and flag of `--torchscript FILE` or `--torchscript-dir DIR`.
fn locate(
    file: Option<&Path>,
    dir: Option<&Path>,
) -> Result<(Vec<PathBuf>, bool, &'static str, String), ArgError> {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    match (file, dir) {
        (Some(_), Some(_)) => Err(err(
            "--torchscript-dir",
            "give --torchscript FILE or --torchscript-dir DIR, not both",
        )),
        (Some(f), None) => {
            if !f.is_file() {
                return Err(err(
                    "--torchscript",
                    format!("{} is not a file", f.display()),
                ));
            }
            Ok((vec![f.to_path_buf()], true, "--torchscript", name(f)))
        }
        (None, Some(d)) => Ok((stage_files(d)?, false, "--torchscript-dir", name(d))),
        (None, None) => Err(err(
            "--torchscript",
            "no model: give --model NAME, --torchscript FILE or --torchscript-dir DIR",
        )),
    }
}

/// The network of `profile --torchscript …` (its spec:
/// [`ModelSpec::torchscript`](crate::models::ModelSpec::torchscript)).
pub fn from_flags(
    file: Option<&Path>,
    dir: Option<&Path>,
    input_shape: Option<&str>,
    vocab: Option<i64>,
    target: &str,
    batch: Option<i64>,
) -> Result<TorchScript, ArgError> {
    let (files, split, flag, label) = locate(file, dir)?;
    let input_shape = parse_shape(input_shape.ok_or_else(|| {
        err(
            "--input-shape",
            "a TorchScript model needs the input batch's shape, e.g. --input-shape 8,3,32,32",
        )
    })?)?;
    if let Some(b) = batch {
        if b != input_shape[0] {
            return Err(err(
                "--batch",
                format!(
                    "{b}, but --input-shape starts with {} (the batch); leave --batch out",
                    input_shape[0]
                ),
            ));
        }
    }
    if let Some(v) = vocab {
        if !(1..=1 << 30).contains(&v) {
            return Err(err("--input-vocab", format!("must be 1..=2^30, got {v}")));
        }
    }
    let target = parse_target(target)?;
    if target == Target::Input && vocab.is_none() {
        return Err(err(
            "--target",
            "input: the labels are the input tokens, so the input must be tokens: give --input-vocab V",
        ));
    }
    Ok(TorchScript {
        digest: digest(&files, flag)?,
        files,
        split,
        input_shape,
        vocab,
        target,
        label,
    })
}

/// The network `run` rebuilds from a chain's source and the model given again;
/// refuses a model whose digest is not the one the chain was measured on.
pub fn from_source(
    source: &str,
    file: Option<&Path>,
    dir: Option<&Path>,
) -> Result<TorchScript, ArgError> {
    let field = |key: &str| -> Option<&str> {
        source
            .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    };
    if field("model") != Some(NAME) {
        let flag = if file.is_some() {
            "--torchscript"
        } else {
            "--torchscript-dir"
        };
        return Err(err(
            flag,
            "the chain was not measured on a TorchScript model (its source names a built-in one): leave this flag out",
        ));
    }
    let missing = |key: &str| err("--chain", format!("its source has no {key}=…"));
    let (files, split, flag, label) = locate(file, dir)?;
    let recorded = field("digest").ok_or_else(|| missing("digest"))?;
    let digest = digest(&files, flag)?;
    if digest != recorded {
        return Err(err(
            flag,
            format!("{label} is not the model the chain was measured on (digest {digest}, the chain's {recorded})"),
        ));
    }
    let input_shape = parse_shape(field("input").ok_or_else(|| missing("input"))?)
        .map_err(|e| err("--chain", e.message))?;
    let vocab = field("vocab")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|&v| v > 0);
    let target = parse_target(field("target").ok_or_else(|| missing("target"))?)
        .map_err(|e| err("--chain", e.message))?;
    Ok(TorchScript {
        files,
        split,
        digest,
        input_shape,
        vocab,
        target,
        label,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_targets_are_checked_with_the_flag_named() {
        assert_eq!(parse_shape("8,3,32,32").unwrap(), vec![8, 3, 32, 32]);
        assert_eq!(parse_shape("8x128").unwrap(), vec![8, 128]);
        for bad in ["", "8,,3", "8,-3", "0,3", "a"] {
            assert_eq!(parse_shape(bad).unwrap_err().flag, "--input-shape", "{bad}");
        }
        assert_eq!(parse_target("none").unwrap(), Target::None);
        assert_eq!(parse_target("classes:10").unwrap(), Target::Classes(10));
        assert_eq!(parse_target("input").unwrap(), Target::Input);
        assert_eq!(parse_target("input").unwrap().to_string(), "input");
        for bad in ["classes:1", "classes:", "labels:3", "x"] {
            assert_eq!(parse_target(bad).unwrap_err().flag, "--target", "{bad}");
        }
    }

    /// How this can fail: a folder with a gap accepted (stages silently
    /// renumbered), or a digest that does not follow the files' bytes (run
    /// accepts another model). Mutations tried, each failed it: skipping the
    /// gap check; skipping the digest comparison in from_source.
    #[test]
    fn a_stage_folder_must_be_numbered_without_gaps() {
        let dir = std::env::temp_dir().join(format!("remat-user-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(stage_files(&dir).unwrap_err().flag, "--torchscript-dir");
        std::fs::write(dir.join("stage_001.pt"), b"a").unwrap();
        std::fs::write(dir.join("stage_003.pt"), b"c").unwrap();
        let e = stage_files(&dir).unwrap_err();
        assert!(e.message.contains("stage_002.pt is missing"), "{e}");
        std::fs::write(dir.join("stage_002.pt"), b"b").unwrap();
        assert_eq!(stage_files(&dir).unwrap().len(), 3);
        // The source written at profile time reads back; another model is refused.
        // A language model's labels are its input: tokens, so a vocabulary.
        let e = from_flags(None, Some(&dir), Some("2,5"), None, "input", None).unwrap_err();
        assert_eq!(e.flag, "--target");
        assert!(e.message.contains("--input-vocab"), "{e}");
        let ts = from_flags(None, Some(&dir), Some("2,5"), Some(100), "none", None).unwrap();
        let spec = crate::models::ModelSpec::torchscript(ts.clone());
        let source = format!("remat-profile 0.1.0: {}; device=cpu", spec.tag());
        assert_eq!(from_source(&source, None, Some(&dir)).unwrap(), ts);
        std::fs::write(dir.join("stage_002.pt"), b"B").unwrap();
        let e = from_source(&source, None, Some(&dir)).unwrap_err();
        assert_eq!(e.flag, "--torchscript-dir");
        assert!(e.message.contains("not the model"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
