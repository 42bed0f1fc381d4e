//! XML sitemaps, indexes and feeds, read as a stream of quick-xml events.
//! No DTD is processed and no entity expanded (SPEC C6); a document that is
//! not well-formed yields everything read before the error (SPEC C8).

mod entry;
mod fast;
mod names;
pub(crate) mod ns;
mod values;

use std::borrow::Cow;
use std::io::BufRead;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesRef, BytesStart, Event as XmlEvent};
use quick_xml::reader::Reader;

use crate::ctx::{At, Ctx, Relative, quote};
use crate::diagnostic::Rule;
use crate::input::source::Source;
use crate::url::Base;

use entry::EntryBuilder;
use fast::Lane;
use names::{MAX_BINDINGS, Namespaces};
use ns::{Dialect, Elem, Field, Ns, SITEMAP_NS, VideoField, classify};

/// Longest field text kept, in bytes; a longer value is dropped.
const MAX_FIELD_BYTES: usize = 16 * 1024;
/// Longest direct text of an entry kept (X2 fallback).
const MAX_OWN_TEXT_BYTES: usize = 4 * 1024;
/// Deepest element nesting read.
const MAX_DEPTH: usize = 10_000;
/// The event buffer is shrunk back to this after a large event.
const BUF_KEEP: usize = 64 * 1024;

/// Whether reading goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// More to read.
    More,
    /// The document is finished (end, error or limit).
    Done,
}

/// Reads one XML document.
pub(crate) struct XmlReader {
    reader: Reader<Source>,
    names: Namespaces,
    buf: Vec<u8>,
    dialect: Option<Dialect>,
    /// The root's namespace URI, when it is one sitemapd does not know (X1).
    root_uri: Option<String>,
    stack: Vec<Elem>,
    text: String,
    text_overflow: bool,
    /// The first undefined entity in the URL field being read, and where (C6).
    field_undefined: Option<(String, At)>,
    field_pos: At,
    entry: EntryBuilder,
    in_entry: bool,
    feed_base: Option<Base>,
    root_closed: bool,
    /// Junk markup before the root has been flagged (C5).
    junk_reported: bool,
    complete: bool,
    /// The fast lane for entries of the common shape, unless turned off.
    lane: Option<Lane>,
    /// Whether quick-xml's next read starts with text (the last event was
    /// markup or a reference): the only place the lane may take over.
    at_text: bool,
}

/// The rule for a field value too long to keep.
fn overflow_rule(field: Field) -> Rule {
    match field {
        Field::Loc => Rule::X4,
        Field::Lastmod => Rule::X7,
        Field::ChangeFreq => Rule::X9,
        Field::Priority => Rule::X10,
        Field::ImageLoc => Rule::E1,
        Field::Video(_) => Rule::E2,
        Field::News(_) => Rule::E3,
        Field::Link | Field::Guid | Field::PubDate | Field::DcDate => Rule::F1,
        Field::Updated | Field::Published => Rule::F2,
    }
}

/// What decoding an attribute value found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refs {
    /// Every reference decoded.
    Clean,
    /// An undefined entity (the first one's name), kept as written (C6).
    Undefined(String),
    /// A character reference to a character XML does not allow, or not a number (X5).
    Invalid,
}

/// The character a predefined entity (`amp`, `lt`, `gt`, `quot`, `apos`) names.
fn predefined(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => return None,
    })
}

/// Whether XML 1.0 allows `c` in a document.
fn is_xml_char(c: char) -> bool {
    !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// The character a numeric reference (`#65`, `#x41`) names, if it is a
/// number (no sign) naming a character XML allows.
fn char_ref(name: &str) -> Option<char> {
    let code = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
        hex.bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then(|| u32::from_str_radix(hex, 16).ok())??
    } else {
        let dec = name.strip_prefix('#')?;
        dec.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| dec.parse().ok())??
    };
    char::from_u32(code).filter(|&c| is_xml_char(c))
}

