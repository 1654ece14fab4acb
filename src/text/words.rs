//! Messages for people (pure): an error's text set into a sentence, the
//! max-batch search in one line, an overhead as a percentage.

/// "+12.3 %", "0 %" or "-4.0 %": an overhead or a gap, as the page writes it.
pub fn pct(x: f64) -> String {
    if x.abs() < 0.0005 {
        "0 %".into()
    } else {
        format!("{:+.1} %", x * 100.0)
    }
}

/// `text` as the end of a sentence: a full stop added unless it already
/// ends with one, a question or an exclamation mark — "did you mean
/// `saved_bytes`?" must not become "…`saved_bytes`?." (issue 26).
pub fn sentence_end(text: &str) -> String {
    let t = text.trim_end();
    if t.ends_with(['.', '?', '!']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// `1 072` for 1072: thin spaces every three digits.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// Which batch model the search uses, in words, from the first profile's
/// batch and the second profile's (when there is one); `?` where not typed.
pub fn model_words(first: &str, second: Option<&str>) -> String {
    match second {
        None => format!("linear in the batch from one profile at batch {first}"),
        Some(second) => format!("affine from two profiles at batch {first} and {second}: sizes and times a + b·batch; reproduces both profiles exactly"),
    }
}

#[cfg(test)]
mod tests {
    use super::sentence_end;

    // Fails if a full stop is added after a question mark (the page's
    // "did you mean `saved_bytes`?." — mutation tried: the `ends_with`
    // check removed, the first assertion failed) or left out after a word.
    #[test]
    fn a_sentence_ends_once() {
        assert_eq!(
            sentence_end("stages[1].saved: unknown field; did you mean `saved_bytes`?"),
            "stages[1].saved: unknown field; did you mean `saved_bytes`?"
        );
        assert_eq!(
            sentence_end("line 3: expected a number"),
            "line 3: expected a number."
        );
        assert_eq!(sentence_end("done. "), "done.");
    }
}
