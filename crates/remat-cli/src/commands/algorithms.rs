//! `remat algorithms`: the names `-a` and `--algorithms` take.

use remat_core::solvers::Algorithm;

pub fn run() {
    for alg in Algorithm::ALL {
        say!("{:<13} {}", alg.name(), alg.description());
    }
}
