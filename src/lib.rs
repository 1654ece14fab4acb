//! Remat explorer: the page where the memory slider re-plans a training
//! step's checkpointing schedule and every view follows.
//!
//! Pure modules (plain Rust, tested on the host):
//! - `protocol`, `service`: the planning protocol (typed messages and their
//!   codec) and the planners behind it, in the page or in a Web Worker for
//!   long chains; no web code, and they import no feature;
//! - `current`: the schedule on screen and its trace, which every chart
//!   of a schedule draws;
//! - `menus`: which stages' F_all run a menu option in the schedule shown
//!   (issue 41), and the page's words for it;
//! - `link`: the URL codec and how the history follows the view;
//! - `min_memory`: the "minimum memory" mode's numbers (Hong et al.);
//! - `step_graph`: the step as a graph of forward and backward nodes, and
//!   which of them are resident at each operation;
//! - `measured`: an imported measured run (`remat-run/1`) against the plan
//!   on screen, and the lines the memory chart draws from it;
//! - `device_memory`: GPU memory − model state − margin = the activation
//!   budget; `scaling`: a built-in example at another batch, sequence,
//!   precision; `optimality`: how far a plan is from the optimum;
//!   `overhead_axis`: Compare's overhead axis, a far curve clipped;
//! - `strategies`: the classic strategies side by side (store-all,
//!   recompute-all, √n, rotor, the optimum) on the chain on the page;
//! - `lesson`: the Learn place's lesson, its steps' views and answers;
//! - `animated_gif`: which ops of the Learn graph become frames of its
//!   GIF, their delays, and the encoder fed with the rasterised pixels;
//! - `file_name`, `words`: downloaded files' names, messages for people.
//!
//! The page (wasm only):
//! - `backend`: where each request runs (the page's service or the worker);
//! - `kit`: charts and widgets that read no app state (props in);
//! - `state`: the shared state, the plan pipeline (no feature in it);
//! - `io`: files, the URL as read, localStorage, saved figures;
//! - `features`: one folder per card or place (plan, compare, gpu,
//!   min_memory, learn, files, strategies), none importing another;
//! - `app`: the shell that lays the features out and wires them.
//!
//! scripts/module_graph.py checks these import rules.

pub mod animated_gif;
pub mod current;
pub mod device_memory;
pub mod file_name;
pub mod lesson;
pub mod link;
pub mod measured;
pub mod menus;
pub mod min_memory;
pub mod optimality;
pub mod overhead_axis;
pub mod peers;
pub mod protocol;
pub mod scaling;
pub mod service;
pub mod step_graph;
pub mod strategies;
pub mod words;

#[cfg(target_arch = "wasm32")]
pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod backend;
#[cfg(target_arch = "wasm32")]
pub mod features;
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
