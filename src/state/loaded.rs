//! The chain on the page and its budget range.

use crate::sizing::scaling::ExampleScale;
use leptos::prelude::*;
use remat_core::Chain;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum ChainSource {
    Example(String),
    Imported,
}

impl ChainSource {
    /// The name the URL and the chain picker use.
    pub fn name(&self) -> String {
        match self {
            ChainSource::Example(name) => name.clone(),
            ChainSource::Imported => "imported".into(),
        }
    }
}

#[derive(Clone, Copy)]
pub struct Loaded {
    pub chain: RwSignal<Arc<Chain>>,
    pub source: RwSignal<ChainSource>,
    /// M_low and M_high: the slider's range.
    pub m_low: RwSignal<u64>,
    pub m_high: RwSignal<u64>,
    /// The batch, sequence, precision where they differ from the profile
    /// (an example's, or what the user says of an imported chain's).
    pub scale: RwSignal<ExampleScale>,
    /// The last imported chain as imported: an imported chain is always
    /// rescaled from it, never from the scaled chain on screen.
    pub(super) imported: StoredValue<Option<Arc<Chain>>>,
}

impl Loaded {
    pub(super) fn new(chain: Chain, source: ChainSource) -> Loaded {
        Loaded {
            chain: RwSignal::new(Arc::new(chain)),
            source: RwSignal::new(source),
            m_low: RwSignal::new(0),
            m_high: RwSignal::new(0),
            scale: RwSignal::new(ExampleScale::default()),
            imported: StoredValue::new(None),
        }
    }

    /// Shows `chain` and its [`range`], at `scale` (what `chain` is scaled by).
    pub(super) fn set(
        self,
        chain: Chain,
        source: ChainSource,
        scale: ExampleScale,
        (low, high): (u64, u64),
    ) {
        if self.scale.get_untracked() != scale {
            self.scale.set(scale);
        }
        self.m_low.set(low);
        self.m_high.set(high);
        self.chain.set(Arc::new(chain));
        self.source.set(source);
    }
}
