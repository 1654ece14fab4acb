//! The app shell: the root `App` that provides the shared state and lays
//! the features out (`shell`), the named places and the bar's way to them
//! (`places`), and the URL kept in step with several features' state
//! (`url`). It may import every feature; no feature imports it.

mod places;
mod shell;
mod url;

pub use shell::App;
