//! An SVG document drawn on a canvas that is never put on the page: the one
//! way the page turns a figure into pixels, for the PNG export
//! (`export::export_png`) and for each frame of the GIF (`gif`).

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// A canvas of its own, not on the page.
pub(super) fn offscreen_canvas() -> Result<web_sys::HtmlCanvasElement, String> {
    leptos::prelude::document()
        .create_element("canvas")
        .map(|c| c.unchecked_into())
        .map_err(|_| "the browser made no canvas".to_string())
}

/// Draws `svg` on `canvas`, resized to `pw` × `ph` pixels, and returns the
/// canvas's 2D context (to read the pixels back or encode the canvas).
/// Decoding the image is async: the browser loads it from a data URL, which
/// leaves the canvas readable (an SVG from one taints nothing).
pub(super) async fn draw_svg(
    canvas: &web_sys::HtmlCanvasElement,
    svg: &str,
    pw: u32,
    ph: u32,
) -> Result<web_sys::CanvasRenderingContext2d, String> {
    let img = web_sys::HtmlImageElement::new().map_err(|_| "the browser made no image")?;
    let encoded: String = js_sys::encode_uri_component(svg).into();
    img.set_src(&format!("data:image/svg+xml;charset=utf-8,{encoded}"));
    JsFuture::from(img.decode())
        .await
        .map_err(|e| format!("the browser could not draw the figure ({})", describe(&e)))?;
    canvas.set_width(pw);
    canvas.set_height(ph);
    let ctx: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .ok_or("the canvas has no 2D context")?
        .unchecked_into();
    ctx.draw_image_with_html_image_element_and_dw_and_dh(&img, 0.0, 0.0, pw as f64, ph as f64)
        .map_err(|e| format!("could not draw the figure ({})", describe(&e)))?;
    Ok(ctx)
}

/// A JavaScript error's message, for people.
pub(super) fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "no reason given".into())
}
