//! Scrolling a card into view below the sticky bar: `scroll_into_view`
//! puts an element's top at the window's, under the bar (`.bar`, sticky at
//! the top, one to three lines high), where its heading cannot be read.
//! On a phone the bar scrolls away with the page, and nothing is left.

/// Scrolls the element `id` so that its top sits just below the sticky
/// bar (or at the top when there is no bar); nothing when it is absent.
pub fn below_bar(id: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let Some(doc) = window.document() else {
        return;
    };
    let Some(el) = doc.get_element_by_id(id) else {
        return;
    };
    // On a phone the bar is not sticky (main.css): nothing covers the top.
    let bar = match doc.query_selector(".bar").ok().flatten() {
        Some(b) if !super::slides::window_is_narrow() => b.get_bounding_client_rect().height(),
        _ => 0.0,
    };
    let top = el.get_bounding_client_rect().top() + window.scroll_y().unwrap_or(0.0);
    window.scroll_to_with_x_and_y(0.0, (top - bar - 8.0).max(0.0));
}