/// An attribute value with its references decoded, and what was found. When
/// quick-xml refuses the value (an undefined entity), it is decoded here
/// with the undefined entity kept as written.
fn attribute_value<'a>(a: &quick_xml::events::attributes::Attribute<'a>) -> (Cow<'a, str>, Refs) {
    if let Ok(v) = a.normalized_value(XmlVersion::Implicit1_0) {
        let refs = if v.chars().all(is_xml_char) {
            Refs::Clean
        } else {
            Refs::Invalid
        };
        return (Cow::Owned(v.into_owned()), refs);
    }
    let raw: &str = &a.value;
    let mut out = String::with_capacity(raw.len());
    let mut refs = Refs::Clean;
    let mut rest = raw;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(end) = after.find(';').filter(|&j| j <= 32) else {
            out.push('&');
            rest = after;
            continue;
        };
        let name = &after[..end];
        match (predefined(name), name.starts_with('#')) {
            (Some(c), _) => out.push(c),
            (None, true) => match char_ref(name) {
                Some(c) => out.push(c),
                None => refs = Refs::Invalid,
            },
            (None, false) => {
                if refs == Refs::Clean {
                    refs = Refs::Undefined(name.to_string());
                }
                out.push('&');
                out.push_str(name);
                out.push(';');
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (Cow::Owned(out), refs)
}

/// The attributes of a start tag as (qualified name, value, what decoding
/// found); malformed attributes are skipped.
fn attributes<'a>(
    e: &'a BytesStart<'a>,
) -> impl Iterator<Item = (&'a str, Cow<'a, str>, Refs)> + 'a {
    e.attributes().flatten().map(|a| {
        let (value, refs) = attribute_value(&a);
        (a.key.0, value, refs)
    })
}

/// Longest entity name quoted in a diagnostic, in characters.
const ENTITY_NAME_CHARS: usize = 64;

/// `&name;` for a diagnostic, shortened.
fn entity(name: &str) -> String {
    match name.char_indices().nth(ENTITY_NAME_CHARS) {
        Some((end, _)) => format!("&{}…;", &name[..end]),
        None => format!("&{name};"),
    }
}

/// Flags an undefined entity kept as written in a value that is not a URL (C6).
fn undefined_entity_kept(ctx: &mut Ctx, name: &str, pos: At) {
    let message = format!(
        "undefined entity {} kept as written (entities are never expanded)",
        entity(name)
    );
    ctx.warn(Rule::C6, pos, message);
}

/// Drops a URL value (`what`: "loc", "item link", "hreflang href" …) that
/// holds the undefined entity `name` at `pos` (C6): entities are never
/// expanded, and kept as written the reference would name a URL that does
/// not exist. The one place where this is decided and worded, for element
/// text and attributes alike.
fn undefined_entity_in_url(ctx: &mut Ctx, what: &str, value: &str, name: &str, pos: At) {
    let message = format!(
        "{what} {} dropped: undefined entity {} (entities are never expanded)",
        quote(value.trim()),
        entity(name)
    );
    ctx.warn(Rule::C6, pos, message);
}

/// One attribute's value. An undefined entity in it is kept and flagged (C6);
/// an invalid character reference makes the whole value unusable (X5).
fn attribute<'a>(
    ctx: &mut Ctx,
    e: &'a BytesStart<'a>,
    name: &str,
    pos: At,
) -> Option<Cow<'a, str>> {
    let (_, value, refs) = attributes(e).find(|(k, ..)| *k == name)?;
    match refs {
        Refs::Clean => Some(value),
        Refs::Undefined(_) => {
            let message = format!(
                "undefined entity in attribute {name}={} kept as written",
                quote(&value)
            );
            ctx.warn(Rule::C6, pos, message);
            Some(value)
        }
        Refs::Invalid => {
            let message =
                format!("invalid character reference in attribute {name}: attribute ignored");
            ctx.warn(Rule::X5, pos, message);
            None
        }
    }
}

