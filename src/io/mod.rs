//! Data in and out of the page: the URL, imported files (and the last one,
//! kept in localStorage), downloads.

mod export;
mod import;
mod url;

pub use export::{export_chain, export_png, export_schedule, export_svg_text, export_trace};
pub use import::{import_file, import_run, import_run_file, import_text, storage};
pub use url::{initial_load, read_url, sync_url, UrlState, DEFAULT_EXAMPLE};

/// The chain the page opens with: a measured one.
pub fn default_chain() -> remat_core::Chain {
    remat_core::examples::by_name(DEFAULT_EXAMPLE).expect("the default example exists")
}
