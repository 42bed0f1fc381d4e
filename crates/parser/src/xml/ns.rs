//! Namespaces and element classification: which element of which format is
//! which, decided by namespace URI, never by prefix (SPEC X12).

use crate::summary::Format;

/// The sitemaps.org namespace (SPEC X1).
pub(crate) const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
const IMAGE_NS: &str = "www.google.com/schemas/sitemap-image/1.1";
const VIDEO_NS: &str = "www.google.com/schemas/sitemap-video/1.1";
const NEWS_NS: &str = "www.google.com/schemas/sitemap-news/0.9";
const XHTML_NS: &str = "http://www.w3.org/1999/xhtml";
const ATOM10_NS: &str = "http://www.w3.org/2005/Atom";
const ATOM03_NS: &str = "http://purl.org/atom/ns#";
const RSS10_NS: &str = "http://purl.org/rss/1.0/";
const RSS090_NS: &str = "http://my.netscape.com/rdf/simple/0.9/";
const RDF_NS: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const DC_NS: &str = "http://purl.org/dc/elements/1.1/";

/// What a namespace URI is to sitemapd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ns {
    /// No namespace.
    None,
    /// The sitemaps.org namespace exactly.
    Sitemap,
    /// An accepted variant of it (https, trailing slash, Google's legacy 0.84/0.9/0.90).
    SitemapVariant,
    /// Google image extension.
    Image,
    /// Google video extension.
    Video,
    /// Google news extension.
    News,
    /// XHTML (hreflang links).
    Xhtml,
    /// Atom 1.0 or 0.3.
    Atom,
    /// RSS 1.0 or 0.90.
    Rss1,
    /// RDF.
    Rdf,
    /// Dublin Core.
    Dc,
    /// Anything else.
    Other,
}

impl Ns {
    /// Classifies a namespace URI (`None` for no namespace).
    pub(crate) fn of(uri: Option<&str>) -> Ns {
        let Some(uri) = uri else { return Ns::None };
        if uri == SITEMAP_NS {
            return Ns::Sitemap;
        }
        let bare = uri
            .strip_prefix("http://")
            .or_else(|| uri.strip_prefix("https://"))
            .unwrap_or(uri);
        let bare_no_slash = bare.strip_suffix('/').unwrap_or(bare);
        match bare_no_slash {
            "www.sitemaps.org/schemas/sitemap/0.9"
            | "sitemaps.org/schemas/sitemap/0.9"
            | "www.google.com/schemas/sitemap/0.84"
            | "www.google.com/schemas/sitemap/0.9"
            | "www.google.com/schemas/sitemap/0.90" => return Ns::SitemapVariant,
            IMAGE_NS => return Ns::Image,
            VIDEO_NS => return Ns::Video,
            NEWS_NS => return Ns::News,
            _ => {}
        }
        match uri {
            XHTML_NS => Ns::Xhtml,
            ATOM10_NS | ATOM03_NS => Ns::Atom,
            RSS10_NS | RSS090_NS => Ns::Rss1,
            RDF_NS => Ns::Rdf,
            DC_NS => Ns::Dc,
            _ => Ns::Other,
        }
    }

    /// Whether elements in this namespace are sitemap elements (lenient reading:
    /// the protocol namespace, its variants, or none).
    pub(crate) fn is_sitemap(self) -> bool {
        matches!(self, Ns::Sitemap | Ns::SitemapVariant | Ns::None)
    }

    /// Whether elements in this namespace are RSS elements.
    pub(crate) fn is_rss(self) -> bool {
        matches!(self, Ns::None | Ns::Rss1)
    }
}

/// The kind of document, from its root element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `<urlset>`
    Urlset,
    /// `<sitemapindex>`
    Index,
    /// `<rss>`
    Rss,
    /// `<rdf:RDF>`
    Rdf,
    /// `<feed>`
    Atom,
}

