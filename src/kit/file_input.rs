//! The hidden file inputs behind the page's Import buttons: a real button
//! opens the chooser, and the chosen file goes to an importer. A kit
//! piece shared by the header and the measured-run button.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The `change` handler of a hidden file input: the chosen file goes to
/// `import`; the input is cleared so that the same file chosen again fires.
pub fn on_file_chosen(
    import: impl Fn(web_sys::File) + Copy + 'static,
) -> impl Fn(leptos::ev::Event) + Copy + 'static {
    move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(file) = input.files().and_then(|f| f.get(0)) {
            import(file);
        }
        input.set_value("");
    }
}

/// Opens the file chooser of the hidden input `id` (a real button, reachable
/// with Tab, calls it).
pub fn click_input(id: &str) {
    if let Some(input) = leptos::prelude::document()
        .get_element_by_id(id)
        .and_then(|el| el.dyn_into::<web_sys::HtmlInputElement>().ok())
    {
        input.click();
    }
}
