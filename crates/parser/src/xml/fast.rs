//! The fast lane: the shape nearly every sitemap entry has, read straight
//! from the bytes.
//!
//! A `<url>` (or an index's `<sitemap>`) whose children are plain elements
//! holding text (`<loc>`, `<lastmod>`, `<changefreq>`, `<priority>`,
//! `<image:image>` with its `<image:loc>`, and unknown leaf elements that
//! are skipped anyway) is found with a few `memchr` calls, without building
//! quick-xml events. The scan only looks: it finds where each field's text
//! is, and the entry is then built by the same [`EntryBuilder`] calls the
//! event path makes, with the same offsets, so values and diagnostics are
//! the same by construction.
//!
//! Anything else (an attribute, a comment, CDATA, a processing instruction,
//! an entity other than the five predefined ones and valid character
//! references, nested markup in a field, a prefix bound to an unknown
//! namespace, an entry that does not end within the bytes the source has
//! read ahead, text that is not whitespace between elements) is a miss: the
//! lane consumes nothing and quick-xml reads from the entry's first byte,
//! exactly as if the lane did not exist. The lane never reads input itself,
//! so the source refills, compacts and meets invalid bytes where it would
//! without the lane. A document whose entries keep missing makes the lane
//! rest (for longer at every rest), so the misses cost little.
//!
//! [`EntryBuilder`]: super::entry::EntryBuilder

use super::names::Namespaces;
use super::ns::{Dialect, Elem, Field, Ns, classify};
use super::{MAX_FIELD_BYTES, char_ref, predefined};

/// Most fields one entry may have to be read by the lane.
const MAX_FIELDS: usize = 64;
/// Longest reference name looked at (`&#x10FFFF;` and the predefined ones fit).
const MAX_REF_NAME: usize = 10;
/// Misses in a row after which the lane rests.
const MISSES_BEFORE_REST: u32 = 4;
/// Steps of the first rest; each rest doubles the next, up to [`MAX_REST`].
const FIRST_REST: u32 = 16;
/// Longest rest, in steps.
const MAX_REST: u32 = 1 << 16;

/// One field of a scanned entry, as offsets into the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    /// Which field.
    pub field: Field,
    /// Where its start tag's `<` is.
    pub tag: usize,
    /// Its text: start and end.
    pub text: (usize, usize),
    /// Whether the text holds references to decode.
    pub refs: bool,
}

/// The lane's state for one document.
pub(super) struct Lane {
    /// The fields of the last entry scanned, in document order.
    pub fields: Vec<Span>,
    misses: u32,
    rest: u32,
    next_rest: u32,
}

impl Default for Lane {
    fn default() -> Self {
        Self {
            fields: Vec::with_capacity(8),
            misses: 0,
            rest: 0,
            next_rest: FIRST_REST,
        }
    }
}

/// Whether `b` is XML whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether `b` may be in an element name the lane reads.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
}

/// What a scan step found; `None`: not the lane's shape, or not all of it
/// in the window (the same to the lane: the entry goes the full way).
type Scanned<T> = Option<T>;

