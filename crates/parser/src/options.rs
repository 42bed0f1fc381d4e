//! What a caller can tell the parser about the document and how strict to be.

pub use crate::url::MAX_LOC_CHARS;
use crate::url::NormUrl;

/// Default byte limit per document, counted after decompression (SPEC C3).
pub const DEFAULT_MAX_BYTES: u64 = 52_428_800;
/// Default entry limit per document (SPEC C4).
pub const DEFAULT_MAX_ENTRIES: u64 = 50_000;
/// At most this many images per `<url>` (SPEC E1).
pub const MAX_IMAGES_PER_URL: usize = 1_000;

/// Which URLs a sitemap may list (SPEC L6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ScopeMode {
    /// Same scheme, host and port, and the sitemap's directory or deeper (the protocol's rule).
    #[default]
    Directory,
    /// Same scheme, host and port; any path.
    Host,
    /// Keep everything.
    None,
}

impl std::str::FromStr for ScopeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "directory" => Ok(Self::Directory),
            "host" => Ok(Self::Host),
            "none" => Ok(Self::None),
            other => Err(format!(
                "unknown scope mode {other:?} (expected directory, host or none)"
            )),
        }
    }
}

/// Lenient (the default) repairs what it can and flags it; strict drops or
/// rejects whatever the protocol does not allow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// Repair and flag (relative locs resolved, zone-less times taken as UTC …).
    #[default]
    Lenient,
    /// Drop what the protocol does not allow; reject over-long documents.
    Strict,
}

/// Options of one parse.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// The document's own URL: base for relative references and the scope rule.
    /// Without it, relative references are dropped and no scope check is made.
    pub document_url: Option<NormUrl>,
    /// Origins whose robots.txt listed this sitemap (SPEC R5/L7): URLs on them are in scope.
    pub authorized_origins: Vec<NormUrl>,
    /// Scope mode (SPEC L6).
    pub scope: ScopeMode,
    /// Lenient or strict.
    pub strictness: Strictness,
    /// Byte limit after decompression (SPEC C3).
    pub max_bytes: u64,
    /// Entry limit (SPEC C4).
    pub max_entries: u64,
    /// Read the entries of the common shape (plain `<url>`/`<sitemap>`
    /// elements with text fields, UTF-8) straight from the bytes instead of
    /// through quick-xml's events: the same events, diagnostics and
    /// positions, in about half the time. On by default; off reads every
    /// byte through quick-xml, to rule the fast lane out when reporting a
    /// difference.
    pub fast_lane: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            document_url: None,
            authorized_origins: Vec::new(),
            scope: ScopeMode::default(),
            strictness: Strictness::default(),
            max_bytes: DEFAULT_MAX_BYTES,
            max_entries: DEFAULT_MAX_ENTRIES,
            fast_lane: true,
        }
    }
}

impl ParseOptions {
    /// Options for a document fetched from `url` (the usual case).
    pub fn for_url(url: NormUrl) -> Self {
        Self {
            document_url: Some(url),
            ..Self::default()
        }
    }

    /// Whether strict mode is on.
    pub fn is_strict(&self) -> bool {
        self.strictness == Strictness::Strict
    }
}
