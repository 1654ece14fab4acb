//! Timestamps for measuring a slider move.

use crate::planning::backend::now_ms;
use std::sync::OnceLock;
use wasm_bindgen::JsValue;

/// Whether `?timing` is in the URL (read once: it never changes).
fn timing() -> bool {
    static TIMING: OnceLock<bool> = OnceLock::new();
    *TIMING.get_or_init(|| {
        web_sys::window()
            .and_then(|w| w.location().search().ok())
            .is_some_and(|q| q.contains("timing"))
    })
}

/// Read by tests/measure-slider.mjs from `window.__rematMarks`; only with
/// `?timing` in the URL.
pub fn mark(name: &str) {
    if !timing() {
        return;
    }
    let Some(w) = web_sys::window() else { return };
    let key = JsValue::from_str("__rematMarks");
    let marks = js_sys::Reflect::get(&w, &key)
        .ok()
        .filter(|v| v.is_object())
        .unwrap_or_else(|| {
            let o = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&w, &key, &o);
            o.into()
        });
    let _ = js_sys::Reflect::set(
        &marks,
        &JsValue::from_str(name),
        &JsValue::from_f64(now_ms()),
    );
}