/// A URL attribute that held an undefined entity: dropped and flagged (C6).
struct Dropped;

/// One attribute whose value is a URL (`what` names it in diagnostics): like
/// [`attribute`], except that an undefined entity drops the value (C6).
fn url_attribute<'a>(
    ctx: &mut Ctx,
    e: &'a BytesStart<'a>,
    name: &str,
    what: &str,
    pos: At,
) -> Result<Option<Cow<'a, str>>, Dropped> {
    let Some((_, value, refs)) = attributes(e).find(|(k, ..)| *k == name) else {
        return Ok(None);
    };
    match refs {
        Refs::Clean => Ok(Some(value)),
        Refs::Undefined(first) => {
            undefined_entity_in_url(ctx, what, &value, &first, pos);
            Err(Dropped)
        }
        Refs::Invalid => {
            let message =
                format!("invalid character reference in attribute {name}: attribute ignored");
            ctx.warn(Rule::X5, pos, message);
            Ok(None)
        }
    }
}

impl XmlReader {
    /// Reads XML from `src`. Strict mode refuses unescaped `&`; `fast_lane`
    /// reads entries of the common shape without quick-xml.
    pub(crate) fn new(src: Source, strict: bool, fast_lane: bool) -> Self {
        let mut reader = Reader::from_reader(src);
        let config = reader.config_mut();
        config.allow_dangling_amp = !strict;
        config.check_end_names = true;
        Self {
            reader,
            names: Namespaces::default(),
            buf: Vec::with_capacity(4096),
            dialect: None,
            root_uri: None,
            stack: Vec::with_capacity(16),
            text: String::with_capacity(256),
            text_overflow: false,
            field_undefined: None,
            field_pos: 0,
            entry: EntryBuilder::default(),
            in_entry: false,
            feed_base: None,
            root_closed: false,
            junk_reported: false,
            complete: false,
            lane: fast_lane.then(Lane::default),
            at_text: false,
        }
    }

    /// The source, to ask for positions.
    pub(crate) fn source_mut(&mut self) -> &mut Source {
        self.reader.get_mut()
    }

    /// The source, once reading is over.
    pub(crate) fn into_source(self) -> Source {
        self.reader.into_inner()
    }

    /// Whether the document was read to its end, well-formed.
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Reads one XML event and acts on it.
    pub(crate) fn step(&mut self, ctx: &mut Ctx) -> Step {
        if ctx.stopped {
            return Step::Done;
        }
        let start = self.reader.get_ref().offset();
        let src = self.reader.get_mut();
        src.mark();
        // Diagnostics may still be about the open entry, or this event.
        src.set_anchor(if self.in_entry {
            self.entry.start()
        } else {
            start
        });
        if let Some(step) = self.fast_entry(ctx, start) {
            return step;
        }
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() > BUF_KEEP {
            buf = Vec::with_capacity(4096);
        }
        buf.clear();
        let step = match self.reader.read_event_into(&mut buf) {
            Err(e) => {
                self.fail(ctx, &e);
                Step::Done
            }
            Ok(event) => self.handle(ctx, event, start),
        };
        self.buf = buf;
        step
    }

