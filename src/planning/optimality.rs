//! The optimality gap of the compare table: each algorithm's makespan over
//! the exact search's (`optimal`) at the same budget, or why there is none;
//! and when that search runs at all. Pure, so that it is tested on the host.

use crate::planning::protocol::Summary;
use crate::text::words::pct;
use remat_core::model::units::format_seconds;
use remat_core::solvers::optimal::Limits;

/// Chains up to this many stages get the exact optimum's curve searched
/// by themselves (resnet18-cpu, 11 stages, and nonpersistent, 12: under
/// 10 ms a budget natively); longer ones when asked.
pub const AUTO_OPTIMAL_STAGES: usize = 12;

/// Whether the exact optimum is searched for a chain of `stages`: where it
/// answers quickly, or when `asked` (its table asked for). Beyond
/// [`AUTO_OPTIMAL_STAGES`] stages its search takes seconds a budget (gpt2,
/// 14 stages: 4 s natively at one budget) and would hold the plans'
/// worker (issue 26). Building all tables, sending the compare rows and
/// offering "Build all" all ask this.
pub fn optimum_searched(stages: usize, asked: bool) -> bool {
    stages <= AUTO_OPTIMAL_STAGES || asked
}

/// Where the optimal row's curve stands (the page's `Build`, reduced).
#[derive(Clone, Debug, PartialEq)]
pub enum Standing {
    NotBuilt,
    Building,
    Ready,
    Failed(String),
}

/// What the optimality gap is measured against at this budget: the exact
/// search's makespan, or why there is none (shown as the title of a "—").
#[derive(Clone, Debug, PartialEq)]
pub enum OptimalAt {
    Makespan(f64),
    Missing(String),
}

/// Why a chain with menus shows no gap: the exact search runs each
/// stage's classic F_all only, so a plan running menu options may beat it
/// (a "gap to optimal" of −10.3 % read as a contradiction on
/// `example:llama-cpu-compiled`).
const MENUS_OUTSIDE_OPTIMUM: &str = "the exact search runs each stage's classic F_all only; this chain's menus are outside its class, and a plan running options may beat it";

/// The optimal row's standing at this budget: refused for its length
/// before anything is built (the reason says to use rotor), outside the
/// class of a chain with `menus`, else its build's failure, its solve's
/// error, no schedule, or its makespan.
pub fn optimal_at(
    stages: usize,
    menus: bool,
    standing: Standing,
    summary: Option<&Summary>,
) -> OptimalAt {
    if let Err(e) = Limits::default().check_stages(stages) {
        return OptimalAt::Missing(e.to_string());
    }
    if menus {
        return OptimalAt::Missing(MENUS_OUTSIDE_OPTIMUM.into());
    }
    match (standing, summary) {
        (Standing::Failed(e), _) => OptimalAt::Missing(e),
        (Standing::Ready, Some(Summary { error: Some(e), .. })) => OptimalAt::Missing(e.clone()),
        (Standing::Ready, Some(s)) => match s.makespan_seconds.filter(|_| s.feasible) {
            Some(m) => OptimalAt::Makespan(m),
            None => OptimalAt::Missing("optimal: no schedule fits this budget".into()),
        },
        (Standing::Building, _) => OptimalAt::Missing("optimal: searching…".into()),
        _ => OptimalAt::Missing("optimal: not searched yet (build its curve)".into()),
    }
}