/// The bytes of a window, read from a position.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) -> Scanned<()> {
        while let Some(&c) = self.b.get(self.i) {
            if !is_space(c) {
                return Some(());
            }
            self.i += 1;
        }
        None
    }

    /// Skips whitespace to the next tag: where its `<` is, and whether it is
    /// an end tag.
    fn next_tag(&mut self) -> Scanned<(usize, bool)> {
        self.skip_space()?;
        let tag = self.i;
        if self.b[tag] != b'<' {
            return None;
        }
        let end = self.b.get(tag + 1)? == &b'/';
        Some((tag, end))
    }

    /// Eats `s` exactly.
    fn eat(&mut self, s: &[u8]) -> Scanned<()> {
        let rest = self.b.get(self.i..self.i + s.len())?;
        if !same(rest, s) {
            return None;
        }
        self.i += s.len();
        Some(())
    }

    /// A start tag without attributes, from its `<`: its name.
    fn start_tag(&mut self) -> Scanned<&'a str> {
        let from = self.i + 1;
        let b: &'a [u8] = self.b;
        let rest = b.get(from..)?;
        let len = rest.iter().position(|&c| !is_name_byte(c))?;
        let first = rest[0];
        if rest[len] != b'>' || !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        self.i = from + len + 1;
        // Name bytes are ASCII.
        std::str::from_utf8(&rest[..len]).ok()
    }

    /// The text of a leaf element up to its end tag `</name>`, eaten; the
    /// text's span and whether it holds references.
    fn leaf_text(&mut self, name: &str) -> Scanned<((usize, usize), bool)> {
        let start = self.i;
        let mut at = start;
        let mut refs = false;
        let end = loop {
            let rest = self.b.get(at..)?;
            let k = memchr::memchr2(b'<', b'&', rest)?;
            if rest[k] == b'<' {
                break at + k;
            }
            refs = true;
            at += k + 1 + reference(&rest[k + 1..])?;
        };
        if end - start > MAX_FIELD_BYTES {
            return None;
        }
        self.i = end;
        self.end_tag(name)?;
        Some(((start, end), refs))
    }

    /// Eats the end tag `</name>`.
    fn end_tag(&mut self, name: &str) -> Scanned<()> {
        let name = name.as_bytes();
        let rest = &self.b[self.i..];
        let whole = rest.len() >= name.len() + 3
            && rest[0] == b'<'
            && rest[1] == b'/'
            && same(&rest[2..2 + name.len()], name)
            && rest[2 + name.len()] == b'>';
        if !whole {
            return None;
        }
        self.i += name.len() + 3;
        Some(())
    }
}

/// Byte-wise equality of two short slices, without a call to `memcmp`.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The length, `;` included, of the reference whose name starts `text`
/// (after its `&`), if the lane decodes it: a predefined entity or a
/// character reference to a character XML allows.
fn reference(text: &[u8]) -> Scanned<usize> {
    let end = text.len().min(MAX_REF_NAME + 1);
    let semi = memchr::memchr(b';', &text[..end])?;
    let name = std::str::from_utf8(&text[..semi]).ok()?;
    if predefined(name).is_none() && !(name.starts_with('#') && char_ref(name).is_some()) {
        return None;
    }
    Some(semi + 1)
}

/// Appends `text` to `out` with its references decoded (the scan checked them).
pub(super) fn decode_into(text: &str, out: &mut String) {
    let mut rest = text;
    while let Some(amp) = memchr::memchr(b'&', rest.as_bytes()) {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let semi = memchr::memchr(b';', after.as_bytes()).unwrap_or(after.len());
        let name = &after[..semi];
        if let Some(c) = predefined(name).or_else(|| char_ref(name)) {
            out.push(c);
        }
        rest = after.get(semi + 1..).unwrap_or("");
    }
    out.push_str(rest);
}

/// The sitemap field whose start tag `rest` (after the `<`) begins with,
/// its name and the tag's length: the common case, decided without
/// resolving names (unprefixed, in the default namespace, which the scan
/// checked is the sitemap namespace or none).
fn known_field(rest: &[u8]) -> Option<(Field, &'static str, usize)> {
    Some(match rest.first()? {
        b'l' if rest.first_chunk() == Some(b"loc>") => (Field::Loc, "loc", 4),
        b'l' if rest.first_chunk() == Some(b"lastmod>") => (Field::Lastmod, "lastmod", 8),
        b'c' if rest.first_chunk() == Some(b"changefreq>") => (Field::ChangeFreq, "changefreq", 11),
        b'p' if rest.first_chunk() == Some(b"priority>") => (Field::Priority, "priority", 9),
        _ => return None,
    })
}

impl Lane {
    /// Whether the lane is to be tried at this step (false while it rests).
    pub(super) fn ready(&mut self) -> bool {
        if self.rest == 0 {
            return true;
        }
        self.rest -= 1;
        false
    }

