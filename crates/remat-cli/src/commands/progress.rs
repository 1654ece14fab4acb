//! A percentage on stderr while long work runs (a table build, a sweep, a
//! max-batch search), only when stderr is a terminal: scripts and pipes see
//! nothing, and stdout stays the report. Ctrl-C stops the process.

use std::io::IsTerminal;

/// `solving rotor:  42 %` on one line, rewritten in place.
pub struct TerminalProgress {
    label: String,
    terminal: bool,
    shown: Option<u32>,
}

impl TerminalProgress {
    pub fn new(label: impl Into<String>) -> TerminalProgress {
        TerminalProgress {
            label: label.into(),
            terminal: std::io::stderr().is_terminal(),
            shown: None,
        }
    }

    /// The core's progress callback: `done` in [0, 1]; never cancels.
    pub fn report(&mut self, done: f64) -> bool {
        let percent = (done.clamp(0.0, 1.0) * 100.0).floor() as u32;
        if self.terminal && self.shown != Some(percent) {
            eprint!("\r{}: {percent:3} %", self.label);
            self.shown = Some(percent);
        }
        true
    }
}

impl Drop for TerminalProgress {
    /// Clears the line, so that what follows starts clean.
    fn drop(&mut self) {
        if self.terminal && self.shown.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}
