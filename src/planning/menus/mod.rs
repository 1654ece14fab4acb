//! Per-stage menus (issue 41) on the page: which stages' F_all^ℓ run a
//! menu option in the schedule shown (keep less than ā^ℓ, B^ℓ recomputes
//! the rest), and the page's words for it — the layer chain's marks and
//! tooltip, the plan's line, the stepper's op. Pure, tested on the host.

use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::schedule::Op;
use remat_core::solvers::Algorithm;
use remat_core::Chain;

/// A stage whose F_all^ℓ runs menu option `option` (≥ 1) in the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    pub stage: usize,
    /// k ≥ 1: menu entry k − 1 of the stage (the core's numbering).
    pub option: usize,
    pub policy: String,
    /// ω_ā^{ℓ,k}: what this F_all^ℓ keeps for B^ℓ.
    pub saved_bytes: u64,
    /// ω_ā^ℓ: what the classic F_all^ℓ keeps.
    pub classic_bytes: u64,
    /// The time B^ℓ takes on top of u_b^ℓ (it recomputes what was not kept).
    pub backward_extra_seconds: f64,
}

impl Pick {
    /// The policy's short name, for a badge: `save_attention` → `attention`.
    pub fn short_name(&self) -> &str {
        short_policy(&self.policy)
    }
}

/// A policy's name without the `save_` every selective-checkpointing
/// policy starts with (`save_mm_attention` → `mm_attention`).
pub fn short_policy(policy: &str) -> &str {
    policy
        .strip_prefix("save_")
        .filter(|s| !s.is_empty())
        .unwrap_or(policy)
}

/// For each stage 1..=L (index 0 unused), the option its backward reads:
/// that of the last F_all^ℓ before B^ℓ (a persistent schedule runs one;
/// another list may run several, and B^ℓ reads the last), or of the last
/// F_all^ℓ where B^ℓ never runs. None for the classic F_all, a stage
/// whose F_all never runs, and an option past the stage's menu (the
/// simulator rejects such a schedule; the page still draws it).
pub fn picks_by_stage(chain: &Chain, ops: &[Op]) -> Vec<Option<Pick>> {
    let n = chain.len();
    let mut latest = vec![None::<u8>; n + 1];
    let mut read = vec![None::<u8>; n + 1];
    let mut done = vec![false; n + 1];
    for op in ops {
        match *op {
            Op::ForwardAll { stage, option } if (1..=n).contains(&stage) => {
                latest[stage] = Some(option)
            }
            Op::Backward { stage } if (1..=n).contains(&stage) && !done[stage] => {
                done[stage] = true;
                read[stage] = latest[stage];
            }
            _ => {}
        }
    }
    (0..=n)
        .map(|l| {
            let k = if done.get(l) == Some(&true) {
                read[l]
            } else {
                latest[l]
            }? as usize;
            if l == 0 || k == 0 {
                return None;
            }
            let st = chain.stage(l);
            let entry = st.menu.get(k - 1)?;
            Some(Pick {
                stage: l,
                option: k,
                policy: entry.policy.clone(),
                saved_bytes: entry.saved_bytes,
                classic_bytes: st.saved_bytes,
                backward_extra_seconds: entry.backward_extra_seconds,
            })
        })
        .collect()
}

/// The stages whose F_all runs a menu option, in stage order.
pub fn picks(chain: &Chain, ops: &[Op]) -> Vec<Pick> {
    picks_by_stage(chain, ops).into_iter().flatten().collect()
}

/// Whether the schedule's algorithm (by name: a planner's, or an imported
/// schedule's own) chooses menu options. An unknown name counts as one that
/// does (an imported schedule may run options whoever wrote it).
pub fn chooses(algorithm: &str) -> bool {
    Algorithm::from_name(algorithm).map_or(true, |a| a.chooses_options())
}

/// Every policy name on the chain's menus, once each (for text that sets
/// the rest in caret notation: a policy's `_` is no subscript).
pub fn policy_names(chain: &Chain) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for o in chain.stages.iter().flat_map(|s| &s.menu) {
        if !names.contains(&o.policy) {
            names.push(o.policy.clone());
        }
    }
    names
}

/// How many stages of `chain` have a menu.
pub fn stages_with_menus(chain: &Chain) -> usize {
    chain.stages.iter().filter(|s| !s.menu.is_empty()).count()
}