impl Dialect {
    /// Recognises the root element.
    pub(crate) fn of_root(ns: Ns, local: &str) -> Option<Dialect> {
        Some(match local {
            "urlset" if ns.is_sitemap() || ns == Ns::Other => Dialect::Urlset,
            "sitemapindex" if ns.is_sitemap() || ns == Ns::Other => Dialect::Index,
            "rss" if ns.is_rss() => Dialect::Rss,
            "RDF" if ns == Ns::Rdf => Dialect::Rdf,
            "feed" if matches!(ns, Ns::Atom | Ns::None) => Dialect::Atom,
            _ => return None,
        })
    }

    /// The format this dialect is.
    pub(crate) fn format(self) -> Format {
        match self {
            Dialect::Urlset => Format::Urlset,
            Dialect::Index => Format::SitemapIndex,
            Dialect::Rss => Format::Rss,
            Dialect::Rdf => Format::Rdf,
            Dialect::Atom => Format::Atom,
        }
    }
}

/// A field of `<video:video>` (SPEC E2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub(crate) enum VideoField {
    ThumbnailLoc,
    Title,
    Description,
    ContentLoc,
    PlayerLoc,
    Duration,
    ExpirationDate,
    Rating,
    ViewCount,
    PublicationDate,
    FamilyFriendly,
    Restriction,
    Platform,
    RequiresSubscription,
    Uploader,
    Live,
    Tag,
}

impl VideoField {
    fn of(local: &str) -> Option<Self> {
        Some(match local {
            "thumbnail_loc" => Self::ThumbnailLoc,
            "title" => Self::Title,
            "description" => Self::Description,
            "content_loc" => Self::ContentLoc,
            "player_loc" => Self::PlayerLoc,
            "duration" => Self::Duration,
            "expiration_date" => Self::ExpirationDate,
            "rating" => Self::Rating,
            "view_count" => Self::ViewCount,
            "publication_date" => Self::PublicationDate,
            "family_friendly" => Self::FamilyFriendly,
            "restriction" => Self::Restriction,
            "platform" => Self::Platform,
            "requires_subscription" => Self::RequiresSubscription,
            "uploader" => Self::Uploader,
            "live" => Self::Live,
            "tag" => Self::Tag,
            _ => return None,
        })
    }
}

/// A field of `<news:news>` (SPEC E3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub(crate) enum NewsField {
    Name,
    Language,
    PublicationDate,
    Title,
}

/// An element whose text is captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub(crate) enum Field {
    Loc,
    Lastmod,
    ChangeFreq,
    Priority,
    ImageLoc,
    Video(VideoField),
    News(NewsField),
    /// RSS `link`
    Link,
    /// RSS `guid`
    Guid,
    /// RSS `pubDate`
    PubDate,
    /// `dc:date`
    DcDate,
    /// Atom `updated` (0.3 `modified`)
    Updated,
    /// Atom `published` (0.3 `issued`, `created`)
    Published,
}

impl Field {
    /// Whether the field's text is a URL (or, for an RSS guid, used only as one).
    pub(crate) fn is_url(self) -> bool {
        matches!(
            self,
            Field::Loc
                | Field::ImageLoc
                | Field::Link
                | Field::Guid
                | Field::Video(
                    VideoField::ThumbnailLoc | VideoField::ContentLoc | VideoField::PlayerLoc
                )
        )
    }
}

/// What an open element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elem {
    /// The root element.
    Root,
    /// An element (and subtree) sitemapd ignores (SPEC X12, E5).
    Skip,
    /// RSS `<channel>`, where items live.
    Channel,
    /// `<url>`, `<sitemap>`, `<item>` or `<entry>`.
    Entry,
    /// `<image:image>`
    Image,
    /// `<video:video>`
    Video,
    /// `<news:news>`
    News,
    /// `<news:publication>`
    NewsPublication,
    /// An element whose text is captured.
    Field(Field),
}

