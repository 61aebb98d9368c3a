//! Quoting input in an error message: a line or word of a trace or config file is shown as it
//! was, up to [`EXCERPT_CHARS`] characters, and cut there with `…`. A parser that quoted the
//! offending text whole printed a line of a megabyte (a file with no line ends, or a binary file
//! taken for a trace) as its error; the start of it is enough to find and fix it, and the message
//! names the file and line for the rest.

/// The most characters [`excerpt`] keeps, the `…` included.
pub const EXCERPT_CHARS: usize = 80;

/// `text` whole if it has at most [`EXCERPT_CHARS`] characters, else its first
/// `EXCERPT_CHARS - 1` characters and `…`. Counts characters, not bytes, so a cut never splits
/// one.
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_string(),
        Some(_) => {
            let (cut, _) = text
                .char_indices()
                .nth(EXCERPT_CHARS - 1)
                .expect("more than EXCERPT_CHARS characters");
            format!("{}…", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_is_cut_at_a_character() {
        assert_eq!(excerpt(""), "");
        let limit = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&limit), limit);
        let long = format!("{limit}x");
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS);
        assert_eq!(cut, format!("{}…", "é".repeat(EXCERPT_CHARS - 1)));
        assert_eq!(excerpt(&"7".repeat(1 << 20)).chars().count(), EXCERPT_CHARS);
    }
}
