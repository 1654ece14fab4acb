//! Data in and out of the page, shared by the features and the shell: the
//! URL as read, imported files (and the last one, kept in localStorage),
//! downloads, the figures saved for slides, and Learn's graph as a GIF.

mod export;
mod gif;
mod import;
mod raster;
mod saved_figures;

pub use crate::text::link::UrlState;
pub use export::{
    export_chain, export_png, export_schedule, export_svg_text, export_trace, schedule_file,
};
pub use gif::{export_gif, gif_plan};
pub use import::{import_file, import_run, import_run_file, import_text, load_stored, storage};
pub use saved_figures::{DashboardButtons, FigureButtons};

/// The example the page opens with.
pub const DEFAULT_EXAMPLE: &str = "vgg19-h100";

/// The chain the page opens with: a measured one.
pub fn default_chain() -> remat_core::Chain {
    remat_core::examples::by_name(DEFAULT_EXAMPLE).expect("the default example exists")
}

/// The view the URL's hash names (`link::parse_hash`).
pub fn read_url() -> UrlState {
    let hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    crate::text::link::parse_hash(&hash)
}
