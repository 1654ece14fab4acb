//! The URL holds the view, both ways: the page writes its view into the
//! hash (`link::format_hash`), and a link the browser arrives at (an
//! edited hash, Back, Forward) is applied to the page. The history follows
//! `link::HistoryPen`: a new chain, algorithm or bandwidth is a new entry,
//! a slider drag one entry replaced while it moves. `&min=pytorch|chen`
//! is there while the minimum memory mode is on.

use crate::features::learn::{step_link, Lesson};
use crate::features::min_memory::MinMemory;
use crate::io::{load_stored, read_url, UrlState, DEFAULT_EXAMPLE};
use crate::sizing::scaling::{kept_scale, ExampleScale};
use crate::state::{AppState, ChainSource, DeviceMemory};
use crate::teaching::lesson_steps::STEPS;
use crate::text::link::{
    format_hash, parse_hash, with_extras, with_lesson, with_min_memory, HistoryPen, Write,
};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::format::read_any_chain;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

fn current_hash() -> Option<String> {
    web_sys::window().and_then(|w| w.location().hash().ok())
}

/// Writes `hash` into the history as `how` says, unless the URL holds it.
/// `history.replaceState` costs Chrome ~6 ms a call, most of a slider
/// move's frame at L = 300: writes wait until the controls rest a moment.
fn write_hash(how: Write, hash: &str) {
    let Some(w) = web_sys::window() else { return };
    if current_hash().as_deref() == Some(hash) {
        return;
    }
    let _ = w.history().and_then(|h| match how {
        Write::Push => h.push_state_with_url(&JsValue::NULL, "", Some(hash)),
        Write::Replace => h.replace_state_with_url(&JsValue::NULL, "", Some(hash)),
    });
}

/// A view waiting to be written (the debounce).
struct Pending {
    timer: TimeoutHandle,
    hash: String,
    view: UrlState,
}

/// Keeps the URL and the state in step, both ways.
pub fn sync_url(state: AppState) {
    let pen = StoredValue::new_local(HistoryPen::default());
    let pending = StoredValue::new_local(None::<Pending>);
    let flush = move || {
        if let Some(p) = pending.try_update_value(|p| p.take()).flatten() {
            p.timer.clear();
            if let Some(how) = pen.try_update_value(|pen| pen.write(p.view)).flatten() {
                write_hash(how, &p.hash);
            }
        }
    };
    let controls = state.controls;
    let min_memory = use_context::<MinMemory>();
    let device = use_context::<DeviceMemory>();
    let lesson = use_context::<Lesson>();
    Effect::new(move |_| {
        let (step, presenting) = lesson.map_or((None, false), |l| {
            (l.step.get().map(|i| i + 1), l.presenting.get())
        });
        let hash = with_extras(
            with_min_memory(
                format_hash(
                    &state.loaded.source.get().name(),
                    controls.algorithm.get(),
                    controls.budget.get(),
                    controls.bandwidth.get(),
                ),
                min_memory.filter(|m| m.on.get()).map(|m| m.model.get()),
            ),
            &state.loaded.scale.get(),
            device.and_then(|d| d.in_link()).as_ref(),
        );
        let hash = with_lesson(hash, step, presenting);
        if let Some(p) = pending.try_update_value(|p| p.take()).flatten() {
            p.timer.clear();
        }
        let view = parse_hash(&hash);
        // The page's first view is written at once: a change made within
        // the debounce would otherwise take its entry, and Back would skip
        // the view the page opened with.
        if pen.with_value(HistoryPen::is_fresh) {
            if let Some(how) = pen.try_update_value(|pen| pen.write(view)).flatten() {
                write_hash(how, &hash);
            }
            return;
        }
        let Ok(timer) = set_timeout_with_handle(flush, Duration::from_millis(150)) else {
            return;
        };
        pending.set_value(Some(Pending { timer, hash, view }));
    });
    let Some(window) = web_sys::window() else {
        return;
    };
    // A link the browser arrived at (an edited hash, Back, Forward): the
    // page shows what it names. Both events may fire for one move; the
    // second finds the page already there.
    let arrive = Closure::<dyn FnMut()>::new(move || {
        if let Some(p) = pending.try_update_value(|p| p.take()).flatten() {
            p.timer.clear();
        }
        let url = read_url();
        pen.update_value(|pen| pen.arrived(url.clone()));
        apply_url(state, min_memory, device, lesson, &url);
    });
    for event in ["hashchange", "popstate"] {
        let _ = window.add_event_listener_with_callback(event, arrive.as_ref().unchecked_ref());
    }
    // The slider let go, or a budget typed: the next budget is a new entry.
    let release = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
        let id = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .map(|e| e.id());
        if matches!(id.as_deref(), Some("budget-slider" | "budget-input")) {
            // After the effects of the same task (a key press fires `input`
            // and `change` together): the last budget is then pending.
            set_timeout(
                move || {
                    flush();
                    pen.update_value(|pen| pen.release());
                },
                Duration::ZERO,
            );
        }
    });
    let _ = window.add_event_listener_with_callback_and_bool(
        "change",
        release.as_ref().unchecked_ref(),
        true,
    );
    // Page-lifetime listeners.
    arrive.forget();
    release.forget();
}

