//! A measured run on the page: the **Import measured run…** button and,
//! under the memory curve, the one-line summary — or why the run is not
//! drawn. The lines themselves are the kit memory chart's
//! (`kit::memory_chart`).

use crate::io;
use crate::kit::file_input::{click_input, on_file_chosen};
use crate::measurement::summary;
use crate::state::use_app;
use leptos::prelude::*;

/// Under the memory chart: the summary of the run drawn, or why the run
/// loaded is not drawn; and a button that removes it.
#[component]
pub fn MeasuredStatus() -> impl IntoView {
    let state = use_app();
    let remove = move |_| {
        state.measured.run.set(None);
        state.view.notice.set(None);
    };
    move || {
        let file = state.measured.run.get()?.file_name.clone();
        let (id, class, text) = match state.measured.against.get()? {
            Ok(c) => (
                "measured-summary",
                "measured-status",
                format!("Measured run {file}: {}", summary(&c)),
            ),
            Err(why) => (
                "measured-mismatch",
                "measured-status off",
                format!("Measured run {file} is not drawn: {why}."),
            ),
        };
        Some(view! {
            <div id=id class=class role="status">
                <span>{text}</span>
                <button id="measured-remove" class="small" on:click=remove
                    title="Forget the measured run">"Remove"</button>
            </div>
        })
    }
}

/// The header's button: a `remat-run/1` file, read as a run whatever it is
/// (a chain or schedule given here is named by its `format`), or a PyTorch
/// CUDA memory snapshot (a pickle) laid over the plan on screen.
#[component]
pub fn ImportRunButton() -> impl IntoView {
    let state = use_app();
    let on_file = on_file_chosen(move |file| io::import_run_file(state, file));
    let open_dialog = move |_| click_input("import-run-input");
    view! {
        <button id="import-run-button" on:click=open_dialog
            title="A remat-run/1 file (one training step of the plan on screen as remat_torch measured it) or a PyTorch CUDA memory snapshot of that step (torch.cuda.memory._dump_snapshot's pickle), drawn over the memory curve">
            "Import measured run…"
        </button>
        <input id="import-run-input" type="file" accept=".json,application/json,.pickle,.pkl" tabindex="-1"
            aria-hidden="true" on:change=on_file />
    }
}
