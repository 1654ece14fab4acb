//! The page's features, one folder per card or place: each holds its view
//! and, where only it uses them, its own context and model. A feature
//! imports the kit, the shared state and `io`, never another feature
//! (scripts/module_graph.py checks it): what two features share is wired
//! by the shell (`app`) through props.

pub mod code;
pub mod compare;
pub mod files;
pub mod gpu;
pub mod learn;
pub mod min_memory;
pub mod pipeline;
pub mod plan;
pub mod strategies;
