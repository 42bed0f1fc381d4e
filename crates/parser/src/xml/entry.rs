//! One entry being read (`<url>`, `<sitemap>`, `<item>`, `<entry>`): its
//! fields as they complete, then the entry itself, checked and yielded.

use crate::ctx::{At, Ctx, Relative, quote};
use crate::date::{DateError, Lastmod, ParsedDate, parse_rfc2822, parse_w3c};
use crate::diagnostic::Rule;
use crate::event::{Alternate, Image, Listed, News, SitemapRef, UrlEntry, Video};
use crate::options::MAX_IMAGES_PER_URL;
use crate::url::{Base, has_scheme};

use super::ns::{Dialect, Field, NewsField, VideoField};
use super::values::{self, Read};
use super::{undefined_entity_in_url, undefined_entity_kept};

/// Longest video description kept, in characters (E2).
const MAX_DESCRIPTION_CHARS: usize = 2_048;
/// Most tags kept per video (E2).
const MAX_TAGS: usize = 32;
/// Most bytes of extension data (images, videos, news, alternates) kept for
/// one entry, so that one hostile `<url>` cannot hold megabytes.
const MAX_EXTRAS_BYTES: usize = 256 * 1024;

/// A value and where it was written.
type Written = (String, At);

/// The fields of an entry read so far. Reused from entry to entry.
#[derive(Default)]
pub(super) struct EntryBuilder {
    pos: At,
    loc: String,
    has_loc: bool,
    loc_rejected: bool,
    loc_pos: At,
    /// Once-only fields already read (bits: lastmod 1, changefreq 2, priority 4).
    seen: u32,
    /// Direct text of the entry element (X2's lenient fallback).
    pub own_text: String,
    /// The first undefined entity in `own_text`, and where (C6).
    own_undefined: Option<(String, At)>,
    /// A URL of the feed item or entry (link, guid, href) was dropped and
    /// flagged already: its absence needs no second diagnostic.
    url_rejected: bool,
    lastmod: Option<Lastmod>,
    changefreq: Option<crate::event::ChangeFreq>,
    priority: Option<f32>,
    images: Vec<Image>,
    images_capped: bool,
    /// Extension bytes kept so far, and whether the budget ran out (flagged once).
    extras: usize,
    extras_capped: bool,
    /// The `<video:video>` being read was kept (within the budget).
    video_open: bool,
    videos: Vec<Video>,
    news: Option<Box<News>>,
    alternates: Vec<Alternate>,
    link: Option<Written>,
    guid: Option<Written>,
    /// `isPermaLink="false"`: the guid is an identifier, used as the item's
    /// URL only when there is no usable link and it is an absolute http(s)
    /// URL (flagged, F1).
    guid_not_permalink: bool,
    pub_date: Option<Written>,
    dc_date: Option<Written>,
    updated: Option<Written>,
    published: Option<Written>,
    /// Best Atom link so far: (rank, rel, href, position); rank 0 is rel=alternate or no rel.
    atom_link: Option<(u8, String, String, At)>,
    /// The entry's `xml:base` (Atom), already resolved.
    pub base: Option<Base>,
}

/// Reads a small value, flagging repairs (kept in lenient mode, dropped in
/// strict) and failures under `rule`.
fn read_value<T>(
    ctx: &mut Ctx,
    read: Read<T>,
    text: &str,
    rule: Rule,
    what: &str,
    pos: At,
) -> Option<T> {
    match read {
        Ok((v, None)) => Some(v),
        Ok((v, Some(why))) if !ctx.opts.is_strict() => {
            ctx.warn(rule, pos, format!("{what} {}: {why}", quote(text.trim())));
            Some(v)
        }
        Ok((_, Some(why))) => {
            ctx.warn(
                rule,
                pos,
                format!("{what} {} dropped (strict): {why}", quote(text.trim())),
            );
            None
        }
        Err(why) => {
            ctx.warn(
                rule,
                pos,
                format!("{what} {} dropped: {why}", quote(text.trim())),
            );
            None
        }
    }
}

/// Reads a date field with `parse`, like [`read_value`].
fn read_date(
    ctx: &mut Ctx,
    text: &str,
    rule: Rule,
    what: &str,
    pos: At,
    parse: fn(&str) -> Result<ParsedDate, DateError>,
) -> Option<Lastmod> {
    let read = parse(text).map(|d| (d.value, d.repair)).map_err(|e| e.0);
    read_value(ctx, read, text, rule, what, pos)
}

