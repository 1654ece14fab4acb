//! The line that says which plan is on screen when it is not the one the
//! controls ask for: a solve under way, or a cancelled one. The stats and
//! charts are dimmed meanwhile (the root carries `stale`).

use crate::kit::format::bytes;
use crate::state::{use_app, StalePlan};
use leptos::prelude::*;

/// The sentence for a stale plan: its budget next to the one asked for.
fn stale_text(s: &StalePlan) -> String {
    let shown = format!("previous plan ({}) at {}", s.algorithm, bytes(s.budget));
    let wanted = format!("{} at {}", s.wanted_algorithm, bytes(s.wanted_budget));
    match &s.cancelled {
        Some(what) if !s.working => {
            format!("Cancelled {what}. Showing the {shown}; the controls ask for {wanted}.")
        }
        _ => format!("Showing the {shown} while {wanted} is worked out."),
    }
}

/// An imported schedule on screen: its own algorithm and budget, and the
/// controls marked as not in force until one moves or "Back to the plan".
#[component]
pub fn ImportedNote() -> impl IntoView {
    let state = use_app();
    let shown = Memo::new(move |_| {
        state.shown.current.with(|c| {
            c.as_ref().and_then(|c| {
                c.file
                    .clone()
                    .map(|f| (f, c.algorithm.clone(), c.planned.budget))
            })
        })
    });
    move || {
        shown.get().map(|(file, algorithm, budget)| {
            view! {
                <div id="imported-schedule" class="stale-note imported" role="status">
                    {format!(
                        "Showing the schedule from {file} ({algorithm}, budget {}). The algorithm and budget above are not in force; move one, or ",
                        bytes(budget)
                    )}
                    <button class="small" id="back-to-plan" on:click=move |_| state.send_plan(false)>
                        "back to the plan"
                    </button>
                </div>
            }
        })
    }
}

#[component]
pub fn StaleNote() -> impl IntoView {
    let state = use_app();
    let line = Memo::new(move |_| match state.stale_plan() {
        Some(s) => Some(stale_text(&s)),
        None => state
            .shown
            .cancelled
            .get()
            .map(|what| format!("Cancelled {what}.")),
    });
    view! {
        <div id="stale-plan" class="stale-note" role="status" aria-live="polite"
            hidden=move || line.get().is_none()>
            {move || line.get().unwrap_or_default()}
        </div>
    }
}