    /// Reads the next entry by the fast lane when it has the lane's shape
    /// (see [`fast`]): built with the same calls and offsets as the event
    /// path would use. `None` leaves the step to quick-xml, nothing consumed.
    fn fast_entry(&mut self, ctx: &mut Ctx, base: At) -> Option<Step> {
        let dialect = self.dialect?;
        let lane = self.lane.as_mut()?;
        let under_root = self.stack.len() == 1 && self.stack[0] == Elem::Root;
        if !self.at_text || self.in_entry || !under_root || !lane.ready() {
            return None;
        }
        let src = self.reader.get_mut();
        if !src.is_plain_utf8() {
            return None;
        }
        // Only the bytes already read ahead: reading more here would change
        // when the source refills, compacts and meets invalid bytes, and with
        // that the positions and the place of C1 that the full path gives.
        let Some((start, end)) = lane.scan(src.buffered(), dialect, &self.names) else {
            lane.miss();
            return None;
        };
        lane.hit();
        ctx.summary.fast_lane_entries += 1;
        let window = src.buffered();
        self.entry.reset(base + start as At);
        for span in &lane.fields {
            self.text.clear();
            // The window is valid UTF-8 and the span ends at ASCII bytes.
            let raw = std::str::from_utf8(&window[span.text.0..span.text.1]).unwrap_or_default();
            if span.refs {
                fast::decode_into(raw, &mut self.text);
            } else {
                self.text.push_str(raw);
            }
            let pos = base + span.tag as At;
            self.entry
                .finish_field(ctx, span.field, &mut self.text, pos);
        }
        self.entry.finish(ctx, dialect);
        src.consume(end);
        Some(Step::More)
    }

    /// Acts on one event; `start` is its byte offset (positions are computed
    /// only where one is needed, since counting lines costs).
    fn handle(&mut self, ctx: &mut Ctx, event: XmlEvent<'_>, start: At) -> Step {
        self.at_text = !matches!(event, XmlEvent::Text(_) | XmlEvent::Eof);
        match event {
            XmlEvent::Start(e) => self.start(ctx, &e, false, start),
            XmlEvent::Empty(e) => self.start(ctx, &e, true, start),
            XmlEvent::End(_) => {
                if let Some(elem) = self.stack.pop() {
                    self.names.end(self.stack.len());
                    self.close(ctx, elem, start);
                }
                Step::More
            }
            XmlEvent::Text(t) if self.root_closed && !t.trim().is_empty() => {
                ctx.warn(
                    Rule::C8,
                    start,
                    "text after the root element ignored (not well-formed)",
                );
                Step::Done
            }
            XmlEvent::Text(t) => {
                if self.capturing() && t.starts_with('&') {
                    ctx.warn(Rule::X5, start, "unescaped '&' kept as is");
                }
                self.append(&t);
                Step::More
            }
            XmlEvent::CData(c) => {
                self.append(&c);
                Step::More
            }
            XmlEvent::GeneralRef(r) => {
                self.general_ref(ctx, &r, start);
                Step::More
            }
            XmlEvent::DocType(d) => {
                if d.contains("<!ENTITY") {
                    ctx.warn(
                        Rule::C6,
                        start,
                        "DTD entity declarations ignored: entities are never expanded",
                    );
                }
                Step::More
            }
            XmlEvent::Eof => {
                self.eof(ctx, start);
                Step::Done
            }
            XmlEvent::Decl(_) | XmlEvent::PI(_) | XmlEvent::Comment(_) => Step::More,
        }
    }

    fn capturing(&self) -> bool {
        matches!(self.stack.last(), Some(Elem::Field(_)))
    }

    fn append(&mut self, s: &str) {
        match self.stack.last() {
            Some(Elem::Field(_)) => {
                if self.text.len() + s.len() > MAX_FIELD_BYTES {
                    self.text_overflow = true;
                } else {
                    self.text.push_str(s);
                }
            }
            Some(Elem::Entry) if self.entry.own_text.len() + s.len() <= MAX_OWN_TEXT_BYTES => {
                self.entry.own_text.push_str(s);
            }
            _ => {}
        }
    }

