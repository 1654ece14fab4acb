//! The "minimum memory" mode (Hong et al.): its card (the switch, the
//! memory model, the peak difference in words, the curves over the training
//! phase index). Its marks on the layer chain are the kit chain chart's
//! `marks`, which the shell passes from [`MinMemory::marked`](super::MinMemory::marked).

use super::context::use_min_memory;
use super::model::{set_text, summary, Comparison, SetCurve};
use crate::kit::format::bytes;
use crate::kit::notation::math_text;
use crate::kit::palette::OPTIMAL;
use crate::kit::scale::{byte_ticks, ticks, CHART_W, MARGIN_L, MARGIN_R};
use crate::kit::widgets::{CardHead, Switch};
use leptos::prelude::*;
use remat_core::solvers::hong::Model;
use std::fmt::Write;

/// checkpoint_sequential's √n set (dashed).
pub const SEQUENTIAL: &str = "#b4532a";

const H: f64 = 300.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 246.0;

fn x_of(i: usize, n: usize) -> f64 {
    MARGIN_L + i as f64 / (2 * n + 1) as f64 * (CHART_W - MARGIN_L - MARGIN_R)
}

fn y_of(b: u64, max: f64) -> f64 {
    BOTTOM - b as f64 / max * (BOTTOM - TOP)
}

/// The two curves over the training phase index, axes, peaks marked.
fn figure(c: &Comparison) -> String {
    let n = c.optimal.curve.len() / 2 - 1;
    let top = c.optimal.peak_bytes.max(c.sequential.peak_bytes).max(1) as f64 * 1.12;
    let right = CHART_W - MARGIN_R;
    let mut s = String::new();
    for t in byte_ticks(top, 5) {
        let y = y_of(t as u64, top);
        let _ = write!(
            s,
            r##"<line x1="{MARGIN_L}" x2="{right}" y1="{y:.1}" y2="{y:.1}" stroke="#e6e9ef"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#5a6474">{}</text>"##,
            MARGIN_L - 6.0,
            y + 4.0,
            bytes(t as u64)
        );
    }
    let mut xs: Vec<usize> = ticks((2 * n + 1) as f64, 10)
        .into_iter()
        .map(|t| t as usize)
        .collect();
    // The last index, unless a tick sits too close to it (n is the dashed
    // forward | backward line).
    if xs.last().is_none_or(|&t| t + 2 < 2 * n + 1) {
        xs.push(2 * n + 1);
    }
    for i in xs {
        let x = x_of(i, n);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{BOTTOM}" y2="{:.1}" stroke="#8a94a3"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#5a6474">{i}</text>"##,
            BOTTOM + 4.0,
            BOTTOM + 16.0
        );
    }
    // Forward | backward.
    let split = (x_of(n, n) + x_of(n + 1, n)) / 2.0;
    let _ = write!(
        s,
        r##"<line x1="{split:.1}" x2="{split:.1}" y1="{TOP}" y2="{BOTTOM}" stroke="#c9d0da" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#5a6474">forward (index k: stage k)</text><text x="{:.1}" y="{:.1}" font-size="11" fill="#5a6474">backward (index 2n+1−i: stage i)</text>"##,
        split - 6.0,
        TOP + 10.0,
        split + 6.0,
        TOP + 10.0
    );
    let _ = write!(
        s,
        r##"<line x1="{MARGIN_L}" x2="{right}" y1="{BOTTOM}" y2="{BOTTOM}" stroke="#8a94a3"/><line x1="{MARGIN_L}" x2="{MARGIN_L}" y1="{TOP}" y2="{BOTTOM}" stroke="#8a94a3"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#3a4350">training phase index (0 = before, 1 … n = forward, n+1 … 2n = backward, 2n+1 = after; n = {n})</text><text transform="translate(14 {:.1}) rotate(-90)" font-size="12" text-anchor="middle" fill="#3a4350">memory, paper's model</text>"##,
        (MARGIN_L + right) / 2.0,
        BOTTOM + 36.0,
        (TOP + BOTTOM) / 2.0
    );
    // The dashed line first, so the optimal one is drawn over it where
    // they coincide (the forward pass of shared checkpoints).
    for (line, set, color, dash) in [
        (
            "sequential",
            &c.sequential,
            SEQUENTIAL,
            r#" stroke-dasharray="7 4""#,
        ),
        ("optimal", &c.optimal, OPTIMAL, ""),
    ] {
        curve(&mut s, line, set, color, dash, n, top);
    }
    s
}

/// One set's polyline (its values in `data-values`, for the tests) and its
/// peak: a dot at the first index reaching it and the value.
fn curve(s: &mut String, line: &str, set: &SetCurve, color: &str, dash: &str, n: usize, top: f64) {
    let points: Vec<String> = (set.curve.iter().enumerate())
        .map(|(i, &b)| format!("{:.1},{:.1}", x_of(i, n), y_of(b, top)))
        .collect();
    let values: Vec<String> = set.curve.iter().map(|b| b.to_string()).collect();
    let _ = write!(
        s,
        r##"<polyline class="hong-curve" data-line="{line}" data-values="{}" points="{}" fill="none" stroke="{color}" stroke-width="2.2"{dash}/>"##,
        values.join(","),
        points.join(" ")
    );
    let at = (set.curve.iter())
        .position(|&b| b == set.peak_bytes)
        .unwrap_or(0);
    let (x, y) = (x_of(at, n), y_of(set.peak_bytes, top));
    let anchor = if at > n { "end" } else { "start" };
    let dx = if at > n { -8.0 } else { 8.0 };
    let _ = write!(
        s,
        r##"<circle class="hong-peak" data-line="{line}" data-index="{at}" data-bytes="{}" cx="{x:.1}" cy="{y:.1}" r="4.5" fill="{color}" stroke="#fff" stroke-width="1.5"/><text x="{:.1}" y="{:.1}" font-size="12" font-weight="600" text-anchor="{anchor}" fill="{color}">peak {}</text>"##,
        set.peak_bytes,
        x + dx,
        y - 6.0,
        bytes(set.peak_bytes)
    );
}

