//! The batch a chain was measured on: its input tensors, named, shaped and
//! typed as the framework gave them (`input_ids int64 [4, 128]`).
//!
//! Descriptive only, like a chain's name and source: no size or time is
//! derived from it (ω_a^0 is `input_bytes`), so it stays out of the chain's
//! digest, and a chain rescaled to another batch or precision, which was not
//! measured on these tensors, does not keep it (`scale.rs`).

use super::error::ChainError;
use std::fmt;

/// One tensor of the batch a chain was measured on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputTensor {
    /// The argument it was passed as (`input_ids`); "" for a positional one.
    pub name: String,
    /// Its dimensions as measured, the batch usually (not always) first.
    pub shape: Vec<u64>,
    /// Its element type as the framework names it: `float32`, `bfloat16`,
    /// `int64`; never empty.
    pub dtype: String,
}

/// The most input tensors a chain may describe.
pub const MAX_INPUTS: usize = 64;

/// The most dimensions an input tensor may have.
pub const MAX_INPUT_DIMS: usize = 16;

/// `input_ids int64 [4, 128]`; a positional tensor without its name.
impl fmt::Display for InputTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.name.is_empty() {
            write!(f, "{} ", self.name)?;
        }
        write!(f, "{} {:?}", self.dtype, self.shape)
    }
}

/// The tensors on one line: `input_ids int64 [4, 128], attention_mask int64 [4, 128]`.
pub(super) fn describe(inputs: &[InputTensor]) -> String {
    inputs
        .iter()
        .map(InputTensor::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks the number of tensors, of each one's dimensions, and that each
/// names its element type; the error names the field (`inputs[0].dtype`).
pub fn validate(inputs: &[InputTensor]) -> Result<(), ChainError> {
    if inputs.len() > MAX_INPUTS {
        return Err(ChainError::new(
            "inputs",
            format!(
                "{} tensors is more than the {MAX_INPUTS} this tool accepts",
                inputs.len()
            ),
        ));
    }
    for (i, t) in inputs.iter().enumerate() {
        if t.shape.len() > MAX_INPUT_DIMS {
            return Err(ChainError::new(
                format!("inputs[{i}].shape"),
                format!(
                    "{} dimensions is more than the {MAX_INPUT_DIMS} this tool accepts",
                    t.shape.len()
                ),
            ));
        }
        if t.dtype.trim().is_empty() {
            return Err(ChainError::new(
                format!("inputs[{i}].dtype"),
                "must name the element type (\"float32\", \"bfloat16\", \"int64\", …)",
            ));
        }
    }
    Ok(())
}
