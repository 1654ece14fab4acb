//! *Code for this plan*: the Python to paste beside a training script for
//! the plan on screen, in three forms — stock checkpoint regions, the
//! transformers switches, `remat_torch.checkpointed` — each with its
//! predicted peak, step time and fidelity, copied with one click. The text
//! is remat-core's (`lowering::code`, from `lowering::lowered::lower`), the
//! same to the byte as `remat export --code` for the schedule the page
//! exports (tests/code.test.mjs).

use crate::io::schedule_file;
use crate::kit::format::{bytes, ms};
use crate::planning::current::Current;
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::lowering::code::{apply_plan_snippet, checkpointed_snippet, Snippet};
use remat_core::lowering::lowered::{lower, Target};

/// The card's tabs: a lowered form, or the runtime that runs the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tab {
    Lowered(Target),
    RematTorch,
}

impl Tab {
    const ALL: [Tab; 3] = [
        Tab::Lowered(Target::Pytorch),
        Tab::Lowered(Target::Transformers),
        Tab::RematTorch,
    ];

    /// Its id in the page (`code-tab-{id}`).
    fn id(self) -> &'static str {
        match self {
            Tab::Lowered(Target::Pytorch) => "pytorch",
            Tab::Lowered(Target::Transformers) => "transformers",
            Tab::RematTorch => "remat_torch",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Tab::Lowered(Target::Pytorch) => "PyTorch",
            _ => self.id(),
        }
    }
}

/// The snippet of `tab` for the plan on screen, or why there is none.
fn snippet(current: &Current, link: Option<f64>, tab: Tab) -> Result<Snippet, String> {
    let file = schedule_file(current, link)
        .ok_or("No schedule at this budget for the algorithm: nothing to write.")?;
    match tab {
        Tab::Lowered(target) => lower(&current.chain, &file, target, &[])
            .map(|plan| apply_plan_snippet(&plan))
            .map_err(|e| {
                let form = tab.id();
                format!("This plan has no {form} form: {e}. The remat_torch tab runs any plan.")
            }),
        Tab::RematTorch => {
            let t = current.ok_trace().ok_or("No schedule to run.")?;
            Ok(checkpointed_snippet(
                &file,
                t.peak_bytes,
                t.makespan_seconds,
                t.overhead(),
            ))
        }
    }
}

/// Copies `text` to the clipboard; where the page may not (no secure
/// context, permission refused) it selects the code for Ctrl+C and says so.
fn copy(text: String, said: RwSignal<&'static str>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let promise = window.navigator().clipboard().write_text(&text);
    said.set("copying…");
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(_) => said.set("copied"),
            Err(_) => {
                select_code();
                said.set("selected: press Ctrl+C (the page may not write the clipboard here)");
            }
        }
    });
}

/// Selects the code block's text.
fn select_code() {
    let document = leptos::prelude::document();
    let (Some(code), Some(selection)) = (
        document.get_element_by_id("code-text"),
        web_sys::window().and_then(|w| w.get_selection().ok().flatten()),
    ) else {
        return;
    };
    let _ = selection.select_all_children(&code);
}

#[component]
pub fn CodeCard() -> impl IntoView {
    let state = use_app();
    let tab = RwSignal::new(Tab::Lowered(Target::Pytorch));
    let said = RwSignal::new("");
    let current = Memo::new(move |_| {
        let c = state.shown.current.get()?;
        Some(snippet(&c, state.controls.link(), tab.get()))
    });
    Effect::new(move |_| {
        current.track();
        said.set("");
    });
    let code = move || match current.get() {
        Some(Ok(s)) => s.code,
        _ => String::new(),
    };
    view! {
        <section class="card code-card" id="code-card">
            <div class="card-head">
                <h2>"Code for this plan"</h2>
                <div class="code-tabs" role="tablist" aria-label="Form of the code">
                    {Tab::ALL.into_iter().map(|t| view! {
                        <button role="tab" id=format!("code-tab-{}", t.id()) class="small"
                            aria-selected=move || (tab.get() == t).to_string()
                            on:click=move |_| tab.set(t)>{t.label()}</button>
                    }).collect_view()}
                </div>
            </div>
            <p class="muted">
                "Paste it beside your model (as remat_torch.describe_chain described it) and one training batch: "
                "PyTorch and transformers put stock checkpoints on the model once, remat_torch runs the plan itself. "
                "The same text as "<code>"remat export --code"</code>" for this schedule."
            </p>
            {move || match current.get() {
                None => view! { <p class="muted" id="code-status">"No plan yet."</p> }.into_any(),
                Some(Err(why)) => view! { <p class="err" id="code-status">{why}</p> }.into_any(),
                Some(Ok(s)) => view! {
                    <p id="code-status" data-peak=s.peak_bytes.to_string()>
                        <b>{s.title}</b>
                        {format!(
                            ": predicted peak {}{}, step {} ({:+.1} %), {} the plan",
                            bytes(s.peak_bytes),
                            if s.fits { "" } else { " (over the budget)" },
                            ms(s.makespan_seconds),
                            100.0 * s.overhead,
                            if s.fidelity == "exact" { "exactly" } else { "differs from" }
                        )}
                    </p>
                }.into_any(),
            }}
            <div class="code-actions">
                <button id="code-copy" class="primary" disabled=move || !matches!(current.get(), Some(Ok(_)))
                    on:click=move |_| copy(code(), said)>"Copy"</button>
                <span class="muted" id="code-copied" aria-live="polite">{move || said.get()}</span>
            </div>
            // Focusable: a keyboard user scrolls the long lines too.
            <pre class="code-text" tabindex="0" role="region" aria-label="The code to paste">
                <code id="code-text">{code}</code>
            </pre>
        </section>
    }
}
