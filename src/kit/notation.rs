//! The core's caret notation (`F_all^ℓ`, `a^{ℓ-1}`, `O(ā^3)`): one parser
//! into plain, subscript and superscript runs, drawn as HTML or as SVG.

use leptos::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Script {
    Plain,
    Sub,
    Sup,
}

/// Splits `text` into runs: `_x` and `^x` take the token after them (up
/// to a space or punctuation), `_{…}` and `^{…}` what the braces hold (a
/// hyphen there is a minus sign). A marker with nothing after it is text.
pub fn segments(text: &str) -> Vec<(Script, String)> {
    let mut parts: Vec<(Script, String)> = Vec::new();
    let mut chars = text.chars().peekable();
    let mut plain = String::new();
    while let Some(c) = chars.next() {
        let kind = match c {
            '_' => Script::Sub,
            '^' => Script::Sup,
            _ => {
                plain.push(c);
                continue;
            }
        };
        let mut token = String::new();
        if chars.peek() == Some(&'{') {
            chars.next();
            for c in chars.by_ref() {
                if c == '}' {
                    break;
                }
                token.push(if c == '-' { '−' } else { c });
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || ".,:;()^_/".contains(c) {
                    break;
                }
                token.push(c);
                chars.next();
            }
        }
        if token.is_empty() {
            plain.push(c);
            continue;
        }
        if !plain.is_empty() {
            parts.push((Script::Plain, std::mem::take(&mut plain)));
        }
        parts.push((kind, token));
    }
    if !plain.is_empty() {
        parts.push((Script::Plain, plain));
    }
    parts
}

/// Text in caret notation with real subscripts and superscripts.
pub fn math_text(text: &str) -> impl IntoView {
    segments(text)
        .into_iter()
        .map(|(kind, s)| match kind {
            Script::Plain => s.into_any(),
            Script::Sub => view! { <sub>{s}</sub> }.into_any(),
            Script::Sup => view! { <sup>{s}</sup> }.into_any(),
        })
        .collect_view()
}

/// An SVG `<text>` body in caret notation (`B^10`), with the sub- and
/// superscripts as shifted `<tspan>`s.
pub fn svg_math(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 40);
    for (kind, s) in segments(text) {
        let s = s.replace('&', "&amp;").replace('<', "&lt;");
        let shift = match kind {
            Script::Plain => {
                out.push_str(&s);
                continue;
            }
            Script::Sub => "sub",
            Script::Sup => "super",
        };
        out.push_str(&format!(
            r#"<tspan baseline-shift="{shift}" font-size="75%">{s}</tspan>"#
        ));
    }
    out
}
