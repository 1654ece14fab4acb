//! The page's features, one folder per card or place: each holds its view
//! and, where only it uses them, its own context and pure model (the
//! model builds and is tested on the host; the views are wasm only, gated
//! here or at the view files). A feature imports the kit, the shared state,
//! `io` and the pure folders, never another feature
//! (scripts/module_graph.py checks it): what two features share is wired
//! by the shell (`app`) through props, or lives in a pure folder.

pub mod compare;
pub mod min_memory;

#[cfg(target_arch = "wasm32")]
pub mod code;
#[cfg(target_arch = "wasm32")]
pub mod files;
#[cfg(target_arch = "wasm32")]
pub mod gpu;
#[cfg(target_arch = "wasm32")]
pub mod learn;
#[cfg(target_arch = "wasm32")]
pub mod pipeline;
#[cfg(target_arch = "wasm32")]
pub mod plan;
#[cfg(target_arch = "wasm32")]
pub mod strategies;
