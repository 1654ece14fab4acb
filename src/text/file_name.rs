//! The names of downloaded files: the chain's name, short enough for a
//! slide deck's folder, then what the file holds (pure, tested on the host).

/// The longest a downloaded file's name may be: a slide deck's folder
/// stays readable (issue 26 saw names of about 140 characters).
pub const MAX_FILE_NAME: usize = 59;

/// A download's name: the chain's slug, cut at a word so that the whole
/// name — `{slug}.{rest}` — stays within [`MAX_FILE_NAME`] characters.
/// `rest` is what follows (algorithm, figure, extension), kept whole.
pub fn file_name(chain_name: &str, rest: &str) -> String {
    let room = MAX_FILE_NAME.saturating_sub(rest.len() + 1).max(8);
    let mut stem = String::new();
    for word in slug(chain_name).split('-') {
        let extra = if stem.is_empty() {
            word.len()
        } else {
            word.len() + 1
        };
        if stem.len() + extra > room {
            break;
        }
        if !stem.is_empty() {
            stem.push('-');
        }
        stem.push_str(word);
    }
    if stem.is_empty() {
        stem = slug(chain_name).chars().take(room).collect();
    }
    if stem.is_empty() {
        stem = "chain".into();
    }
    format!("{stem}.{rest}")
}

/// A name for files: lower-case letters and digits joined by dashes.
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::{file_name, MAX_FILE_NAME};

    // Fails if a long chain name passes into the file name whole (the
    // names of about 140 characters issue 26 saw; mutation tried: `room`
    // set to usize::MAX — a measured chain's name gave 124 characters),
    // if the cut falls inside a word, or if the part after the chain is cut.
    #[test]
    fn file_names_stay_short_and_cut_at_words() {
        let long = "VGG-19, batch 32, 224 px, fp32, measured on one NVIDIA H100 80GB HBM3 with PyTorch 2.4 (CUDA caching allocator)";
        let name = file_name(long, "pofo.dashboard.png");
        assert!(
            name.len() <= MAX_FILE_NAME,
            "{name}: {} characters",
            name.len()
        );
        assert!(name.ends_with(".pofo.dashboard.png"), "{name}");
        assert!(name.starts_with("vgg-19-batch-32-224-px"), "{name}");
        let stem = name.trim_end_matches(".pofo.dashboard.png");
        assert!(
            long.to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == stem.rsplit('-').next().unwrap()),
            "{name}: the cut falls between words"
        );
        assert_eq!(
            file_name("teaching chain", "chain.json"),
            "teaching-chain.chain.json"
        );
        // A name with no letters still names a file.
        assert_eq!(file_name("—", "trace.json"), "chain.trace.json");
    }
}
