//! How the page is looked at: the shared cursor, the step-through, the
//! time window of the charts over the step, the chain's box style, the
//! notice.

use crate::kit::zoom::TimeZoom;
use leptos::prelude::*;

#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    Error(String),
    Info(String),
}

#[derive(Clone, Copy, Default)]
pub struct ViewState {
    /// A time shared by the memory chart and the timelines (hover or step).
    pub cursor: RwSignal<Option<f64>>,
    /// The op highlighted by the step-through.
    pub step: RwSignal<Option<usize>>,
    pub playing: RwSignal<bool>,
    /// One time window for the memory chart and the timelines.
    pub zoom: TimeZoom,
    /// Chain view: equal boxes instead of proportional ones.
    pub uniform: RwSignal<bool>,
    pub notice: RwSignal<Option<Notice>>,
}

impl ViewState {
    /// Leaves the step-through (a new chain).
    pub(super) fn reset(self) {
        self.playing.set(false);
        self.step.set(None);
        self.cursor.set(None);
    }

    pub fn error(self, text: String) {
        self.notice.set(Some(Notice::Error(text)));
    }

    pub fn info(self, text: String) {
        self.notice.set(Some(Notice::Info(text)));
    }
}