    fn general_ref(&mut self, ctx: &mut Ctx, r: &BytesRef<'_>, start: At) {
        if !matches!(self.stack.last(), Some(Elem::Field(_) | Elem::Entry)) {
            return;
        }
        let name: &str = r;
        let resolved = match (predefined(name), name.starts_with('#')) {
            (Some(c), _) => Some(c),
            (None, true) => char_ref(name).or_else(|| {
                ctx.warn(
                    Rule::X5,
                    start,
                    format!("invalid character reference &{name};"),
                );
                None
            }),
            (None, false) => {
                // In a URL (a field, or the entry's own text that may stand in
                // for its loc) it is decided when the value is used (C6).
                match self.stack.last() {
                    Some(Elem::Field(f)) if f.is_url() => {
                        self.field_undefined
                            .get_or_insert_with(|| (name.to_string(), start));
                    }
                    Some(Elem::Entry) => self.entry.own_text_entity(name, start),
                    _ => undefined_entity_kept(ctx, name, start),
                }
                self.append("&");
                self.append(name);
                Some(';')
            }
        };
        if let Some(c) = resolved {
            self.append(c.encode_utf8(&mut [0u8; 4]));
        }
    }

    fn start(&mut self, ctx: &mut Ctx, e: &BytesStart<'_>, empty: bool, start: At) -> Step {
        if self.root_closed {
            ctx.warn(
                Rule::C8,
                start,
                "content after the root element ignored (not well-formed)",
            );
            return Step::Done;
        }
        let depth = self.stack.len();
        // Inside an ignored subtree or a field nothing matters: no names to
        // resolve (before the root, junk is skipped but the root is looked for).
        if self.dialect.is_some()
            && matches!(self.stack.last(), Some(Elem::Skip | Elem::Field(_)))
            && depth < MAX_DEPTH
        {
            if !empty {
                self.stack.push(Elem::Skip);
            }
            return Step::More;
        }
        let ignored = self.names.declare(e, depth);
        if ignored > 0 {
            ctx.warn(
                Rule::X12,
                start,
                format!(
                    "{ignored} namespace declarations over the limit of {MAX_BINDINGS} ignored"
                ),
            );
        }
        let qname = e.name();
        let (ns, local, uri) = self.names.resolve(qname.as_ref());
        let Some(dialect) = self.dialect else {
            let uri = uri.map(str::to_string);
            let step = self.root(ctx, ns, uri, local, e, empty, start);
            if empty {
                self.names.end(depth);
            }
            return step;
        };
        if self.stack.len() >= MAX_DEPTH {
            ctx.error(
                Rule::C8,
                start,
                format!("elements nested deeper than {MAX_DEPTH}: reading stopped"),
            );
            self.salvage(ctx);
            return Step::Done;
        }
        // A root in an unknown namespace (lenient X1): its children share that URI.
        let ns = if ns == Ns::Other && uri.is_some() && uri == self.root_uri.as_deref() {
            Ns::SitemapVariant
        } else {
            ns
        };
        let parent = self.stack.last().copied().unwrap_or(Elem::Skip);
        let elem = classify(dialect, parent, ns, local);
        match elem {
            Elem::Entry => {
                self.entry.reset(start);
                self.in_entry = true;
                let expected = match dialect {
                    Dialect::Urlset => Some("url"),
                    Dialect::Index => Some("sitemap"),
                    _ => None,
                };
                if expected.is_some_and(|x| x != local) {
                    ctx.warn(
                        Rule::X1,
                        start,
                        format!(
                            "<{local}> inside <{}> read as a <{}>",
                            dialect.format(),
                            expected.unwrap_or_default()
                        ),
                    );
                }
                if dialect == Dialect::Atom {
                    self.entry.base = self.xml_base(ctx, e, start, self.feed_base.clone());
                }
            }
            Elem::Field(field) => {
                self.text.clear();
                self.text_overflow = false;
                self.field_undefined = None;
                self.field_pos = start;
                if let Field::Video(
                    vf @ (VideoField::Restriction | VideoField::Platform | VideoField::Uploader),
                ) = field
                {
                    if let Some(value) = attribute(ctx, e, "relationship", start) {
                        self.entry
                            .video_attribute(ctx, vf, "relationship", &value, start);
                    }
                    if vf == VideoField::Uploader
                        && let Ok(Some(value)) =
                            url_attribute(ctx, e, "info", "video uploader info", start)
                    {
                        self.entry.video_attribute(ctx, vf, "info", &value, start);
                    }
                }
                if field == Field::Guid {
                    let permalink = attribute(ctx, e, "isPermaLink", start);
                    self.entry
                        .guid_is_permalink(permalink.is_none_or(|v| v.trim() != "false"));
                }
            }
            Elem::Video => self.entry.start_video(ctx, start),
            Elem::News => self.entry.start_news(),
            Elem::Skip if parent == Elem::Entry => {
                self.entry_link(ctx, dialect, ns, local, e, start)
            }
            _ => {}
        }
        if empty {
            self.names.end(depth);
            self.close(ctx, elem, start);
        } else {
            self.stack.push(elem);
        }
        Step::More
    }

