//! Remat explorer: the page where the memory slider re-plans a training
//! step's checkpointing schedule and every view follows.
//!
//! - `protocol`: the typed messages between the page and the planning
//!   service, and their one codec;
//! - `link`: the URL codec and how the history follows the view (pure);
//! - `service`: the planners (in the page, and in a Web Worker for long
//!   chains); plain Rust, tested on the host;
//! - `backend`: where each request runs (the page's service or the worker);
//! - `state`: the page's signals, by concern, and the answers' effects;
//! - `io`: files, the URL, localStorage;
//! - `min_memory`: the "minimum memory" mode's numbers (Hong et al.);
//! - `measured`: an imported measured run (`remat-run/1`) against the plan
//!   on screen, and the lines the memory chart draws from it (pure);
//! - `file_name`: the names of downloaded files (pure);
//! - `device_memory`: GPU memory − model state − margin = the activation
//!   budget (pure);
//! - `scaling`: a built-in example at another batch, sequence, precision;
//! - `words`: messages for people (pure);
//! - `views`: the root `App`, one component per view, chart and notation
//!   helpers.

pub mod device_memory;
pub mod file_name;
pub mod link;
pub mod measured;
pub mod min_memory;
pub mod optimality;
pub mod protocol;
pub mod scaling;
pub mod service;
pub mod words;

#[cfg(target_arch = "wasm32")]
pub mod backend;
#[cfg(target_arch = "wasm32")]
pub mod io;
#[cfg(target_arch = "wasm32")]
pub mod state;
#[cfg(target_arch = "wasm32")]
pub mod views;

/// The page's entry point (the `remat-explorer` bin calls it).
#[cfg(target_arch = "wasm32")]
pub fn run() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(views::App);
}
