//! One module per subcommand.

pub mod complete;
pub mod discover;
pub mod export;
pub mod ingest;
pub mod parse;
pub mod queue;
pub mod robots;
pub mod stats;

/// Whether a command's input names an http(s) URL rather than a file.
pub fn is_url(input: &str) -> bool {
    let lower = input.get(..8).unwrap_or(input).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}