fn joined(set: &[usize]) -> String {
    let v: Vec<String> = set.iter().map(|c| c.to_string()).collect();
    v.join(",")
}

fn model_text(model: Model) -> &'static str {
    match model {
        Model::PyTorch => "The paper's PyTorch model (Section 4, Algorithm 4) counts only the stage outputs d_i (d_0 the input, d_i stage i's output) and one output-gradient buffer per recomputed segment, the size of its largest tensor; a tensor is freed as soon as its backward is done. The optimal set is Algorithm 6's, O(n).",
        Model::Chen => "Chen's model (Section 3, Eq. 6) counts only the stage outputs d_i: every checkpoint stays for the whole backward pass and a recomputed segment is held whole; no gradient. The optimal set is Algorithm 3's, O(n³).",
    }
}

fn legend_entry(color: &'static str, dashed: bool, label: String) -> impl IntoView {
    let style = if dashed {
        format!("background:repeating-linear-gradient(90deg,{color} 0 6px,transparent 6px 9px)")
    } else {
        format!("background:{color}")
    };
    view! { <span class="swatch"><i style=style></i><span>{label}</span></span> }
}

fn body(c: &Comparison) -> AnyView {
    let sim = |s: &SetCurve| match &s.simulated_peak {
        Ok(b) => bytes(*b),
        Err(e) => format!("not simulated ({e})"),
    };
    let simulated = format!(
        "Remat's simulator counts more: the saved tensors ā^ℓ (≥ a^ℓ) of every stage awaiting its backward, the gradients δ^ℓ and δ^{{ℓ−1}}, the workspaces o_f and o_b, and every allocation rather than one sample per stage. Run as Remat schedules (every segment but the last recomputed), the optimal set measures {} there and the √n set {} (Remat's own peaks); the set optimal here is optimal for the paper's model, not for Remat's.",
        sim(&c.optimal),
        sim(&c.sequential)
    );
    let fig = figure(c);
    view! {
        <div id="min-memory" data-model=c.model.name()
            data-optimal=joined(&c.optimal.checkpoints) data-sequential=joined(&c.sequential.checkpoints)
            data-optimal-peak=c.optimal.peak_bytes.to_string() data-sequential-peak=c.sequential.peak_bytes.to_string()>
            <p id="min-memory-summary" class="min-memory-summary">{summary(c)}</p>
            <div class="legend min-memory-legend">
                {legend_entry(OPTIMAL, false, format!("optimal set {} (▼ on the layer chain)", set_text(&c.optimal.checkpoints)))}
                {legend_entry(SEQUENTIAL, true, format!("checkpoint_sequential, {} segments (⌈√n⌉): {}", c.segments, set_text(&c.sequential.checkpoints)))}
            </div>
            <svg id="min-memory-svg" xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 {CHART_W} {H}")
                font-family="Inter, system-ui, sans-serif" role="img"
                aria-label="memory over the training phase index for the optimal set and checkpoint_sequential's set">
                <rect x="0" y="0" width=CHART_W height=H fill="#ffffff" />
                <g inner_html=fig></g>
            </svg>
            <p class="hint">{math_text(model_text(c.model))}</p>
            <p class="hint">{math_text(&simulated)}</p>
        </div>
    }
    .into_any()
}

/// The mode's card: off, only the switch.
#[component]
pub fn MinMemoryCard() -> impl IntoView {
    let mode = use_min_memory();
    let on_model = move |ev: leptos::ev::Event| {
        if let Ok(m) = event_target_value(&ev).parse::<Model>() {
            mode.model.set(m);
        }
    };
    view! {
        <section class="card" id="min-memory-card">
            <CardHead title="Minimum peak memory (Hong et al.)">
                <Switch id="min-memory-toggle" on=mode.on label="minimum memory mode" />
                <label class="toggle">
                    "model "
                    <select id="min-memory-model" on:change=on_model prop:value=move || mode.model.get().name()>
                        <option value="pytorch">"PyTorch (Section 4)"</option>
                        <option value="chen">"Chen (Section 3)"</option>
                    </select>
                </label>
            </CardHead>
            {move || match mode.result.get() {
                None => view! {
                    <p class="hint">"The checkpoint set of least peak memory in the model of Hong et al., \"GPU Memory Usage Optimization for Backward Propagation in Deep Network Training\", next to checkpoint_sequential's √n set: switch it on."</p>
                }.into_any(),
                Some(Err(e)) => view! { <p class="hint" id="min-memory-error">{e}</p> }.into_any(),
                Some(Ok(c)) => body(&c),
            }}
        </section>
    }
}