    /// `<xhtml:link>` (E4) and Atom `<link>` (F2), read from attributes.
    fn entry_link(
        &mut self,
        ctx: &mut Ctx,
        dialect: Dialect,
        ns: Ns,
        local: &str,
        e: &BytesStart<'_>,
        pos: At,
    ) {
        if local != "link" {
            return;
        }
        let hreflang = ns == Ns::Xhtml && matches!(dialect, Dialect::Urlset | Dialect::Index);
        let atom = dialect == Dialect::Atom && matches!(ns, Ns::Atom | Ns::None);
        if !hreflang && !atom {
            return;
        }
        let rel = attribute(ctx, e, "rel", pos);
        let what = if atom { "entry link" } else { "hreflang href" };
        let Ok(href) = url_attribute(ctx, e, "href", what, pos) else {
            // Dropped and flagged: the link is not there.
            if atom {
                self.entry.reject_url();
            }
            return;
        };
        if hreflang {
            let lang = attribute(ctx, e, "hreflang", pos);
            self.entry
                .alternate(ctx, rel.as_deref(), lang.as_deref(), href.as_deref(), pos);
        } else if atom {
            self.entry.atom_link(rel.as_deref(), href.as_deref(), pos);
        }
    }

    /// The `xml:base` of an Atom element, resolved against `parent` (or the document URL).
    fn xml_base(
        &self,
        ctx: &mut Ctx,
        e: &BytesStart<'_>,
        pos: At,
        parent: Option<Base>,
    ) -> Option<Base> {
        let Ok(Some(value)) = url_attribute(ctx, e, "xml:base", "xml:base", pos) else {
            return parent;
        };
        let resolved = ctx.resolve(
            &value,
            Rule::F2,
            pos,
            "xml:base",
            parent.as_ref(),
            Relative::Allowed,
        );
        resolved.map(|u| Base::new(&u)).or(parent)
    }

