//! Large type for a projector, chosen in the *Learn* place; the shell
//! provides it and sets the page's class from it.

use leptos::prelude::*;

/// Where the large-type choice is kept between visits.
const LARGE_TYPE_KEY: &str = "remat-large-type";

/// Large type for a projector: body text at 18 px and up, the figures'
/// words with it. Kept in the browser (a teacher sets it once per room).
#[derive(Clone, Copy)]
pub struct LargeType(pub RwSignal<bool>);

impl LargeType {
    pub fn new() -> LargeType {
        let stored = crate::io::storage()
            .and_then(|s| s.get_item(LARGE_TYPE_KEY).ok().flatten())
            .is_some_and(|v| v == "1");
        LargeType(RwSignal::new(stored))
    }

    pub fn toggle(self) {
        let on = !self.0.get_untracked();
        self.0.set(on);
        if let Some(s) = crate::io::storage() {
            let _ = s.set_item(LARGE_TYPE_KEY, if on { "1" } else { "0" });
        }
    }
}

impl Default for LargeType {
    fn default() -> Self {
        LargeType::new()
    }
}

/// The switch for [`LargeType`], in the *Learn* place where a teacher
/// prepares the room (the bar keeps to the plan's controls).
#[component]
pub fn LargeTypeButton() -> impl IntoView {
    let large = expect_context::<LargeType>();
    view! {
        <button id="large-type" class="small" aria-pressed=move || large.0.get().to_string()
            title="Large type for a projector (18 px text and up); kept in this browser"
            on:click=move |_| large.toggle()>"Large type (projector)"</button>
    }
}
