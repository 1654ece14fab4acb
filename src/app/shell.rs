//! The page: the root component provides the state the features share,
//! and lays the page out — the budget bar (sticky), the three figures, then
//! the named places (`places.rs`). What one feature shows of another's
//! state is wired here, through props.

use super::places::{PlaceSection, PlacesNav};
use super::url::{initial_load, sync_url};
use crate::features::learn::{LargeType, LargeTypeButton, Lesson};
use crate::features::min_memory::MinMemory;
use crate::features::{code, compare, files, gpu, learn, min_memory, pipeline, plan, strategies};
use crate::io;
use crate::kit::slides::{narrow_window, Narrow, Presenting};
use crate::state::{AppState, ChainSource, DeviceMemory};
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new(
        io::default_chain(),
        ChainSource::Example(io::DEFAULT_EXAMPLE.into()),
    );
    state.start();
    let least_memory = MinMemory::new(state.loaded);
    provide_context(least_memory);
    provide_context(DeviceMemory::new());
    let lesson = Lesson::new();
    provide_context(lesson);
    initial_load(state);
    sync_url(state);
    provide_context(state);
    let large = LargeType::new();
    provide_context(large);
    // The charts that write larger on slides read this (kit::slides).
    provide_context(Presenting(lesson.presenting.into()));
    provide_context(Narrow(narrow_window()));
    plan::install_drop(state);
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
        if large.0.get() || lesson.presenting.get() {
            c.push_str(" large");
        }
        if lesson.presenting.get() {
            c.push_str(" presenting");
        }
        c
    };
    view! {
        // One <main> landmark holds the page (axe: landmark-one-main, region).
        <main class=class data-plan-id=move || state.shown.id.get().to_string()
            data-plan-stage=move || state.shown.current.with(|c| c.as_ref().map_or("whole", |c| c.planned.stage.name()))>
            <learn::Welcome />
            // The budget stays in reach while the figures scroll.
            <div class="bar">
                <div class="bar-top">
                    <plan::Header />
                    <PlacesNav />
                </div>
                <plan::BudgetPanel />
            </div>
            <plan::NoticeBar />
            <plan::StaleNote />
            <plan::ImportedNote />
            // The figures first, nothing between them (issue 26).
            <section class="card figure" id="figure-chain">
                <plan::ChainCard marks=Signal::derive(move || least_memory.marked()) />
            </section>
            <section class="card figure" id="figure-memory">
                <plan::MemoryCard>
                    <files::MeasuredStatus />
                </plan::MemoryCard>
            </section>
            <section class="card figure" id="figure-timelines">
                <plan::TimelinesCard />
            </section>
            <plan::Stepper />
            <PlaceSection id="place-compare">
                <compare::Compare />
                <compare::SweepView />
            </PlaceSection>
            <PlaceSection id="place-gpu">
                <gpu::ScaleControls />
                <gpu::DeviceMemoryCard />
                <gpu::MaxBatchPanel />
                <pipeline::PipelineCard />
            </PlaceSection>
            <PlaceSection id="place-least-memory">
                <min_memory::MinMemoryCard />
            </PlaceSection>
            <PlaceSection id="place-learn">
                <p class="place-tools"><LargeTypeButton /></p>
                <learn::LessonCard />
                <learn::Guide />
                <learn::GraphView />
                <strategies::SideBySide shown=Signal::derive(move || lesson.shows_side_by_side()) />
                <strategies::YourGuess />
                <strategies::TimeDoubles />
            </PlaceSection>
            <PlaceSection id="place-chain">
                <code::CodeCard />
                <files::ChainFiles />
            </PlaceSection>
            <footer class="foot">
                "Remat — times and sizes come from the chain; the two-lane simulator measures every schedule. "
                "The URL holds the view: copy it to share."
            </footer>
        </main>
    }
}
