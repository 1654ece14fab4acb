//! An imported measured run (`remat-run/1`) and how it stands against the
//! plan on screen ([`crate::measurement::against_plan`]): drawn over the
//! memory curve while the plan has the run's operations, else a sentence
//! naming the plan it was measured for. It stays loaded across plans and
//! chains until another run replaces it or it is removed, so that picking
//! its plan brings it back.

use super::Shown;
use crate::measurement::against_plan;
use leptos::prelude::*;
use remat_core::format::RunFile;
use remat_core::measured::Comparison;
use std::sync::Arc;

/// A run and the name of the file it came from.
#[derive(Debug, PartialEq)]
pub struct LoadedRun {
    pub file_name: String,
    pub run: RunFile,
}

#[derive(Clone, Copy)]
pub struct MeasuredRun {
    pub run: RwSignal<Option<Arc<LoadedRun>>>,
    /// None without a run; the comparison, or why there is none.
    pub against: Memo<Option<Result<Arc<Comparison>, String>>>,
}

impl MeasuredRun {
    pub(super) fn new(shown: Shown) -> MeasuredRun {
        let run: RwSignal<Option<Arc<LoadedRun>>> = RwSignal::new(None);
        let against = Memo::new(move |_| {
            let loaded = run.get()?;
            Some(shown.current.with(|c| {
                let Some(c) = c.as_deref() else {
                    return Err("there is no plan on screen yet".to_string());
                };
                against_plan(&loaded.run, &c.chain, c.ops(), c.ok_trace()).map(Arc::new)
            }))
        });
        MeasuredRun { run, against }
    }

    /// The comparison while it is drawn (tracked).
    pub fn shown(self) -> Option<Arc<Comparison>> {
        self.against.get().and_then(Result::ok)
    }
}
