//! How the page is looked at: the shared cursor, the step-through, the
//! chain's box style, the notice.

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

    /// Moves the cursor to `time` from a chart's hover.
    pub fn hover(self, time: f64) {
        self.cursor.set(Some(time));
    }

    /// The mouse left a chart: the cursor stays only in step mode.
    pub fn leave(self) {
        if self.step.get_untracked().is_none() {
            self.cursor.set(None);
        }
    }

    pub fn error(self, text: String) {
        self.notice.set(Some(Notice::Error(text)));
    }

    pub fn info(self, text: String) {
        self.notice.set(Some(Notice::Info(text)));
    }
}
