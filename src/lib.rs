//! Remat explorer: the page where the memory slider re-plans a training
//! step's checkpointing schedule and every view follows.
//!
//! Pure folders (plain Rust, built and tested on the host):
//! - `planning`: the planning protocol (typed messages and their codec),
//!   the planners behind it (in the page or in a Web Worker for long
//!   chains), and the plan as the page reads it — its trace (`current`),
//!   its menu options (`menus`), how far it is from the optimum
//!   (`optimality`); `backend`, where each request runs, is its one web
//!   file;
//! - `measurement`: an imported measured run (`remat-run/1`) against the
//!   plan on screen, and the lines the memory chart draws from it;
//! - `teaching`: the Learn place's lesson (`lesson_steps`), the classic
//!   strategies side by side (`classics`), the step as a graph
//!   (`step_graph`) and its GIF's frames (`animated_gif`);
//! - `sizing`: GPU memory − model state − margin = the activation budget
//!   (`device_memory`); a built-in example at another batch, sequence,
//!   precision (`scaling`);
//! - `text`: what the page writes for people and machines — messages
//!   (`words`), downloaded files' names (`file_name`), the view as a link
//!   (`link`).
//!
//! The page (wasm only, but a feature's own pure model, which builds on
//! the host beside its view):
//! - `kit`: charts and widgets that read no app state (props in);
//! - `state`: the shared state, the plan pipeline (no feature in it);
//! - `io`: files, the URL as read, localStorage, saved figures;
//! - `features`: one folder per card or place (plan, compare, gpu,
//!   min_memory, learn, files, strategies, code, pipeline), none importing
//!   another;
//! - `app`: the shell that lays the features out and wires them.
//!
//! scripts/module_graph.py checks these import rules.

pub mod features;
pub mod measurement;
pub mod planning;
pub mod sizing;
pub mod teaching;
pub mod text;

#[cfg(target_arch = "wasm32")]
pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod io;
#[cfg(target_arch = "wasm32")]
pub mod kit;
#[cfg(target_arch = "wasm32")]
pub mod state;

/// The page's entry point (the `remat-explorer` bin calls it).
#[cfg(target_arch = "wasm32")]
pub fn run() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