/// A link naming a lesson step and no chain (`#lesson=2`, written by
/// hand) names that step's whole view.
fn expand_lesson(url: UrlState) -> UrlState {
    match (url.lesson, &url.chain) {
        (Some(n), None) => step_link(n - 1, url.present).map_or(url, |hash| parse_hash(&hash)),
        _ => url,
    }
}

/// The lesson's step and presentation as the link says: a complete link
/// (the page's own) without them has them off.
fn apply_lesson(lesson: Option<Lesson>, url: &UrlState, complete: bool) {
    let Some(lesson) = lesson else {
        return;
    };
    let step = url.lesson.map(|n| n - 1).filter(|&i| i < STEPS.len());
    if complete || step.is_some() {
        let was = (
            lesson.step.get_untracked(),
            lesson.presenting.get_untracked(),
        );
        if was.0 != step {
            lesson.step.set(step);
        }
        if was.1 != url.present {
            lesson.presenting.set(url.present);
        }
        // Each slide opens at its top, title and question first: Present
        // kept the page's scroll (issue 45: 103–159 px past the title).
        if url.present && was != (step, true) {
            if let Some(w) = web_sys::window() {
                w.scroll_to_with_x_and_y(0.0, 0.0);
            }
        }
    }
}

/// Shows the view `url` names; what it leaves out stays as it is, but for
/// the minimum memory mode: a complete link (the page's own) without
/// `min=` has it off.
pub fn apply_url(
    state: AppState,
    min_memory: Option<MinMemory>,
    device: Option<DeviceMemory>,
    lesson: Option<Lesson>,
    url: &UrlState,
) {
    let url = &expand_lesson(url.clone());
    let controls = state.controls;
    let complete = url.chain.is_some()
        && url.algorithm.is_some()
        && url.budget.is_some()
        && url.bandwidth.is_some();
    apply_lesson(lesson, url, complete);
    if let Some(device) = device {
        device.apply(url.device, complete);
    }
    if let Some(mode) = min_memory {
        match url.min_memory {
            Some(model) => {
                mode.model.set(model);
                mode.on.set(true);
            }
            None if complete && mode.on.get_untracked() => mode.on.set(false),
            None => {}
        }
    }
    if let Some(alg) = url.algorithm {
        if controls.algorithm.get_untracked() != alg {
            controls.algorithm.set(alg);
        }
    }
    // A link naming a chain names its scale too (none: as profiled).
    let shown = state.loaded.source.get_untracked().name();
    let reloaded = match &url.chain {
        Some(name)
            if *name != shown
                || kept_scale(name, url.scale) != state.loaded.scale.get_untracked() =>
        {
            load_named(state, name, url.scale, url.budget)
        }
        _ => false,
    };
    if let (true, Some(d), None, Some(name)) = (reloaded, device, url.device, &url.chain) {
        d.follow_example(name);
    }
    if let Some(bw) = url.bandwidth {
        if controls.bandwidth.get_untracked() != bw {
            controls.bandwidth.set(bw);
        }
    }
    if let (Some(budget), false) = (url.budget, reloaded) {
        let budget = state
            .loaded
            .chain
            .with_untracked(|chain| state.checked_budget(chain, budget));
        if let Some(budget) = budget.filter(|&b| controls.budget.get_untracked() != b) {
            controls.budget.set(budget);
        }
    }
}

