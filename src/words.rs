//! Messages for people: an error's text set into a sentence (pure).

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
