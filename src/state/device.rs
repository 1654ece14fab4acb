//! The device-memory view's inputs (GPU memory, the model's state, the
//! allocator's margin) and whether the view is open; its own context beside
//! [`AppState`](super::AppState). The arithmetic is `crate::sizing::device_memory`;
//! the URL holds the inputs while the view is open.

use crate::sizing::device_memory::{DeviceInputs, ModelState};
use leptos::prelude::*;
use remat_core::examples;

#[derive(Clone, Copy)]
pub struct DeviceMemory {
    pub on: RwSignal<bool>,
    pub inputs: RwSignal<DeviceInputs>,
}

impl DeviceMemory {
    pub fn new() -> DeviceMemory {
        DeviceMemory {
            on: RwSignal::new(false),
            inputs: RwSignal::new(DeviceInputs::new(0)),
        }
    }

    /// The inputs the URL holds: Some while the view is open (tracked).
    pub fn in_link(self) -> Option<DeviceInputs> {
        self.on.get().then(|| self.inputs.get())
    }

    /// A newly chosen example brings its parameter count (the user's
    /// precision and optimizer stay; an entered size stays as entered).
    pub fn follow_example(self, name: &str) {
        let Some(parameters) = examples::find(name)
            .and_then(|e| e.profile)
            .map(|p| p.parameters)
        else {
            return;
        };
        self.inputs.update(|i| {
            if let ModelState::Counted { parameters: p, .. } = &mut i.model {
                *p = parameters;
            }
        });
    }

    /// Shows what a link names; a complete link without the view closes it.
    pub fn apply(self, inputs: Option<DeviceInputs>, complete: bool) {
        match inputs {
            Some(i) => {
                if self.inputs.get_untracked() != i {
                    self.inputs.set(i);
                }
                if !self.on.get_untracked() {
                    self.on.set(true);
                }
            }
            None if complete && self.on.get_untracked() => self.on.set(false),
            None => {}
        }
    }
}

impl Default for DeviceMemory {
    fn default() -> Self {
        Self::new()
    }
}

/// The view's state, as the root component provided it.
pub fn use_device_memory() -> DeviceMemory {
    expect_context::<DeviceMemory>()
}
