//! The page: the root component provides the state every view uses.

use super::{chain, compare, controls, guide, memory, stale, stepper, sweep, timeline, welcome};
use crate::io;
use crate::state::{AppState, ChainSource};
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new(
        io::default_chain(),
        ChainSource::Example(io::DEFAULT_EXAMPLE.into()),
    );
    state.start();
    io::initial_load(state);
    io::sync_url(state);
    provide_context(state);
    controls::install_drop(state);
    view! {
        <div class=move || if state.stale_plan().is_some() { "app stale" } else { "app" }
            data-plan-id=move || state.shown.id.get().to_string()>
            <welcome::Welcome />
            <controls::Header />
            <controls::NoticeBar />
            <controls::BudgetPanel />
            <stale::StaleNote />
            <stepper::Stepper />
            <section class="card">
                <chain::ChainView />
            </section>
            <section class="card">
                <memory::MemoryChart />
            </section>
            <section class="card">
                <timeline::Timelines />
            </section>
            <compare::Compare />
            <sweep::SweepView />
            <guide::Guide />
            <footer class="foot">
                "Remat — times and sizes come from the chain; the two-lane simulator measures every schedule. "
                "The URL holds the view: copy it to share."
            </footer>
        </div>
    }
}
