//! How the page is looked at: the shared cursor, the step-through and its
//! playback, the time window of the charts over the step, the chain's box
//! style, the notice.

use crate::kit::zoom::TimeZoom;
use leptos::prelude::*;

#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    Error(String),
    Info(String),
}

/// Playback's speed until one is chosen, in operations per second.
pub const DEFAULT_SPEED: f64 = 4.0;

#[derive(Clone, Copy)]
pub struct ViewState {
    /// A time shared by the memory chart and the timelines (hover or step).
    pub cursor: RwSignal<Option<f64>>,
    /// The op highlighted by the step-through.
    pub step: RwSignal<Option<usize>>,
    pub playing: RwSignal<bool>,
    /// Playback's speed in operations per second: one for every view that
    /// plays (the step-through, Learn's graph), as they step one cursor.
    pub speed: RwSignal<f64>,
    /// Playback starts over at the end instead of stopping.
    pub looping: RwSignal<bool>,
    /// One time window for the memory chart and the timelines.
    pub zoom: TimeZoom,
    /// Chain view: equal boxes instead of proportional ones.
    pub uniform: RwSignal<bool>,
    pub notice: RwSignal<Option<Notice>>,
}

impl ViewState {
    pub(super) fn new() -> ViewState {
        ViewState {
            cursor: RwSignal::new(None),
            step: RwSignal::new(None),
            playing: RwSignal::new(false),
            speed: RwSignal::new(DEFAULT_SPEED),
            looping: RwSignal::new(false),
            zoom: TimeZoom::new(),
            uniform: RwSignal::new(false),
            notice: RwSignal::new(None),
        }
    }

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
