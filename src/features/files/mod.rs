//! Files: the *Code & files* place (the chain in words, every import and
//! export) and a measured run's import and status.

mod chain_files;
mod measured_run;

pub use chain_files::ChainFiles;
pub use measured_run::MeasuredStatus;