/// The gap cell of a row of makespan `makespan`: its makespan over the
/// optimum's at this budget ("+12.3 %"), and the cell's title. The optimum
/// searched recomputes only, so a row that `offloads` is outside its class
/// and gets no gap (it may beat it: a negative "gap to optimal" read as a
/// contradiction, issue 26).
pub fn gap_cell(makespan: f64, optimal: &OptimalAt, offloads: bool) -> (String, String) {
    if offloads {
        return (
            "—".into(),
            "the optimum searched recomputes only; offloading is outside its class".into(),
        );
    }
    match optimal {
        OptimalAt::Makespan(o) if *o > 0.0 => (
            pct(makespan / o - 1.0),
            format!(
                "makespan {} ÷ optimal's {} = {:.3}×",
                format_seconds(makespan),
                format_seconds(*o),
                makespan / o
            ),
        ),
        OptimalAt::Makespan(_) => ("—".into(), "optimal's makespan is zero".into()),
        OptimalAt::Missing(why) => ("—".into(), why.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::solvers::Algorithm;

    fn summary(makespan: Option<f64>, error: Option<&str>) -> Summary {
        Summary {
            algorithm: Algorithm::Optimal,
            feasible: makespan.is_some(),
            makespan_seconds: makespan,
            peak_bytes: None,
            detail: String::new(),
            error: error.map(str::to_string),
        }
    }

    fn ready() -> Standing {
        Standing::Ready
    }

    // Fails if the gap divides the wrong way or forgets the sign (mutation
    // tried: `o / makespan` gave "-10.0 %").
    #[test]
    fn gap_is_makespan_over_optimal() {
        let at = OptimalAt::Makespan(79.0);
        assert_eq!(gap_cell(88.0, &at, false).0, pct(88.0 / 79.0 - 1.0));
        assert_eq!(gap_cell(88.0, &at, false).0, "+11.4 %");
        assert_eq!(gap_cell(79.0, &at, false).0, "0 %");
        assert!(gap_cell(88.0, &at, false).1.contains("1.114×"));
        // An offloading row beating the recompute-only optimum shows no
        // negative gap (mutation tried: the `offloads` branch removed —
        // "-10.0 %" came back).
        assert_eq!(gap_cell(71.0, &at, true).0, "—");
    }

    // Fails if a chain over the limit is searched or its reason is lost
    // (dropping the length check would answer "searching…").
    #[test]
    fn too_long_chains_say_why() {
        let at = optimal_at(19, false, Standing::Building, None);
        let OptimalAt::Missing(why) = at else {
            panic!("a 19-stage chain has no optimum here")
        };
        assert!(
            why.contains("at most 18 stages") && why.contains("rotor"),
            "{why}"
        );
        assert_eq!(
            gap_cell(10.0, &OptimalAt::Missing(why.clone()), false),
            ("—".into(), why)
        );
    }

    // Fails if a chain with menus gets a gap: rotor's options beat the
    // recompute-only optimum there ("-10.3 %" on llama-cpu-compiled).
    // Mutation run: the `menus` branch removed → the cell reads "-10.1 %".
    #[test]
    fn a_chain_with_menus_shows_no_gap_and_says_why() {
        let at = optimal_at(8, true, ready(), Some(&summary(Some(79.0), None)));
        let (cell, why) = gap_cell(71.0, &at, false);
        assert_eq!(cell, "—");
        assert!(why.contains("menus are outside its class"), "{why}");
    }

    #[test]
    fn the_optimum_is_searched_on_short_chains_or_when_asked() {
        assert!(optimum_searched(AUTO_OPTIMAL_STAGES, false));
        assert!(!optimum_searched(AUTO_OPTIMAL_STAGES + 1, false));
        assert!(optimum_searched(300, true));
    }

    #[test]
    fn optimal_row_states() {
        let m = optimal_at(5, false, ready(), Some(&summary(Some(79.0), None)));
        assert_eq!(m, OptimalAt::Makespan(79.0));
        let none = optimal_at(5, false, ready(), Some(&summary(None, None)));
        assert!(matches!(none, OptimalAt::Missing(w) if w.contains("no schedule")));
        let err = optimal_at(
            5,
            false,
            ready(),
            Some(&summary(None, Some("optimal: stopped after"))),
        );
        assert_eq!(err, OptimalAt::Missing("optimal: stopped after".into()));
        let failed = optimal_at(5, false, Standing::Failed("too many states".into()), None);
        assert_eq!(failed, OptimalAt::Missing("too many states".into()));
    }
}
