//! What every format reader shares: the options, the output queue, the
//! summary, and the rules that apply to every entry whatever its format
//! (URL resolution X3/X4/X6, the scope rule L6/I4, the entry limit C4).

use std::collections::VecDeque;

use crate::diagnostic::{Diagnostic, Position, Rule};
use crate::event::{Event, SitemapRef, UrlEntry};
use crate::options::{MAX_LOC_CHARS, ParseOptions};
use crate::scope::Scope;
use crate::summary::Summary;
use crate::url::{Base, NormUrl, UrlError, already_normal, has_scheme, is_reference_byte};

/// Where something is: a byte offset in the decoded document. It becomes a
/// line and column only when its diagnostic is handed out, because counting
/// lines for every element costs more than all diagnostics together.
pub(crate) type At = u64;

/// An offset for diagnostics about the document as a whole (shown as 0:0).
pub(crate) const NOWHERE: At = u64::MAX;

/// Whether the format allows a reference to be relative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relative {
    /// The protocol wants absolute URLs: a relative one is resolved and
    /// flagged (lenient) or dropped (strict).
    Flagged,
    /// The format allows relative references (Atom links, `xml:base`):
    /// resolved silently, in strict mode too.
    Allowed,
}

/// Longest value quoted in a diagnostic message.
const QUOTE_CHARS: usize = 120;

/// `value` for a one-line message: Debug-quoted, shortened.
pub(crate) fn quote(value: &str) -> String {
    let mut end = value.len();
    if let Some((i, _)) = value.char_indices().nth(QUOTE_CHARS) {
        end = i;
    }
    let mut q = format!("{:?}", &value[..end]);
    if end < value.len() {
        q.push('…');
    }
    q
}

/// The state every format reader writes to.
pub(crate) struct Ctx {
    /// The caller's options.
    pub opts: ParseOptions,
    /// The document URL, parsed once for resolving relative references.
    pub base: Option<Base>,
    /// The document's scope, prepared once (L1-L8).
    scope: Option<Scope>,
    /// Events produced and not yet handed out, each with where it was found
    /// (used to place diagnostics).
    pub queue: VecDeque<(Event, At)>,
    /// Running totals.
    pub summary: Summary,
    /// Set when the entry limit stopped the document.
    pub stopped: bool,
}

impl Ctx {
    /// A context for one document.
    pub(crate) fn new(opts: ParseOptions) -> Self {
        let base = opts.document_url.as_ref().map(Base::new);
        let scope = opts
            .document_url
            .clone()
            .map(|doc| Scope::new(doc, opts.authorized_origins.clone(), opts.scope));
        Self {
            opts,
            base,
            scope,
            queue: VecDeque::new(),
            summary: Summary::default(),
            stopped: false,
        }
    }

    /// Records and queues a diagnostic found at `at`.
    fn diag(&mut self, d: Diagnostic, at: At) {
        *self.summary.diagnostics.entry(d.rule).or_default() += 1;
        self.queue.push_back((Event::Diagnostic(d), at));
    }

    /// Queues a warning.
    pub(crate) fn warn(&mut self, rule: Rule, at: At, message: impl Into<String>) {
        self.diag(Diagnostic::warning(rule, Position::default(), message), at);
    }

    /// Queues an error.
    pub(crate) fn error(&mut self, rule: Rule, at: At, message: impl Into<String>) {
        self.diag(Diagnostic::error(rule, Position::default(), message), at);
    }

