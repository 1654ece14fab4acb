//! The page's named places below the figures — *Compare*, *Your GPU*,
//! *Least memory*, *Learn*, *Chain & files* — the bar's links that scroll
//! to them, and the large-type option for projectors.
//!
//! The figures come first (issue 26): the chain, the memory curve and the
//! timeline sit right under the budget bar; everything else is a place a
//! person finds by name from the bar, never between two figures.

use leptos::prelude::*;

/// One place: its element id, and its name in the bar and as its heading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Place {
    pub id: &'static str,
    pub name: &'static str,
}

/// The places, in the order the page lays them out.
pub const PLACES: [Place; 5] = [
    Place {
        id: "place-compare",
        name: "Compare",
    },
    Place {
        id: "place-gpu",
        name: "Your GPU",
    },
    Place {
        id: "place-least-memory",
        name: "Least memory",
    },
    Place {
        id: "place-learn",
        name: "Learn",
    },
    Place {
        id: "place-chain",
        name: "Chain & files",
    },
];

fn place(id: &str) -> Place {
    PLACES.into_iter().find(|p| p.id == id).unwrap_or(PLACES[0])
}

/// A place: a heading and what lives there.
#[component]
pub fn PlaceSection(id: &'static str, children: Children) -> impl IntoView {
    let p = place(id);
    view! {
        <section class="place" id=p.id aria-labelledby=format!("{}-title", p.id)>
            <h2 class="place-title" id=format!("{}-title", p.id)>{p.name}</h2>
            {children()}
        </section>
    }
}

/// The bar's way to the places. Buttons, not `#anchor` links: the URL's
/// hash holds the view (`crate::link`), and an anchor would replace it.
#[component]
pub fn PlacesNav() -> impl IntoView {
    view! {
        <nav class="places" aria-label="Places on this page">
            {PLACES
                .into_iter()
                .map(|p| {
                    view! {
                        <button class="plain place-link" data-place=p.id
                            on:click=move |_| scroll_to(p.id)>{p.name}</button>
                    }
                })
                .collect_view()}
        </nav>
    }
}

fn scroll_to(id: &str) {
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        el.scroll_into_view();
    }
}

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