    #[allow(clippy::too_many_arguments)]
    fn root(
        &mut self,
        ctx: &mut Ctx,
        ns: Ns,
        uri: Option<String>,
        local: &str,
        e: &BytesStart<'_>,
        empty: bool,
        pos: At,
    ) -> Step {
        let Some(dialect) = Dialect::of_root(ns, local) else {
            let name = e.name();
            let name: &str = name.as_ref();
            let not_a_sitemap = ["html", "stylesheet", "transform"]
                .iter()
                .any(|n| local.eq_ignore_ascii_case(n));
            if not_a_sitemap || self.stack.len() >= MAX_DEPTH {
                ctx.error(
                    Rule::C7,
                    pos,
                    format!("root element <{name}> is not a sitemap, sitemap index or feed"),
                );
                return Step::Done;
            }
            // Markup before the root (a PHP notice, a stray tag) is junk (C5).
            if !self.junk_reported {
                self.junk_reported = true;
                ctx.warn(
                    Rule::C5,
                    pos,
                    format!("markup before the root element skipped: <{name}>"),
                );
            }
            if !empty {
                self.stack.push(Elem::Skip);
            }
            return Step::More;
        };
        // The root may sit inside unclosed junk: it starts the document proper,
        // at depth 0, with the namespaces declared on it and around it.
        self.names.rebase(self.stack.len());
        self.stack.clear();
        if matches!(dialect, Dialect::Urlset | Dialect::Index) && ns != Ns::Sitemap {
            let what = match (ns, &uri) {
                (Ns::None, _) => "no namespace".to_string(),
                (_, Some(u)) => format!("namespace {}", quote(u)),
                (_, None) => "an undeclared namespace prefix".to_string(),
            };
            if ctx.opts.is_strict() {
                ctx.error(
                    Rule::X1,
                    pos,
                    format!("<{local}> has {what}, not {SITEMAP_NS}: rejected (strict)"),
                );
                ctx.summary.format = Some(dialect.format());
                ctx.summary.rejected = true;
                return Step::Done;
            }
            ctx.warn(
                Rule::X1,
                pos,
                format!("<{local}> has {what}, not {SITEMAP_NS}: read anyway"),
            );
        }
        self.dialect = Some(dialect);
        self.root_uri = uri.filter(|_| ns == Ns::Other);
        ctx.summary.format = Some(dialect.format());
        if dialect == Dialect::Atom {
            self.feed_base = self.xml_base(ctx, e, pos, None);
        }
        if empty {
            self.root_closed = true;
        } else {
            self.stack.push(Elem::Root);
        }
        Step::More
    }

    fn close(&mut self, ctx: &mut Ctx, elem: Elem, start: At) {
        match elem {
            Elem::Field(field) if self.in_entry => {
                if self.text_overflow {
                    let rule = overflow_rule(field);
                    let message = format!("value longer than {MAX_FIELD_BYTES} bytes dropped");
                    ctx.warn(rule, self.field_pos, message);
                    if field == Field::Loc {
                        self.entry.reject_loc();
                    }
                } else if let Some((name, at)) = self.field_undefined.take() {
                    self.entry.reject_url_field(
                        ctx,
                        field,
                        &mut self.text,
                        self.field_pos,
                        &name,
                        at,
                    );
                } else {
                    self.entry
                        .finish_field(ctx, field, &mut self.text, self.field_pos);
                }
            }
            Elem::Entry => {
                self.in_entry = false;
                if let Some(d) = self.dialect {
                    self.entry.finish(ctx, d);
                }
            }
            Elem::Video => {
                self.entry.finish_video(ctx, start);
            }
            Elem::Root => self.root_closed = true,
            _ => {}
        }
    }

    /// An entry still open when reading stops is yielded if its loc was complete (C8).
    fn salvage(&mut self, ctx: &mut Ctx) {
        if self.in_entry
            && self.entry.salvageable()
            && let Some(d) = self.dialect
        {
            self.entry.finish(ctx, d);
        }
        self.in_entry = false;
    }

    fn eof(&mut self, ctx: &mut Ctx, pos: At) {
        if self.dialect.is_none() {
            ctx.error(
                Rule::C7,
                pos,
                "no root element: not a sitemap, sitemap index or feed",
            );
        } else if !self.stack.is_empty() {
            ctx.error(
                Rule::C8,
                pos,
                "document ends before its root element is closed (truncated?)",
            );
            self.salvage(ctx);
        } else {
            self.complete = true;
        }
    }

    fn fail(&mut self, ctx: &mut Ctx, err: &quick_xml::Error) {
        let pos = self.reader.get_ref().offset();
        let (rule, message) = match err {
            quick_xml::Error::Io(io) => crate::input::describe_io_error(io),
            other => (
                Rule::C8,
                format!("not well-formed XML: {other}; reading stopped"),
            ),
        };
        ctx.error(rule, pos, message);
        self.salvage(ctx);
    }
}
