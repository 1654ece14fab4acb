//! The page: the root `App` (app.rs), one component per view, and what the
//! views share — chart helpers (chart.rs) and the caret notation
//! (notation.rs).

pub mod algorithm_style;
mod app;
pub mod chain;
pub mod chart;
pub mod compare;
pub mod controls;
pub mod device;
pub mod figure;
pub mod file_input;
pub mod guide;
pub mod legend;
pub mod maxbatch;
pub mod measured;
pub mod memory;
pub mod min_memory;
pub mod notation;
pub mod places;
pub mod scale;
pub mod stale;
pub mod stepper;
pub mod sweep;
pub mod timeline;
pub mod welcome;

pub use app::App;
