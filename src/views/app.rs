//! The page: the root component provides the state every view uses.

use super::{
    chain, compare, controls, device, guide, maxbatch, memory, min_memory, scale, stale, stepper,
    sweep, timeline, welcome,
};
use crate::io;
use crate::state::{AppState, ChainSource, DeviceMemory, MinMemory};
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new(
        io::default_chain(),
        ChainSource::Example(io::DEFAULT_EXAMPLE.into()),
    );
    state.start();
    provide_context(MinMemory::new(state.loaded));
    provide_context(DeviceMemory::new());
    io::initial_load(state);
    io::sync_url(state);
    provide_context(state);
    // One time window for the memory chart and the timelines.
    provide_context(super::chart::TimeZoom::new());
    controls::install_drop(state);
    view! {
        // One <main> landmark holds the page (axe: landmark-one-main, region).
        <main class=move || if state.stale_plan().is_some() { "app stale" } else { "app" }
            data-plan-id=move || state.shown.id.get().to_string()>
            <welcome::Welcome />
            <controls::Header />
            <scale::ScaleControls />
            <controls::NoticeBar />
            <controls::BudgetPanel />
            <device::DeviceMemoryCard />
            <stale::StaleNote />
            <stepper::Stepper />
            <section class="card">
                <chain::ChainView />
            </section>
            <min_memory::MinMemoryCard />
            <section class="card">
                <memory::MemoryChart />
            </section>
            <section class="card">
                <timeline::Timelines />
            </section>
            <compare::Compare />
            <sweep::SweepView />
            <maxbatch::MaxBatchPanel />
            <guide::Guide />
            <footer class="foot">
                "Remat — times and sizes come from the chain; the two-lane simulator measures every schedule. "
                "The URL holds the view: copy it to share."
            </footer>
        </main>
    }
}
