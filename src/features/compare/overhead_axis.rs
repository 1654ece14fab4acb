//! The vertical axis of Compare's overhead-vs-budget figure: one curve far
//! above the rest is clipped rather than flattening them. Pure, so that it
//! is tested on the host.

use remat_core::solvers::Algorithm;

/// The overhead figure's vertical axis: its top, and the curve clipped to
/// fit it, if one is.
#[derive(Debug, PartialEq)]
pub struct OverheadAxis {
    pub top: f64,
    /// The algorithm whose curve goes past `top`, and how high.
    pub clipped: Option<(Algorithm, f64)>,
}

/// The axis for curves whose highest overheads are `highest`: 10 % above
/// the highest, unless one curve is more than three times as high as the
/// next (recompute-all's O(L²): +506 % on VGG-19, +4818 % on 300 stages,
/// where every other curve sat on 0 %), which is then clipped at 1.5 times
/// the next (issue 45).
pub fn overhead_axis(highest: &[(Algorithm, f64)]) -> OverheadAxis {
    let mut sorted: Vec<(Algorithm, f64)> = highest.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let floor = 0.05;
    match sorted.as_slice() {
        [(alg, first), (_, second), ..] if *first > 3.0 * second.max(floor) => OverheadAxis {
            top: 1.5 * second.max(floor),
            clipped: Some((*alg, *first)),
        },
        [(_, first), ..] => OverheadAxis {
            top: 1.1 * first.max(floor),
            clipped: None,
        },
        [] => OverheadAxis {
            top: 1.1 * floor,
            clipped: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Fails if one far curve still sets the axis (every other curve flat
    // on 0 %), or if curves of like heights were clipped.
    #[test]
    fn a_curve_far_above_the_others_is_clipped_and_named() {
        let far = [
            (Algorithm::RecomputeAll, 5.06),
            (Algorithm::Rotor, 0.40),
            (Algorithm::Sequential, 0.55),
        ];
        assert_eq!(
            overhead_axis(&far),
            OverheadAxis {
                top: 1.5 * 0.55,
                clipped: Some((Algorithm::RecomputeAll, 5.06)),
            }
        );
        let alike = [(Algorithm::Rotor, 0.40), (Algorithm::Sequential, 1.0)];
        assert_eq!(
            overhead_axis(&alike),
            OverheadAxis {
                top: 1.1,
                clipped: None,
            }
        );
        assert_eq!(overhead_axis(&[]).clipped, None);
    }
}
