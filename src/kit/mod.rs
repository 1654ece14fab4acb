//! The page's kit: charts and widgets that read no app state. What they
//! draw and the signals they follow come in as props (a schedule, the
//! shared [`hover::TimeAxis`], callbacks), so any feature can use them —
//! the plan's figures, Compare's and Learn's. The kit imports no feature
//! and not `crate::state` (scripts/module_graph.py checks both).
//!
//! - `palette`: one colour per meaning; `format`: numbers as charts write
//!   them; `scale`: chart coordinates, ticks, the time axis;
//! - `svg`: batched paths, markers, read-outs; `frames`: the `<svg>` a
//!   chart is drawn in and its heavy layer; `zoom`, `hover`: the shared
//!   time window and cursor;
//! - `chain_chart`, `memory_chart`, `timeline_chart`: the three figures
//!   of a schedule; `graph_chart`: the step as a graph of forward and
//!   backward nodes, the tensors resident at the current op marked (and
//!   one op of it as a standalone SVG, a frame of the GIF `io` saves);
//! - `widgets`, `legend`, `algorithm_style`, `notation`, `file_input`: the
//!   cards' controls, legends, per-algorithm line styles, caret notation,
//!   hidden file inputs;
//! - `figure`: a figure for slides, composed from the charts on the page;
//! - `timing`: the marks `tests/measure-slider.mjs` reads; `scroll`: a
//!   card brought into view below the sticky bar; `slides`: whether the
//!   page is presenting, for the charts that write larger on slides.

pub mod algorithm_style;
pub mod chain_chart;
pub mod figure;
pub mod file_input;
pub mod format;
pub mod frames;
pub mod graph_chart;
pub mod hover;
pub mod legend;
pub mod memory_chart;
pub mod notation;
pub mod palette;
pub mod scale;
pub mod scroll;
pub mod slides;
pub mod svg;
pub mod timeline_chart;
pub mod timing;
pub mod widgets;
pub mod zoom;
