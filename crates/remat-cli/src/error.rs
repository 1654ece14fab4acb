//! Why a command failed, in words for people: `main` prints
//! `error: <message>` and exits with [`CliError::exit_code`]. Flags that do
//! not parse never get here: clap refuses them first (also exit 2).

use remat_core::format::{FormatError, ScheduleError};
use remat_core::lowering::pytorch::{LowerError, SegmentsError};
use remat_core::solvers::hong::CheckpointError;
use remat_core::solvers::{Algorithm, SolveError};
use remat_core::SimError;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file named on the command line, and what is wrong with it.
    #[error("{path}: {problem}")]
    File { path: String, problem: FileProblem },
    #[error("no example named `{name}`; choose one of {choices}")]
    NoExample { name: String, choices: String },
    /// A problem with the value of a flag that only shows once the command
    /// runs (`--write: no example named …`).
    #[error("{flag}: {source}")]
    Flag {
        flag: &'static str,
        source: Box<CliError>,
    },
    /// A flag's value that only shows to be wrong with the others
    /// (`--memory` below `--fixed` + `--margin`).
    #[error("{flag}: {message}")]
    BadValue { flag: &'static str, message: String },
    #[error(transparent)]
    MaxBatch(#[from] remat_core::maxbatch::MaxBatchError),
    /// A budget no schedule of the chain meets, whatever the algorithm:
    /// bad input, not an infeasible result (which is about one algorithm).
    #[error("--budget: {0}; no algorithm runs in less")]
    BelowFloor(#[from] remat_core::solvers::BelowFloor),
    #[error("--segments: only for -a sequential, not {0}")]
    SegmentsNotSequential(Algorithm),
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// A chain or checkpoint set Hong et al.'s models cannot evaluate.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Sweep(#[from] remat_core::sweep::SweepError),
    /// A solver's schedule the simulator refuses: a bug, not bad input.
    #[error("internal error: {algorithm} produced an invalid schedule: {source}")]
    InvalidSolution {
        algorithm: Algorithm,
        source: SimError,
    },
    #[error("sweep: M_low of a {stages}-stage chain takes rotor's O(L³) recursion, {steps} steps (limit {limit}); sweep a shorter chain or use `solve` at chosen budgets")]
    SweepTooLong {
        stages: usize,
        steps: u128,
        limit: u128,
    },
    #[error("slots: the table for {stages} stages × {slots} slots needs {need} (limit {limit}); use fewer --slots")]
    SweepTable {
        stages: usize,
        slots: usize,
        need: String,
        limit: String,
    },
}

/// What is wrong with a chain or schedule file (the path is in [`CliError::File`]).
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{0} bytes is too large for a chain, schedule or run file")]
    TooLarge(u64),
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("invalid schedule: {0}")]
    Invalid(#[from] SimError),
    #[error(transparent)]
    Segments(#[from] SegmentsError),
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// A measured run that is not of this schedule or chain.
    #[error(transparent)]
    Run(#[from] Box<remat_core::measured::CompareError>),
    #[error("stages: the file says {said} stages, its operations cover {covered}")]
    StagesDiffer { said: usize, covered: usize },
}

impl CliError {
    /// The exit status of `docs/cli.md`: every error is bad input (2); an
    /// infeasible budget is a result, not an error.
    pub fn exit_code(&self) -> u8 {
        2
    }
}

/// `result.in_file(path)`: a file's problem, named by its path.
pub trait InFile<T> {
    fn in_file(self, path: &Path) -> Result<T, CliError>;
}

impl<T, E: Into<FileProblem>> InFile<T> for Result<T, E> {
    fn in_file(self, path: &Path) -> Result<T, CliError> {
        self.map_err(|e| CliError::File {
            path: path.display().to_string(),
            problem: e.into(),
        })
    }
}

/// Errors of a command: [`CliError`].
pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_the_flag() {
        let e = CliError::File {
            path: "s.json".into(),
            problem: FileProblem::StagesDiffer {
                said: 3,
                covered: 4,
            },
        };
        assert_eq!(
            e.to_string(),
            "s.json: stages: the file says 3 stages, its operations cover 4"
        );
        let e = CliError::Flag {
            flag: "--write",
            source: Box::new(CliError::NoExample {
                name: "nope".into(),
                choices: "teaching".into(),
            }),
        };
        assert_eq!(
            e.to_string(),
            "--write: no example named `nope`; choose one of teaching"
        );
    }
}
