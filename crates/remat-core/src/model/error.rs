//! How a chain is refused: [`ChainError`], shared by the chain's own checks
//! (`chain.rs`) and those of the batch it was measured on (`inputs.rs`), so
//! neither of the two files needs the other for it.

/// Why a chain is not usable; `path` names the field as in the JSON file.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ChainError {
    pub path: String,
    pub message: String,
}

impl ChainError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> ChainError {
        ChainError {
            path: path.into(),
            message: message.into(),
        }
    }
}