    /// The lane read an entry.
    pub(super) fn hit(&mut self) {
        self.misses = 0;
        self.next_rest = FIRST_REST;
    }

    /// The lane could not read what comes next.
    pub(super) fn miss(&mut self) {
        self.misses += 1;
        if self.misses >= MISSES_BEFORE_REST {
            self.misses = 0;
            self.rest = self.next_rest;
            self.next_rest = (self.next_rest * 2).min(MAX_REST);
        }
    }

    /// Scans the window `b` (the bytes after the last event) for one whole
    /// entry of the lane's shape, directly under the root of a `dialect`
    /// document, with the namespaces of `names` in scope.
    /// Returns the entry's start tag's `<` and the end of its end tag; its
    /// fields are then in [`Lane::fields`].
    pub(super) fn scan(
        &mut self,
        b: &[u8],
        dialect: Dialect,
        names: &Namespaces,
    ) -> Option<(usize, usize)> {
        self.fields.clear();
        self.entry(b, dialect, names)
    }

    fn entry(&mut self, b: &[u8], dialect: Dialect, names: &Namespaces) -> Scanned<(usize, usize)> {
        let (open, close): (&[u8], &[u8]) = match dialect {
            Dialect::Urlset => (b"<url>", b"</url>"),
            Dialect::Index => (b"<sitemap>", b"</sitemap>"),
            _ => return None,
        };
        // Unprefixed names are in the default namespace, the root's.
        let (default_ns, ..) = names.resolve("");
        if !default_ns.is_sitemap() {
            return None;
        }
        let mut c = Cursor { b, i: 0 };
        c.skip_space()?;
        let start = c.i;
        c.eat(open)?;
        let mut has_loc = false;
        loop {
            let (tag, end) = c.next_tag()?;
            if end {
                c.eat(close)?;
                // An entry without a loc has its own rules (X2): the full path.
                return has_loc.then_some((start, c.i));
            }
            if let Some((field, name, len)) = known_field(&c.b[tag + 1..]) {
                c.i = tag + 1 + len;
                has_loc |= field == Field::Loc;
                self.field(&mut c, field, tag, name)?;
                continue;
            }
            let name = c.start_tag()?;
            match element(dialect, Elem::Entry, name, names)? {
                (Elem::Field(field), _) => {
                    has_loc |= field == Field::Loc;
                    self.field(&mut c, field, tag, name)?;
                }
                (Elem::Image, _) => self.image(&mut c, dialect, name, names)?,
                // An unknown element's subtree is skipped; a `link` may be an
                // hreflang alternate, read from attributes by the full path.
                (Elem::Skip, local) if local != "link" => skipped_leaf(&mut c, name)?,
                _ => return None,
            }
        }
    }

    fn field(&mut self, c: &mut Cursor<'_>, field: Field, tag: usize, name: &str) -> Scanned<()> {
        if self.fields.len() == MAX_FIELDS {
            return None;
        }
        let (text, refs) = c.leaf_text(name)?;
        self.fields.push(Span {
            field,
            tag,
            text,
            refs,
        });
        Some(())
    }

    /// `<image:image>`'s children up to its end tag (its start tag eaten).
    fn image(
        &mut self,
        c: &mut Cursor<'_>,
        dialect: Dialect,
        image: &str,
        names: &Namespaces,
    ) -> Scanned<()> {
        loop {
            let (tag, end) = c.next_tag()?;
            if end {
                return c.end_tag(image);
            }
            let name = c.start_tag()?;
            match element(dialect, Elem::Image, name, names)?.0 {
                Elem::Field(field) => self.field(c, field, tag, name)?,
                Elem::Skip => skipped_leaf(c, name)?,
                _ => return None,
            }
        }
    }
}

