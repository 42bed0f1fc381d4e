//! Diagnostics as data: every dropped or repaired value is reported with the
//! id of the docs/SPEC.md rule it concerns, a severity and a position.

use std::fmt;

use serde::Serialize;

macro_rules! rules {
    ($( $(#[$doc:meta])* $id:ident ),+ $(,)?) => {
        /// A rule of the sitemapd protocol specification (docs/SPEC.md); every
        /// diagnostic names one so that a user can look it up.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Rule {
            $( $(#[$doc])* $id, )+
        }

        impl Rule {
            /// Every rule, in docs/SPEC.md order.
            pub const ALL: &'static [Rule] = &[$(Rule::$id),+];

            /// The rule id as written in docs/SPEC.md (`"X7"`).
            pub const fn id(self) -> &'static str {
                match self { $(Rule::$id => stringify!($id),)+ }
            }
        }
    };
}

rules! {
    /// `Sitemap:` records anywhere in robots.txt.
    R1,
    /// Several `Sitemap:` lines, de-duplicated.
    R2,
    /// `Sitemap:` values should be absolute URLs.
    R3,
    /// Only the first 500 KiB of robots.txt are parsed.
    R4,
    /// Cross-submission through robots.txt.
    R5,
    /// Probing well-known sitemap paths.
    R6,
    /// robots.txt fetch outcomes.
    R7,
    /// Character encoding (UTF-8, BOM, UTF-16, declared legacy encodings).
    C1,
    /// gzip detected by magic bytes.
    C2,
    /// Byte limit per document, counted after decompression.
    C3,
    /// Entry limit per document.
    C4,
    /// Junk before the root element.
    C5,
    /// No DTD processing, no entity expansion.
    C6,
    /// The format is decided from the content.
    C7,
    /// Partial parse of a document that is not well-formed.
    C8,
    /// Root element and namespace.
    X1,
    /// One `<loc>` per entry.
    X2,
    /// `<loc>` is an absolute http(s) URL.
    X3,
    /// `<loc>` longer than 2,048 characters.
    X4,
    /// Entities, character references and CDATA.
    X5,
    /// Non-ASCII characters in loc.
    X6,
    /// lastmod in W3C Datetime.
    X7,
    /// lastmod in the future.
    X8,
    /// changefreq values.
    X9,
    /// priority values.
    X10,
    /// priority 0.0 stays schedulable.
    X11,
    /// Unknown namespaces are ignored.
    X12,
    /// Child order inside an entry is free.
    X13,
    /// Index children are references.
    I1,
    /// Index lastmod versus our last fetch.
    I3,
    /// Index children obey the scope rule.
    I4,
    /// Index children may be any format.
    I5,
    /// Nested index depth and cycles.
    I6,
    /// The scope rule.
    L1,
    /// Scheme must match.
    L2,
    /// Port must match.
    L3,
    /// A subdomain is another host.
    L4,
    /// A `/` in the sitemap's query does not count.
    L5,
    /// Out-of-scope URLs are dropped.
    L6,
    /// Cross-submission extends the scope.
    L7,
    /// URL normalisation.
    L8,
    /// Text sitemaps.
    T1,
    /// RSS feeds.
    F1,
    /// Atom feeds.
    F2,
    /// Feed dates are optional.
    F3,
    /// Image extension.
    E1,
    /// Video extension.
    E2,
    /// News extension.
    E3,
    /// hreflang alternates.
    E4,
    /// Unknown extension elements.
    E5,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A value was repaired or dropped; the rest of the document is fine.
    Warning,
    /// The document (or the rest of it) could not be read.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// Line and column (1-based, column counted in bytes of the UTF-8 text)
/// where a diagnostic was found. `line == 0` means "unknown".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Position {
    /// 1-based line number.
    pub line: u64,
    /// 1-based column, in bytes.
    pub column: u64,
}

/// One finding about the document: what rule, how bad, where, and what.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// The docs/SPEC.md rule concerned.
    pub rule: Rule,
    /// Warning (repaired or dropped) or error (reading stopped).
    pub severity: Severity,
    /// Where in the decoded document.
    #[serde(flatten)]
    pub position: Position,
    /// What happened, for humans.
    pub message: String,
}

impl Diagnostic {
    /// A warning at `position`.
    pub fn warning(rule: Rule, position: Position, message: impl Into<String>) -> Self {
        Self {
            rule,
            severity: Severity::Warning,
            position,
            message: message.into(),
        }
    }

    /// An error at `position`.
    pub fn error(rule: Rule, position: Position, message: impl Into<String>) -> Self {
        Self {
            rule,
            severity: Severity::Error,
            position,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] {}:{}: {}",
            self.severity, self.rule, self.position.line, self.position.column, self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_match_their_names() {
        assert_eq!(Rule::X7.id(), "X7");
        assert_eq!(Rule::C3.to_string(), "C3");
        assert!(Rule::ALL.contains(&Rule::L8));
        assert_eq!(serde_json::to_string(&Rule::T1).unwrap(), "\"T1\"");
    }
}