    /// Turns a reference as written (a loc, a text line, an href) into a
    /// normalised URL, or drops it with a diagnostic under `rule`. A relative
    /// reference is resolved against `base` (or the document URL) as `relative` says.
    pub(crate) fn resolve(
        &mut self,
        raw: &str,
        rule: Rule,
        pos: At,
        what: &str,
        base: Option<&Base>,
        relative: Relative,
    ) -> Option<NormUrl> {
        // The common case: an already normal absolute URL with nothing
        // around it, short enough; every check below would pass it as is.
        let b = raw.as_bytes();
        let bare = |c: Option<&u8>| c.is_some_and(|&c| c > b' ' && c.is_ascii());
        if b.len() <= MAX_LOC_CHARS
            && bare(b.first())
            && bare(b.last())
            && let Some(url) = already_normal(raw)
        {
            return Some(url);
        }
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            // Resolved, these would name the document itself.
            self.warn(
                rule,
                pos,
                format!("empty {what} {} dropped", quote(trimmed)),
            );
            return None;
        }
        if trimmed.len() > MAX_LOC_CHARS && trimmed.chars().count() > MAX_LOC_CHARS {
            self.warn(
                Rule::X4,
                pos,
                format!(
                    "{what} longer than {MAX_LOC_CHARS} characters dropped: {}",
                    quote(trimmed)
                ),
            );
            return None;
        }
        let result = if has_scheme(trimmed) {
            NormUrl::parse(trimmed)
        } else if self.opts.is_strict() && relative == Relative::Flagged {
            Err(UrlError::Relative)
        } else if !trimmed.bytes().all(is_reference_byte) {
            self.warn(
                rule,
                pos,
                format!("{what} {} dropped: not a URL", quote(trimmed)),
            );
            return None;
        } else {
            let joined = base.or(self.base.as_ref()).map(|b| b.join(trimmed));
            match joined {
                Some(Ok(url)) => {
                    if relative == Relative::Flagged {
                        self.warn(
                            rule,
                            pos,
                            format!("relative {what} {} resolved to {url}", quote(trimmed)),
                        );
                    }
                    Ok(url)
                }
                Some(Err(e)) => Err(e),
                None => {
                    self.warn(
                        rule,
                        pos,
                        format!(
                            "relative {what} {} dropped: no document URL to resolve it against",
                            quote(trimmed)
                        ),
                    );
                    return None;
                }
            }
        };
        match result {
            Ok(url) if url.as_str().len() > MAX_LOC_CHARS => {
                let message = format!(
                    "{what} longer than {MAX_LOC_CHARS} characters once normalised dropped: {url}"
                );
                self.warn(Rule::X4, pos, message);
                None
            }
            Ok(url) => {
                if !trimmed.is_ascii() {
                    self.warn(
                        Rule::X6,
                        pos,
                        format!("non-ASCII characters in {what} percent-encoded: {url}"),
                    );
                }
                Some(url)
            }
            Err(e) => {
                self.warn(rule, pos, format!("{what} {} dropped: {e}", quote(trimmed)));
                None
            }
        }
    }

    /// Applies the scope rule (L6 for URLs, I4 for index children); false drops the URL.
    fn in_scope(&mut self, url: &NormUrl, rule: Rule, pos: At) -> bool {
        let Some(scope) = &self.scope else {
            return true;
        };
        match scope.check(url) {
            Ok(()) => true,
            Err(reason) => {
                *self.summary.out_of_scope.entry(reason).or_default() += 1;
                let doc = scope.sitemap();
                let msg = format!("{url} dropped: out of the scope of {doc} (other {reason})");
                self.warn(rule, pos, msg);
                false
            }
        }
    }

    /// Counts an entry against the limit (C4); false once the limit is reached.
    fn admit(&mut self, pos: At) -> bool {
        if self.stopped {
            return false;
        }
        let max = self.opts.max_entries;
        if self.summary.entries() < max {
            return true;
        }
        self.stopped = true;
        if self.opts.is_strict() {
            self.summary.rejected = true;
            self.error(
                Rule::C4,
                pos,
                format!("more than {max} entries: document rejected (strict)"),
            );
        } else {
            self.warn(
                Rule::C4,
                pos,
                format!("entry limit of {max} reached: the rest of the document is ignored"),
            );
        }
        false
    }

    /// Yields a URL entry if it is in scope and within the limit.
    pub(crate) fn emit_url(&mut self, entry: UrlEntry, pos: At) {
        if self.in_scope(&entry.loc, Rule::L6, pos) && self.admit(pos) {
            self.summary.urls += 1;
            self.queue.push_back((Event::Url(entry), pos));
        }
    }

    /// Yields a child-sitemap reference if it is in scope and within the limit.
    pub(crate) fn emit_sitemap(&mut self, sitemap: SitemapRef, pos: At) {
        if self.in_scope(&sitemap.loc, Rule::I4, pos) && self.admit(pos) {
            self.summary.sitemaps += 1;
            self.queue.push_back((Event::Sitemap(sitemap), pos));
        }
    }
}