/// Loads the chain a link names; false if it names none this page has
/// (the page then keeps its chain and says so).
fn load_named(state: AppState, name: &str, scale: ExampleScale, budget: Option<u64>) -> bool {
    if name == "imported" {
        // The page's own copy first (it is what the page scaled); a fresh
        // page reads the copy kept in localStorage.
        let original = state.imported_original().or_else(|| {
            load_stored()
                .and_then(|t| read_any_chain(&t).ok())
                .map(Arc::new)
        });
        let Some(original) = original else {
            state.view.info(
                "The link names an imported chain that this browser no longer has; showing an example instead.".into(),
            );
            return false;
        };
        if let Err(e) = state.load_imported(original.clone(), scale, budget) {
            // The scale cannot apply: the chain as imported, and why.
            state.view.info(format!(
                "The link's scale: {e}; showing the imported chain as imported."
            ));
            return state
                .load_imported(original, ExampleScale::default(), budget)
                .is_ok();
        }
        return true;
    }
    match state.load_example(name, scale, budget) {
        Ok(()) => true,
        Err(e) if examples::find(name).is_some() => {
            // The scale cannot apply: the example as profiled, and why.
            state.view.info(format!(
                "The link's scale: {e}; showing {name} as profiled."
            ));
            state
                .load_example(name, ExampleScale::default(), budget)
                .is_ok()
        }
        Err(_) => {
            state.view.info(format!(
                "The link names a chain \"{name}\" that the explorer does not have."
            ));
            false
        }
    }
}

/// Loads the chain the URL names (or the last imported one, or the default).
pub fn initial_load(state: AppState) {
    let mut url = expand_lesson(read_url());
    apply_lesson(use_context::<Lesson>(), &url, url.chain.is_some());
    let name = url.chain.take().unwrap_or_else(|| DEFAULT_EXAMPLE.into());
    // The algorithm first: loading builds its table.
    if let Some(alg) = url.algorithm {
        state.controls.algorithm.set(alg);
    }
    if !load_named(state, &name, url.scale, url.budget) {
        state.load_chain(
            crate::io::default_chain(),
            ChainSource::Example(DEFAULT_EXAMPLE.into()),
            url.budget,
        );
    }
    if let Some(bw) = url.bandwidth {
        state.controls.bandwidth.set(bw);
    }
    // A lesson's link opens with its card in view, once its first plan is
    // drawn above the card (issue 45: the view was the step's, the card
    // 1,700 px down).
    if url.lesson.is_some() && !url.present {
        let done = StoredValue::new(false);
        Effect::new(move |_| {
            if state.shown.current.with(Option::is_some) && !done.get_value() {
                done.set_value(true);
                request_animation_frame(|| crate::kit::scroll::below_bar("lesson"));
            }
        });
    }
    if let (Some(model), Some(mode)) = (url.min_memory, use_context::<MinMemory>()) {
        mode.model.set(model);
        mode.on.set(true);
    }
    if let Some(device) = use_context::<DeviceMemory>() {
        match url.device {
            Some(_) => device.apply(url.device, false),
            None => device.follow_example(&state.loaded.source.get_untracked().name()),
        }
    }
}
