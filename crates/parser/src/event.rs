//! What the parser yields: URL entries, child-sitemap references and
//! diagnostics. Their serde form is the JSON Lines contract of `sitemapd parse`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::date::Lastmod;
use crate::diagnostic::Diagnostic;
use crate::url::NormUrl;

/// One item of the parse stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Event {
    /// A page URL (urlset entry, text line or feed item).
    Url(UrlEntry),
    /// A child sitemap listed by a sitemap index (SPEC I1); never fetched by the parser.
    Sitemap(SitemapRef),
    /// Something dropped, repaired or wrong, with its rule id and position.
    Diagnostic(Diagnostic),
}

/// How often a page is said to change (SPEC X9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeFreq {
    /// `always`
    Always,
    /// `hourly`
    Hourly,
    /// `daily`
    Daily,
    /// `weekly`
    Weekly,
    /// `monthly`
    Monthly,
    /// `yearly`
    Yearly,
    /// `never`
    Never,
}

impl ChangeFreq {
    /// The protocol keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeFreq::Always => "always",
            ChangeFreq::Hourly => "hourly",
            ChangeFreq::Daily => "daily",
            ChangeFreq::Weekly => "weekly",
            ChangeFreq::Monthly => "monthly",
            ChangeFreq::Yearly => "yearly",
            ChangeFreq::Never => "never",
        }
    }

    /// Parses an exact protocol keyword.
    pub fn from_keyword(s: &str) -> Option<Self> {
        Some(match s {
            "always" => ChangeFreq::Always,
            "hourly" => ChangeFreq::Hourly,
            "daily" => ChangeFreq::Daily,
            "weekly" => ChangeFreq::Weekly,
            "monthly" => ChangeFreq::Monthly,
            "yearly" => ChangeFreq::Yearly,
            "never" => ChangeFreq::Never,
            _ => return None,
        })
    }
}

/// A page URL with the metadata its sitemap gave.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlEntry {
    /// The normalised page URL.
    pub loc: NormUrl,
    /// `<lastmod>` (or the feed item's date), with its precision.
    pub lastmod: Option<Lastmod>,
    /// `<changefreq>`.
    pub changefreq: Option<ChangeFreq>,
    /// `<priority>` in [0, 1]; absent stays absent (SPEC X10).
    pub priority: Option<f32>,
    /// Image extension entries (SPEC E1).
    pub images: Vec<Image>,
    /// Video extension entries (SPEC E2).
    pub videos: Vec<Video>,
    /// News extension (SPEC E3).
    pub news: Option<Box<News>>,
    /// hreflang alternates (SPEC E4).
    pub alternates: Vec<Alternate>,
}

impl UrlEntry {
    /// An entry with only a loc.
    pub fn new(loc: NormUrl) -> Self {
        Self {
            loc,
            lastmod: None,
            changefreq: None,
            priority: None,
            images: Vec::new(),
            videos: Vec::new(),
            news: None,
            alternates: Vec::new(),
        }
    }
}

fn serialize_lastmod<M: SerializeMap>(
    map: &mut M,
    lastmod: &Option<Lastmod>,
) -> Result<(), M::Error> {
    if let Some(l) = lastmod {
        map.serialize_entry("lastmod", l)?;
        map.serialize_entry("lastmod_precision", &l.precision)?;
    }
    Ok(())
}

impl Serialize for UrlEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("loc", &self.loc)?;
        serialize_lastmod(&mut map, &self.lastmod)?;
        if let Some(c) = self.changefreq {
            map.serialize_entry("changefreq", &c)?;
        }
        if let Some(p) = self.priority {
            map.serialize_entry("priority", &p)?;
        }
        if !self.images.is_empty() {
            map.serialize_entry("images", &self.images)?;
        }
        if !self.videos.is_empty() {
            map.serialize_entry("videos", &self.videos)?;
        }
        if let Some(n) = &self.news {
            map.serialize_entry("news", n)?;
        }
        if !self.alternates.is_empty() {
            map.serialize_entry("alternates", &self.alternates)?;
        }
        map.end()
    }
}

/// A child sitemap listed in a sitemap index.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapRef {
    /// The child's normalised URL.
    pub loc: NormUrl,
    /// The index's `<lastmod>` for it (SPEC I3 uses it).
    pub lastmod: Option<Lastmod>,
}

impl Serialize for SitemapRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("loc", &self.loc)?;
        serialize_lastmod(&mut map, &self.lastmod)?;
        map.end()
    }
}

/// `<image:image>` (SPEC E1). Deprecated caption/title/license/geo_location are read and ignored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Image {
    /// The image URL; never a page URL (SPEC X12).
    pub loc: NormUrl,
}

/// hreflang alternate of a page (SPEC E4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternate {
    /// Language (and region) code, or `x-default`.
    pub hreflang: String,
    /// The alternate page's URL.
    pub href: NormUrl,
}

/// allow / deny, for video restrictions and platforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relationship {
    /// Only the listed values.
    Allow,
    /// All but the listed values.
    Deny,
}

/// A list of values with a relationship (`<video:restriction>`, `<video:platform>`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    /// allow or deny.
    pub relationship: Relationship,
    /// Country codes or platform names, as given.
    pub values: Vec<String>,
}

/// `<video:video>` (SPEC E2).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Video {
    /// `thumbnail_loc`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_loc: Option<NormUrl>,
    /// `title`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description` (at most 2,048 characters)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `content_loc`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_loc: Option<NormUrl>,
    /// `player_loc`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub player_loc: Option<NormUrl>,
    /// `duration` in seconds, 1..=28,800
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<u32>,
    /// `expiration_date`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_date: Option<Lastmod>,
    /// `rating`, 0.0..=5.0
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<f32>,
    /// `view_count`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_count: Option<u64>,
    /// `publication_date`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publication_date: Option<Lastmod>,
    /// `family_friendly` (yes/no)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_friendly: Option<bool>,
    /// `restriction relationship="…"` country codes
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restriction: Option<Listed>,
    /// `platform relationship="…"` platforms
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Listed>,
    /// `requires_subscription` (yes/no)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requires_subscription: Option<bool>,
    /// `uploader` name
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploader: Option<String>,
    /// `uploader info="…"`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploader_info: Option<NormUrl>,
    /// `live` (yes/no)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<bool>,
    /// `tag`s, at most 32
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// `<news:news>` (SPEC E3).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct News {
    /// `publication/name`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publication_name: Option<String>,
    /// `publication/language`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publication_language: Option<String>,
    /// `publication_date`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publication_date: Option<Lastmod>,
    /// `title`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}
