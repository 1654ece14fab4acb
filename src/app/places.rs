//! The page's named places below the figures — *Compare*, *Your GPUs*,
//! *Least memory*, *Learn*, *Code & files* — and the bar's links that
//! scroll to them.
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
        name: "Your GPUs",
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
        name: "Code & files",
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
/// hash holds the view (`crate::text::link`), and an anchor would replace it.
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
    crate::kit::scroll::below_bar(id);
}
