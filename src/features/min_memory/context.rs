//! The "minimum memory" mode (Hong et al.): whether it is on, in which of
//! the paper's memory models, and its numbers for the chain on the page
//! ([`super::model::compare`], O(n), computed here in the page). Its
//! own context beside [`AppState`](crate::state::AppState): the chain view
//! marks the set, the mode's card draws the curves, the URL keeps
//! `min=MODEL`.

use super::model::{compare, Comparison};
use crate::state::Loaded;
use leptos::prelude::*;
use remat_core::solvers::hong::Model;

#[derive(Clone, Copy)]
pub struct MinMemory {
    pub on: RwSignal<bool>,
    pub model: RwSignal<Model>,
    /// None while the mode is off; the error's text if the chain cannot be
    /// counted in the paper's model.
    pub result: Memo<Option<Result<Comparison, String>>>,
}

impl MinMemory {
    pub fn new(loaded: Loaded) -> MinMemory {
        let on = RwSignal::new(false);
        let model = RwSignal::new(Model::PyTorch);
        let result = Memo::new(move |_| {
            on.get().then(|| {
                loaded
                    .chain
                    .with(|chain| compare(chain, model.get()).map_err(|e| e.to_string()))
            })
        });
        MinMemory { on, model, result }
    }

    /// The optimal set's stages while the mode is on (empty otherwise).
    pub fn marked(self) -> Vec<usize> {
        self.result.with(|r| match r {
            Some(Ok(c)) => c.optimal.checkpoints.clone(),
            _ => Vec::new(),
        })
    }
}

/// The mode, as the root component provided it.
pub fn use_min_memory() -> MinMemory {
    expect_context::<MinMemory>()
}