/// Keeps the first of a repeated field's values, with where it was written.
fn keep_first(slot: &mut Option<Written>, text: &str, pos: At) {
    slot.get_or_insert_with(|| (text.to_string(), pos));
}

/// Whether `text` is an absolute http(s) URL (case-insensitive scheme).
fn is_http_url(text: &str) -> bool {
    let t = text.trim();
    let prefix = |p: &str| t.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p));
    prefix("http://") || prefix("https://")
}

fn non_empty(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

impl EntryBuilder {
    /// Where the entry started.
    pub(super) fn start(&self) -> At {
        self.pos
    }

    /// Starts a new entry at `pos`, keeping the text buffers' allocations.
    pub(super) fn reset(&mut self, pos: At) {
        let mut loc = std::mem::take(&mut self.loc);
        let mut own_text = std::mem::take(&mut self.own_text);
        loc.clear();
        own_text.clear();
        *self = EntryBuilder {
            pos,
            loc,
            own_text,
            ..EntryBuilder::default()
        };
    }

    /// The entry's `<loc>` was dropped already (and flagged): the entry is not yielded.
    pub(super) fn reject_loc(&mut self) {
        self.has_loc = true;
        self.loc_rejected = true;
    }

    /// Whether the entry already has what makes it worth yielding if reading
    /// stops now (C8): a complete loc, or a feed item's complete link or guid.
    pub(super) fn salvageable(&self) -> bool {
        self.has_loc || self.link.is_some() || self.guid.is_some() || self.atom_link.is_some()
    }

    /// The `isPermaLink` of an RSS `<guid>` (absent means true).
    pub(super) fn guid_is_permalink(&mut self, permalink: bool) {
        self.guid_not_permalink = !permalink;
    }

    /// An undefined entity `name` at `at` in the entry's own text (C6),
    /// decided on when the entry ends.
    pub(super) fn own_text_entity(&mut self, name: &str, at: At) {
        self.own_undefined
            .get_or_insert_with(|| (name.to_string(), at));
    }

    /// A URL of the feed item or entry was dropped and flagged already.
    pub(super) fn reject_url(&mut self) {
        self.url_rejected = true;
    }

    /// A URL field's end tag when its text holds the undefined entity `name`
    /// (at `at`): the value is dropped and flagged (C6), and with it what
    /// cannot be without it (a `<loc>`'s entry; a link or guid is no longer a
    /// candidate for the item's URL). A field that would be ignored anyway
    /// (a second `<loc>`, an image over the cap) goes the usual way.
    pub(super) fn reject_url_field(
        &mut self,
        ctx: &mut Ctx,
        field: Field,
        text: &mut String,
        pos: At,
        name: &str,
        at: At,
    ) {
        let what = match field {
            Field::Loc if !self.has_loc => "loc",
            Field::ImageLoc if self.images.len() < MAX_IMAGES_PER_URL => "image loc",
            Field::Link if self.link.is_none() => "item link",
            Field::Guid if self.guid.is_none() => "item guid",
            Field::Video(f) if self.video_open => match f {
                VideoField::ThumbnailLoc => "video thumbnail_loc",
                VideoField::ContentLoc => "video content_loc",
                VideoField::PlayerLoc => "video player_loc",
                _ => return self.finish_field(ctx, field, text, pos),
            },
            // Link and guid: the first is kept, a later one is not read.
            Field::Link | Field::Guid => return,
            _ => return self.finish_field(ctx, field, text, pos),
        };
        undefined_entity_in_url(ctx, what, text, name, at);
        match field {
            Field::Loc => self.reject_loc(),
            Field::Link | Field::Guid => self.url_rejected = true,
            _ => {}
        }
    }

    /// A `<video:video>` starts.
    pub(super) fn start_video(&mut self, ctx: &mut Ctx, pos: At) {
        self.video_open = self.within_budget(ctx, std::mem::size_of::<Video>(), Rule::E2, pos);
        if self.video_open {
            self.videos.push(Video::default());
        }
    }

    /// Counts `bytes` of extension data against the entry's budget; false
    /// (flagged once, under `rule`) when they do not fit.
    fn within_budget(&mut self, ctx: &mut Ctx, bytes: usize, rule: Rule, pos: At) -> bool {
        if self.extras + bytes <= MAX_EXTRAS_BYTES {
            self.extras += bytes;
            return true;
        }
        if !self.extras_capped {
            self.extras_capped = true;
            let message = format!(
                "more than {MAX_EXTRAS_BYTES} bytes of extension data in one entry: the rest is ignored"
            );
            ctx.warn(rule, pos, message);
        }
        false
    }

    /// A `<news:news>` starts.
    pub(super) fn start_news(&mut self) {
        self.news.get_or_insert_default();
    }

    /// Attributes of a video field's start tag (`relationship`, `info`).
    pub(super) fn video_attribute(
        &mut self,
        ctx: &mut Ctx,
        field: VideoField,
        name: &str,
        value: &str,
        pos: At,
    ) {
        if !self.video_open {
            return;
        }
        let Some(video) = self.videos.last_mut() else {
            return;
        };
        match (field, name) {
            (VideoField::Restriction | VideoField::Platform, "relationship") => {
                match values::relationship(value) {
                    Some(relationship) => {
                        let listed = Some(Listed {
                            relationship,
                            values: Vec::new(),
                        });
                        if field == VideoField::Restriction {
                            video.restriction = listed;
                        } else {
                            video.platform = listed;
                        }
                    }
                    None => ctx.warn(
                        Rule::E2,
                        pos,
                        format!("video relationship {} is not allow or deny", quote(value)),
                    ),
                }
            }
            (VideoField::Uploader, "info") => {
                video.uploader_info = ctx.resolve(
                    value,
                    Rule::E2,
                    pos,
                    "video uploader info",
                    self.base.as_ref(),
                    Relative::Flagged,
                );
            }
            _ => {}
        }
    }

    /// An `<xhtml:link>` inside the entry (E4).
    pub(super) fn alternate(
        &mut self,
        ctx: &mut Ctx,
        rel: Option<&str>,
        hreflang: Option<&str>,
        href: Option<&str>,
        pos: At,
    ) {
        match (rel, hreflang, href) {
            (Some(rel), Some(lang), Some(href)) if rel.trim().eq_ignore_ascii_case("alternate") => {
                let resolved = ctx.resolve(
                    href,
                    Rule::E4,
                    pos,
                    "hreflang href",
                    self.base.as_ref(),
                    Relative::Flagged,
                );
                if let Some(href) = resolved.filter(|h| {
                    self.within_budget(ctx, h.as_str().len() + lang.len(), Rule::E4, pos)
                }) {
                    self.alternates.push(Alternate {
                        hreflang: lang.trim().to_string(),
                        href,
                    });
                }
            }
            _ => ctx.warn(
                Rule::E4,
                pos,
                "xhtml:link without rel=\"alternate\", hreflang and href ignored",
            ),
        }
    }

    /// An Atom `<link>` inside the entry (F2): the first rel="alternate" (or no rel) wins.
    pub(super) fn atom_link(&mut self, rel: Option<&str>, href: Option<&str>, pos: At) {
        let Some(href) = href else { return };
        let rel = rel.map(str::trim).unwrap_or("alternate");
        let rank = u8::from(!rel.eq_ignore_ascii_case("alternate"));
        if self
            .atom_link
            .as_ref()
            .is_none_or(|(best, ..)| rank < *best)
        {
            self.atom_link = Some((rank, rel.to_string(), href.to_string(), pos));
        }
    }

    /// A field's end tag: its text (taken from `text`) is checked and kept.
    pub(super) fn finish_field(&mut self, ctx: &mut Ctx, field: Field, text: &mut String, pos: At) {
        if let Some((rule, name)) = self.repeated(field) {
            let message = format!(
                "second <{name}> {} ignored: the first is kept",
                quote(text.trim())
            );
            ctx.warn(rule, pos, message);
            return;
        }
        match field {
            Field::Loc => {
                if self.has_loc {
                    ctx.warn(
                        Rule::X2,
                        pos,
                        format!(
                            "second <loc> {} ignored: the first is kept",
                            quote(text.trim())
                        ),
                    );
                } else {
                    std::mem::swap(&mut self.loc, text);
                    self.has_loc = true;
                    self.loc_pos = pos;
                }
            }
            Field::Lastmod => {
                self.lastmod = read_date(ctx, text, Rule::X7, "lastmod", pos, parse_w3c)
            }
            Field::ChangeFreq => {
                let read = values::changefreq(text, ctx.opts.is_strict());
                self.changefreq = read_value(ctx, read, text, Rule::X9, "changefreq", pos);
            }
            Field::Priority => {
                self.priority = read_value(
                    ctx,
                    values::priority(text),
                    text,
                    Rule::X10,
                    "priority",
                    pos,
                )
            }
            Field::ImageLoc => {
                if self.images.len() == MAX_IMAGES_PER_URL {
                    if !self.images_capped {
                        self.images_capped = true;
                        ctx.warn(Rule::E1, pos, format!("more than {MAX_IMAGES_PER_URL} images in one <url>: the rest are ignored"));
                    }
                } else if let Some(loc) = ctx.resolve(
                    text,
                    Rule::E1,
                    pos,
                    "image loc",
                    self.base.as_ref(),
                    Relative::Flagged,
                ) && self.within_budget(ctx, loc.as_str().len(), Rule::E1, pos)
                {
                    self.images.push(Image { loc });
                }
            }
            Field::Video(f) => self.video_field(ctx, f, text, pos),
            Field::News(f) => self.news_field(ctx, f, text, pos),
            Field::Link => keep_first(&mut self.link, text, pos),
            Field::Guid => keep_first(&mut self.guid, text, pos),
            Field::PubDate => keep_first(&mut self.pub_date, text, pos),
            Field::DcDate => keep_first(&mut self.dc_date, text, pos),
            Field::Updated => keep_first(&mut self.updated, text, pos),
            Field::Published => keep_first(&mut self.published, text, pos),
        }
    }

    /// Marks a once-only field (lastmod, changefreq, priority) as read;
    /// returns its rule and name if it had been read before in this entry.
    fn repeated(&mut self, field: Field) -> Option<(Rule, &'static str)> {
        let (bit, rule, name) = match field {
            Field::Lastmod => (1, Rule::X7, "lastmod"),
            Field::ChangeFreq => (2, Rule::X9, "changefreq"),
            Field::Priority => (4, Rule::X10, "priority"),
            _ => return None,
        };
        let seen = self.seen & bit != 0;
        self.seen |= bit;
        seen.then_some((rule, name))
    }

    fn video_field(&mut self, ctx: &mut Ctx, field: VideoField, text: &str, pos: At) {
        if !self.video_open || !self.within_budget(ctx, text.len(), Rule::E2, pos) {
            return;
        }
        let base = self.base.clone();
        let Some(v) = self.videos.last_mut() else {
            return;
        };
        let url = |ctx: &mut Ctx, what| {
            ctx.resolve(text, Rule::E2, pos, what, base.as_ref(), Relative::Flagged)
        };
        // A small value read under E2, its repairs and failures flagged.
        macro_rules! e2 {
            ($read:expr, $name:literal) => {
                read_value(ctx, $read, text, Rule::E2, concat!("video ", $name), pos)
            };
        }
        match field {
            VideoField::ThumbnailLoc => v.thumbnail_loc = url(ctx, "video thumbnail_loc"),
            VideoField::ContentLoc => v.content_loc = url(ctx, "video content_loc"),
            VideoField::PlayerLoc => v.player_loc = url(ctx, "video player_loc"),
            VideoField::Title => v.title = non_empty(text),
            VideoField::Description => {
                v.description = non_empty(text).map(|mut d| {
                    if let Some((cut, _)) = d.char_indices().nth(MAX_DESCRIPTION_CHARS) {
                        let message = format!("video description longer than {MAX_DESCRIPTION_CHARS} characters truncated");
                        ctx.warn(Rule::E2, pos, message);
                        d.truncate(cut);
                    }
                    d
                });
            }
            VideoField::Duration => {
                v.duration = e2!(values::integer(text, 1..=28_800), "duration").map(|d| d as u32)
            }
            VideoField::ExpirationDate => {
                v.expiration_date =
                    read_date(ctx, text, Rule::E2, "video expiration_date", pos, parse_w3c);
            }
            VideoField::PublicationDate => {
                v.publication_date = read_date(
                    ctx,
                    text,
                    Rule::E2,
                    "video publication_date",
                    pos,
                    parse_w3c,
                );
            }
            VideoField::Rating => v.rating = e2!(values::decimal(text, 0.0..=5.0), "rating"),
            VideoField::ViewCount => {
                v.view_count = e2!(values::integer(text, 0..=u64::MAX), "view_count")
            }
            VideoField::FamilyFriendly => {
                v.family_friendly = e2!(values::yes_no(text), "family_friendly")
            }
            VideoField::RequiresSubscription => {
                v.requires_subscription = e2!(values::yes_no(text), "requires_subscription");
            }
            VideoField::Live => v.live = e2!(values::yes_no(text), "live"),
            VideoField::Restriction | VideoField::Platform => {
                let listed = if field == VideoField::Restriction {
                    &mut v.restriction
                } else {
                    &mut v.platform
                };
                match listed {
                    Some(l) => {
                        l.values = text.split_ascii_whitespace().map(str::to_string).collect()
                    }
                    None => ctx.warn(
                        Rule::E2,
                        pos,
                        "video restriction/platform without a valid relationship ignored",
                    ),
                }
            }
            VideoField::Uploader => v.uploader = non_empty(text),
            VideoField::Tag => {
                if v.tags.len() < MAX_TAGS {
                    v.tags.extend(non_empty(text));
                } else {
                    let message = format!(
                        "more than {MAX_TAGS} video tags: {} ignored",
                        quote(text.trim())
                    );
                    ctx.warn(Rule::E2, pos, message);
                }
            }
        }
    }

    /// A `<video:video>` ends: the protocol's required fields are checked (E2).
    pub(super) fn finish_video(&mut self, ctx: &mut Ctx, pos: At) {
        if !std::mem::take(&mut self.video_open) {
            return;
        }
        let Some(v) = self.videos.last() else { return };
        let mut missing = Vec::new();
        if v.thumbnail_loc.is_none() {
            missing.push("thumbnail_loc");
        }
        if v.title.is_none() {
            missing.push("title");
        }
        if v.description.is_none() {
            missing.push("description");
        }
        if v.content_loc.is_none() && v.player_loc.is_none() {
            missing.push("content_loc or player_loc");
        }
        if !missing.is_empty() {
            ctx.warn(
                Rule::E2,
                pos,
                format!("video without {}", missing.join(", ")),
            );
        }
    }

    fn news_field(&mut self, ctx: &mut Ctx, field: NewsField, text: &str, pos: At) {
        if !self.within_budget(ctx, text.len(), Rule::E3, pos) {
            return;
        }
        let news = self.news.get_or_insert_default();
        match field {
            NewsField::Name => news.publication_name = non_empty(text),
            NewsField::Language => news.publication_language = non_empty(text),
            NewsField::Title => news.title = non_empty(text),
            NewsField::PublicationDate => {
                news.publication_date =
                    read_date(ctx, text, Rule::E3, "news publication_date", pos, parse_w3c);
            }
        }
    }

    /// The entry's end tag: the entry is checked and yielded (or dropped with a diagnostic).
    pub(super) fn finish(&mut self, ctx: &mut Ctx, dialect: Dialect) {
        if let Some((name, at)) = self.own_undefined.take() {
            let own_is_loc = matches!(dialect, Dialect::Urlset | Dialect::Index)
                && !self.has_loc
                && !ctx.opts.is_strict()
                && has_scheme(&self.own_text);
            if own_is_loc {
                // X2's fallback would make it the loc: the entry is dropped.
                undefined_entity_in_url(ctx, "entry text", &self.own_text, &name, at);
                return;
            }
            undefined_entity_kept(ctx, &name, at);
        }
        match dialect {
            Dialect::Urlset | Dialect::Index => self.finish_sitemap_entry(ctx, dialect),
            Dialect::Rss | Dialect::Rdf => self.finish_rss_item(ctx),
            Dialect::Atom => self.finish_atom_entry(ctx),
        }
    }

    fn finish_sitemap_entry(&mut self, ctx: &mut Ctx, dialect: Dialect) {
        if self.loc_rejected {
            return;
        }
        let (raw, pos) = if self.has_loc {
            (std::mem::take(&mut self.loc), self.loc_pos)
        } else if !ctx.opts.is_strict() && has_scheme(&self.own_text) {
            let own = std::mem::take(&mut self.own_text);
            ctx.warn(
                Rule::X2,
                self.pos,
                format!(
                    "entry without <loc>: its text {} used as the loc",
                    quote(own.trim())
                ),
            );
            (own, self.pos)
        } else {
            ctx.warn(Rule::X2, self.pos, "entry without <loc> skipped");
            return;
        };
        let loc = ctx.resolve(&raw, Rule::X3, pos, "loc", None, Relative::Flagged);
        self.loc = raw;
        let Some(loc) = loc else { return };
        if dialect == Dialect::Index {
            let extensions = !self.images.is_empty()
                || !self.videos.is_empty()
                || self.news.is_some()
                || !self.alternates.is_empty();
            if extensions {
                ctx.warn(
                    Rule::I1,
                    self.pos,
                    "image, video, news or hreflang elements in a <sitemap> entry ignored",
                );
            }
            ctx.emit_sitemap(
                SitemapRef {
                    loc,
                    lastmod: self.lastmod,
                },
                self.pos,
            );
            return;
        }
        let entry = UrlEntry {
            loc,
            lastmod: self.lastmod,
            changefreq: self.changefreq,
            priority: self.priority,
            images: std::mem::take(&mut self.images),
            videos: std::mem::take(&mut self.videos),
            news: self.news.take(),
            alternates: std::mem::take(&mut self.alternates),
        };
        ctx.emit_url(entry, self.pos);
    }

    fn finish_rss_item(&mut self, ctx: &mut Ctx) {
        // The link, or else a guid that is an absolute URL (F1). A guid marked
        // isPermaLink="false" qualifies only as an absolute http(s) URL, and
        // is flagged when used.
        let not_permalink = self.guid_not_permalink;
        let link = self.link.take().filter(|(l, _)| !l.trim().is_empty());
        let guid = self.guid.take().filter(|(g, _)| {
            if not_permalink {
                is_http_url(g)
            } else {
                has_scheme(g)
            }
        });
        if link.is_none() && guid.is_none() {
            if !self.url_rejected {
                ctx.warn(
                    Rule::F1,
                    self.pos,
                    "item without a link or permalink guid skipped",
                );
            }
            return;
        }
        let from_link = link.and_then(|(l, pos)| {
            ctx.resolve(&l, Rule::F1, pos, "item link", None, Relative::Flagged)
        });
        let loc = from_link.or_else(|| {
            let (g, pos) = guid?;
            let url = ctx.resolve(&g, Rule::F1, pos, "item guid", None, Relative::Flagged)?;
            if not_permalink {
                let message = format!(
                    "item URL {url} taken from a <guid> marked isPermaLink=\"false\": the item has no usable <link>"
                );
                ctx.warn(Rule::F1, pos, message);
            }
            Some(url)
        });
        let Some(loc) = loc else {
            return;
        };
        let mut entry = UrlEntry::new(loc);
        entry.lastmod = match (self.pub_date.take(), self.dc_date.take()) {
            (Some((d, pos)), _) => read_date(ctx, &d, Rule::F1, "pubDate", pos, parse_rfc2822),
            (None, Some((d, pos))) => read_date(ctx, &d, Rule::F1, "dc:date", pos, parse_w3c),
            (None, None) => None,
        };
        ctx.emit_url(entry, self.pos);
    }

    fn finish_atom_entry(&mut self, ctx: &mut Ctx) {
        let Some((rank, rel, href, pos)) = self.atom_link.take() else {
            if !self.url_rejected {
                ctx.warn(Rule::F2, self.pos, "entry without a link skipped");
            }
            return;
        };
        if rank > 0 {
            ctx.warn(
                Rule::F2,
                pos,
                format!(
                    "entry has no rel=\"alternate\" link: its rel={} link is used",
                    quote(&rel)
                ),
            );
        }
        let Some(loc) = ctx.resolve(
            &href,
            Rule::F2,
            pos,
            "entry link",
            self.base.as_ref(),
            Relative::Allowed,
        ) else {
            return;
        };
        let mut entry = UrlEntry::new(loc);
        entry.lastmod = match (self.updated.take(), self.published.take()) {
            (Some((d, pos)), _) | (None, Some((d, pos))) => {
                read_date(ctx, &d, Rule::F2, "entry date", pos, parse_w3c)
            }
            (None, None) => None,
        };
        ctx.emit_url(entry, self.pos);
    }
}
