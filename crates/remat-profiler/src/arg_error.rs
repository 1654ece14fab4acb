//! Bad arguments, with the flag they came from: what checking the built-in
//! models (`models.rs`), the user's network (`user_model.rs`) and its
//! TorchScript (`torch/torchscript.rs`) answer before anything is built.

use std::fmt;

/// Bad arguments, with the flag they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    pub flag: &'static str,
    pub message: String,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.flag, self.message)
    }
}

impl std::error::Error for ArgError {}
