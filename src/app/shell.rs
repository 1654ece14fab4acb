//! The page: the root component provides the state every view uses, and
//! lays the page out — the budget bar (sticky), the three figures, then
//! the named places (`places.rs`).

use super::places::{LargeType, LargeTypeButton, PlaceSection, PlacesNav};
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
    let large = LargeType::new();
    provide_context(large);
    controls::install_drop(state);
    let class = move || {
        let mut c = String::from("app");
        if state.stale_plan().is_some() {
            c.push_str(" stale");
        }
        if state
            .shown
            .current
            .with(|c| c.as_ref().is_some_and(|c| c.file.is_some()))
        {
            c.push_str(" not-in-force");
        }
        if large.0.get() {
            c.push_str(" large");
        }
        c
    };
    view! {
        // One <main> landmark holds the page (axe: landmark-one-main, region).
        <main class=class data-plan-id=move || state.shown.id.get().to_string()>
            <welcome::Welcome />
            // The budget stays in reach while the figures scroll.
            <div class="bar">
                <div class="bar-top">
                    <controls::Header />
                    <PlacesNav />
                </div>
                <controls::BudgetPanel />
            </div>
            <controls::NoticeBar />
            <stale::StaleNote />
            <stale::ImportedNote />
            // The figures first, nothing between them (issue 26).
            <section class="card figure">
                <chain::ChainView />
            </section>
            <section class="card figure">
                <memory::MemoryChart />
            </section>
            <section class="card figure">
                <timeline::Timelines />
            </section>
            <stepper::Stepper />
            <PlaceSection id="place-compare">
                <compare::Compare />
                <sweep::SweepView />
            </PlaceSection>
            <PlaceSection id="place-gpu">
                <scale::ScaleControls />
                <device::DeviceMemoryCard />
                <maxbatch::MaxBatchPanel />
            </PlaceSection>
            <PlaceSection id="place-least-memory">
                <min_memory::MinMemoryCard />
            </PlaceSection>
            <PlaceSection id="place-learn">
                <p class="place-tools"><LargeTypeButton /></p>
                <guide::Guide />
            </PlaceSection>
            <PlaceSection id="place-chain">
                <controls::ChainFiles />
            </PlaceSection>
            <footer class="foot">
                "Remat — times and sizes come from the chain; the two-lane simulator measures every schedule. "
                "The URL holds the view: copy it to share."
            </footer>
        </main>
    }
}
