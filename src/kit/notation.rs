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
                // `[`: a menu option after the stage (`F_all^3[2]`) is not
                // part of the superscript.
                if c.is_whitespace() || ".,:;()^_/[".contains(c) {
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

/// Text in caret notation in which each of `names` (a menu option's
/// policy, `save_mm_attention`: its underscores are not subscripts) is
/// written as it is, in a `<code>`.
pub fn math_text_with_names(text: &str, names: &[String]) -> impl IntoView {
    let mut parts: Vec<(bool, String)> = Vec::new();
    let mut rest = text;
    loop {
        // The first name in the rest; the longest where two start there.
        let found = names
            .iter()
            .filter(|n| !n.is_empty())
            .filter_map(|n| rest.find(n.as_str()).map(|i| (i, n.len())))
            .min_by_key(|&(i, len)| (i, std::cmp::Reverse(len)));
        let Some((i, len)) = found else {
            parts.push((false, rest.to_string()));
            break;
        };
        parts.push((false, rest[..i].to_string()));
        parts.push((true, rest[i..i + len].to_string()));
        rest = &rest[i + len..];
    }
    parts
        .into_iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(name, s)| {
            if name {
                view! { <code class="policy">{s}</code> }.into_any()
            } else {
                math_text(&s).into_any()
            }
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
