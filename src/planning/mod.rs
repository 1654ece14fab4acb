//! Planning: the protocol between the page and its planners (`protocol`),
//! the planners behind it (`service`, in the page or in a Web Worker),
//! where each request runs (`backend`, the one web file here), and the
//! plan as the page reads it: its schedule and trace (`current`), the menu
//! options its forwards run (`menus`), how far it is from the optimum
//! (`optimality`). No web code but `backend`; nothing here imports a
//! feature, the kit or the app state.

pub mod current;
pub mod menus;
pub mod optimality;
pub mod protocol;
pub mod service;

#[cfg(target_arch = "wasm32")]
pub mod backend;