/// What the element `name` is under `parent`, as the full path classifies
/// it, and its local name. A prefix bound to a namespace sitemapd does not
/// know is a miss: the full path may read it as the root's own namespace.
fn element<'n>(
    dialect: Dialect,
    parent: Elem,
    name: &'n str,
    names: &Namespaces,
) -> Scanned<(Elem, &'n str)> {
    let (ns, local, _) = names.resolve(name);
    if ns == Ns::Other || local.contains(':') || local.is_empty() {
        return None;
    }
    Some((classify(dialect, parent, ns, local), local))
}

/// A skipped element holding only text (no reference, no markup).
fn skipped_leaf(c: &mut Cursor<'_>, name: &str) -> Scanned<()> {
    let (_, refs) = c.leaf_text(name)?;
    if refs {
        return None;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(xml: &str) -> (Option<(usize, usize)>, Vec<Span>) {
        let mut lane = Lane::default();
        let names = Namespaces::default();
        let scan = lane.scan(xml.as_bytes(), Dialect::Urlset, &names);
        (scan, lane.fields)
    }

    #[test]
    fn reads_the_common_shape() {
        let xml = "\n  <url><loc>https://a/x?b=1&amp;c=2</loc>\n<lastmod>2024-01-01</lastmod><priority>0.5</priority></url>\n<url>";
        let (found, fields) = scan(xml);
        let end = xml.find("\n<url>").unwrap();
        assert_eq!(found, Some((3, end)));
        let fields: Vec<_> = fields
            .iter()
            .map(|s| (s.field, &xml[s.text.0..s.text.1], s.refs))
            .collect();
        assert_eq!(
            fields,
            [
                (Field::Loc, "https://a/x?b=1&amp;c=2", true),
                (Field::Lastmod, "2024-01-01", false),
                (Field::Priority, "0.5", false),
            ]
        );
    }

    #[test]
    fn leaves_what_is_not_its_shape() {
        for xml in [
            "<url a=\"1\"><loc>x</loc></url>",
            "<url><loc a=\"1\">x</loc></url>",
            "<url><!-- c --><loc>x</loc></url>",
            "<url><loc><![CDATA[x]]></loc></url>",
            "<url><loc>x&bogus;</loc></url>",
            "<url><loc>x&#0;</loc></url>",
            "<url><loc>x & y</loc></url>",
            "<url><loc>x<b/></loc></url>",
            "<url><loc>x</lastmod></url>",
            "<url>text<loc>x</loc></url>",
            "<url><lastmod>2024</lastmod></url>",
            "<url><loc/></url>",
            "<url><xhtml:link/><loc>x</loc></url>",
            "<url><link>x</link><loc>x</loc></url>",
            "<url><p:loc>x</p:loc></url>",
            "<sitemap><loc>x</loc></sitemap>",
            "</urlset>",
        ] {
            assert_eq!(scan(xml).0, None, "{xml}");
        }
    }

    #[test]
    fn leaves_an_entry_the_window_ends_inside() {
        let xml = "<url><loc>https://a/</loc><lastmod>2024-01-01</lastmod></url>";
        for cut in 0..xml.len() {
            assert_eq!(scan(&xml[..cut]).0, None, "{}", &xml[..cut]);
        }
        assert!(scan(xml).0.is_some());
    }

    #[test]
    fn decodes_the_references_it_accepted() {
        let mut out = String::new();
        decode_into("a&amp;b&#x41;&#66;&lt;&quot;", &mut out);
        assert_eq!(out, "a&bAB<\"");
    }

    #[test]
    fn a_lane_that_keeps_missing_rests_longer_each_time() {
        let mut lane = Lane::default();
        let mut rests = Vec::new();
        for _ in 0..3 {
            for _ in 0..MISSES_BEFORE_REST {
                assert!(lane.ready());
                lane.miss();
            }
            let mut skipped = 0;
            while !lane.ready() {
                skipped += 1;
            }
            rests.push(skipped);
        }
        assert_eq!(rests, [FIRST_REST, FIRST_REST * 2, FIRST_REST * 4]);
        lane.hit();
        assert_eq!(lane.next_rest, FIRST_REST);
    }
}
