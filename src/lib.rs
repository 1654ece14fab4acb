//! Remat explorer: the page where the memory slider re-plans a training
//! step's checkpointing schedule and every view follows.
//!
//! `state` holds everything; `planning` + `worker` run the solvers (in the
//! page or in a Web Worker); `io` handles files and the URL; `views` draw.

pub mod io;
pub mod planning;
pub mod state;
pub mod views;
pub mod worker;

/// The page's entry point (the `remat-explorer` bin calls it).
pub fn run() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(views::App);
}
