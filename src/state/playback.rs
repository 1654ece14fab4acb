//! Stepping the schedule op by op, and the clock that plays it: one cursor
//! for every view that steps (the step-through under the figures, Learn's
//! graph), so the chain, the memory curve and the timelines follow
//! whichever of them moves it.

use super::AppState;
use leptos::prelude::*;
use std::time::Duration;

impl AppState {
    fn n_ops(self) -> usize {
        self.shown
            .current
            .with_untracked(|c| c.as_ref().map_or(0, |c| c.ops().len()))
    }

    /// Makes op `i` the current one (None: leave step mode) and moves the
    /// shared cursor to the middle of its span.
    pub fn go_to_step(self, i: Option<usize>) {
        self.view.step.set(i);
        let t = i.and_then(|i| {
            self.shown.current.with_untracked(|c| {
                c.as_ref()
                    .and_then(|c| c.ok_trace())
                    .and_then(|t| t.spans.get(i))
                    .map(|s| (s.start + s.end) / 2.0)
            })
        });
        self.view.cursor.set(t);
    }

    /// Steps `d` ops, staying within the schedule; out of step mode, a
    /// step forward starts at the first op and a step back at the last.
    pub fn step_by(self, d: isize) {
        let n = self.n_ops();
        if n == 0 {
            return;
        }
        let next = match self.view.step.get_untracked() {
            None if d > 0 => 0,
            None => n - 1,
            Some(i) => (i as isize + d).clamp(0, n as isize - 1) as usize,
        };
        self.go_to_step(Some(next));
    }

    /// Plays or pauses; playing from the last op starts over.
    pub fn play_pause(self) {
        let at_end = self
            .view
            .step
            .get_untracked()
            .is_some_and(|i| i + 1 >= self.n_ops());
        if !self.view.playing.get_untracked() && at_end {
            self.go_to_step(Some(0));
        }
        self.view.playing.update(|p| *p = !*p);
    }

    /// One tick of the clock: the next op; at the last one, the first
    /// again when looping, else the clock stops.
    fn tick(self) {
        let at_end = self
            .view
            .step
            .get_untracked()
            .is_some_and(|i| i + 1 >= self.n_ops());
        match (at_end, self.view.looping.get_untracked()) {
            (true, true) => self.go_to_step(Some(0)),
            (true, false) => self.view.playing.set(false),
            (false, _) => self.step_by(1),
        }
    }

    /// The clock: while `playing`, one tick every 1/speed seconds; a new
    /// speed restarts it at once.
    pub(super) fn start_playback(self) {
        let handle = StoredValue::new_local(None::<IntervalHandle>);
        Effect::new(move |_| {
            let playing = self.view.playing.get();
            let ops_per_s = self.view.speed.get().max(0.1);
            if let Some(h) = handle.get_value() {
                h.clear();
            }
            handle.set_value(None);
            if playing {
                let every = Duration::from_secs_f64(1.0 / ops_per_s);
                handle.set_value(set_interval_with_handle(move || self.tick(), every).ok());
            }
        });
    }
}