/// What the schedule shown does with the chain's menus, for the plan's
/// line under the layer chain; None when the chain has no menu.
pub fn plan_sentence(chain: &Chain, algorithm: &str, ops: Option<&[Op]>) -> Option<String> {
    let with = stages_with_menus(chain);
    if with == 0 {
        return None;
    }
    let of = if with == 1 {
        "1 stage has a menu".to_string()
    } else {
        format!("{with} stages have a menu")
    };
    let picks = ops.map(|o| picks(chain, o)).unwrap_or_default();
    if picks.is_empty() {
        if !chooses(algorithm) {
            return Some(format!(
                "Menus not used by {algorithm}: it runs the classic F_all everywhere ({of}; rotor and revolve choose options)."
            ));
        }
        return Some(match ops {
            None => format!("Menus: {of}; no schedule at this budget."),
            Some(_) => {
                format!("Menus: {of}; the classic F_all (keep ā^ℓ) everywhere at this budget.")
            }
        });
    }
    // By policy, in the order of the menu (option number), with the stages.
    let mut groups: Vec<(usize, &str, Vec<usize>)> = Vec::new();
    for p in &picks {
        match groups
            .iter_mut()
            .find(|g| g.0 == p.option && g.1 == p.policy)
        {
            Some(g) => g.2.push(p.stage),
            None => groups.push((p.option, &p.policy, vec![p.stage])),
        }
    }
    groups.sort_by_key(|g| g.0);
    let parts: Vec<String> = groups
        .iter()
        .map(|(_, policy, stages)| format!("{policy} on {}", stage_list(stages)))
        .collect();
    let extra: f64 = picks.iter().map(|p| p.backward_extra_seconds).sum();
    let count = picks.len();
    Some(format!(
        "{count} of {with} stages keep less with a menu option: {}; their backwards take {} more (each recomputes what its F_all did not keep).",
        parts.join(", "),
        format_seconds(extra)
    ))
}

/// The plan's numbers: how many stages run a menu option ("8 of 12"),
/// "classic", or "not used"; None when the chain has no menu.
pub fn plan_stat(chain: &Chain, algorithm: &str, ops: Option<&[Op]>) -> Option<String> {
    let with = stages_with_menus(chain);
    if with == 0 {
        return None;
    }
    let count = ops.map_or(0, |o| picks(chain, o).len());
    Some(if count > 0 {
        format!("{count} of {with}")
    } else if !chooses(algorithm) {
        "not used".into()
    } else {
        "classic".into()
    })
}

/// What the layer chain's tooltip says of stage `l`'s menu: the option its
/// F_all runs, or that it has a menu the schedule does not use; None when
/// the stage has no menu and runs no option.
pub fn stage_sentence(
    chain: &Chain,
    l: usize,
    pick: Option<&Pick>,
    algorithm: &str,
) -> Option<String> {
    if let Some(p) = pick {
        let total = chain.stage(l).option_count() - 1;
        return Some(format!(
            "F_all^{l} runs {} (menu option {} of {total}): keeps {} of {} (the classic ā^{l}); B^{l} recomputes the rest, +{}",
            p.policy,
            p.option,
            format_bytes(p.saved_bytes),
            format_bytes(p.classic_bytes),
            format_seconds(p.backward_extra_seconds)
        ));
    }
    let menu = chain.stage(l).menu.len();
    if menu == 0 {
        return None;
    }
    let options = if menu == 1 { "option" } else { "options" };
    Some(if chooses(algorithm) {
        format!("menu: {menu} {options}, classic chosen")
    } else {
        format!("menu: {menu} {options}, not used by {algorithm}")
    })
}

/// The badge over a stage's box: the policy's short name where it fits in
/// `room` chart units at `font` (an estimate: 0.6 em a character), else
/// the option's number as the op writes it (`[3]`, as in `F_all^ℓ[3]`),
/// else nothing (the tooltip and the hollow box still say it).
pub fn badge(pick: &Pick, room: f64, font: f64) -> Option<String> {
    let fits = |s: &str| s.chars().count() as f64 * 0.6 * font + 4.0 <= room;
    [pick.short_name().to_string(), format!("[{}]", pick.option)]
        .into_iter()
        .find(|s| fits(s))
}

/// The policy an op runs, for the stepper (`F_all^6[1]` → `save_mm_attention`);
/// None for every other op and the classic F_all.
pub fn op_policy(chain: &Chain, op: &Op) -> Option<String> {
    match *op {
        Op::ForwardAll { stage, option } if option > 0 && (1..=chain.len()).contains(&stage) => {
            chain
                .stage(stage)
                .menu
                .get(option as usize - 1)
                .map(|m| m.policy.clone())
        }
        _ => None,
    }
}

/// `6–10, 12` for stages 6, 7, 8, 9, 10, 12 (sorted).
fn stage_list(stages: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < stages.len() {
        let mut j = i;
        while j + 1 < stages.len() && stages[j + 1] == stages[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => stages[i].to_string(),
            1 => format!("{}, {}", stages[i], stages[j]),
            _ => format!("{}–{}", stages[i], stages[j]),
        });
        i = j + 1;
    }
    let word = if stages.len() == 1 { "stage" } else { "stages" };
    format!("{word} {}", parts.join(", "))
}

#[cfg(test)]
mod tests;