/// Classifies an element from its parent, namespace and local name.
pub(crate) fn classify(dialect: Dialect, parent: Elem, ns: Ns, local: &str) -> Elem {
    match (dialect, parent) {
        (_, Elem::Skip | Elem::Field(_)) => Elem::Skip,
        (Dialect::Urlset | Dialect::Index, Elem::Root) => match local {
            "url" | "sitemap" if ns.is_sitemap() => Elem::Entry,
            _ => Elem::Skip,
        },
        (Dialect::Urlset | Dialect::Index, Elem::Entry) => match ns {
            n if n.is_sitemap() => match local {
                "loc" => Elem::Field(Field::Loc),
                "lastmod" => Elem::Field(Field::Lastmod),
                "changefreq" => Elem::Field(Field::ChangeFreq),
                "priority" => Elem::Field(Field::Priority),
                _ => Elem::Skip,
            },
            Ns::Image if local == "image" => Elem::Image,
            Ns::Video if local == "video" => Elem::Video,
            Ns::News if local == "news" => Elem::News,
            _ => Elem::Skip,
        },
        (_, Elem::Image) if ns == Ns::Image && local == "loc" => Elem::Field(Field::ImageLoc),
        (_, Elem::Video) if ns == Ns::Video => {
            VideoField::of(local).map_or(Elem::Skip, |f| Elem::Field(Field::Video(f)))
        }
        (_, Elem::News) if ns == Ns::News => match local {
            "publication" => Elem::NewsPublication,
            "publication_date" => Elem::Field(Field::News(NewsField::PublicationDate)),
            "title" => Elem::Field(Field::News(NewsField::Title)),
            _ => Elem::Skip,
        },
        (_, Elem::NewsPublication) if ns == Ns::News => match local {
            "name" => Elem::Field(Field::News(NewsField::Name)),
            "language" => Elem::Field(Field::News(NewsField::Language)),
            _ => Elem::Skip,
        },
        (Dialect::Rss, Elem::Root) if local == "channel" && ns.is_rss() => Elem::Channel,
        (Dialect::Rss, Elem::Channel) | (Dialect::Rdf, Elem::Root)
            if local == "item" && ns.is_rss() =>
        {
            Elem::Entry
        }
        (Dialect::Rss | Dialect::Rdf, Elem::Entry) => match (ns, local) {
            (n, "link") if n.is_rss() => Elem::Field(Field::Link),
            (n, "guid") if n.is_rss() => Elem::Field(Field::Guid),
            (n, "pubDate") if n.is_rss() => Elem::Field(Field::PubDate),
            (Ns::Dc, "date") => Elem::Field(Field::DcDate),
            _ => Elem::Skip,
        },
        (Dialect::Atom, Elem::Root) if local == "entry" && matches!(ns, Ns::Atom | Ns::None) => {
            Elem::Entry
        }
        (Dialect::Atom, Elem::Entry) if matches!(ns, Ns::Atom | Ns::None) => match local {
            "updated" | "modified" => Elem::Field(Field::Updated),
            "published" | "issued" | "created" => Elem::Field(Field::Published),
            _ => Elem::Skip,
        },
        _ => Elem::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x1_namespace_variants() {
        assert_eq!(Ns::of(Some(SITEMAP_NS)), Ns::Sitemap);
        for v in [
            "https://www.sitemaps.org/schemas/sitemap/0.9",
            "http://www.sitemaps.org/schemas/sitemap/0.9/",
            "http://www.google.com/schemas/sitemap/0.84",
            "http://www.google.com/schemas/sitemap/0.9",
            "http://www.google.com/schemas/sitemap/0.90",
        ] {
            assert_eq!(Ns::of(Some(v)), Ns::SitemapVariant, "{v}");
        }
        assert_eq!(Ns::of(None), Ns::None);
        assert_eq!(Ns::of(Some("urn:x")), Ns::Other);
    }

    #[test]
    fn x12_extensions_by_namespace_not_prefix() {
        let image = Ns::of(Some("http://www.google.com/schemas/sitemap-image/1.1"));
        assert_eq!(
            classify(Dialect::Urlset, Elem::Entry, image, "image"),
            Elem::Image
        );
        assert_eq!(
            classify(Dialect::Urlset, Elem::Image, image, "loc"),
            Elem::Field(Field::ImageLoc)
        );
        // A `loc` in an unknown namespace is not a page URL.
        assert_eq!(
            classify(Dialect::Urlset, Elem::Entry, Ns::Other, "loc"),
            Elem::Skip
        );
        assert_eq!(
            classify(Dialect::Urlset, Elem::Image, Ns::Sitemap, "loc"),
            Elem::Skip
        );
    }
}
