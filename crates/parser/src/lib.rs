#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod ctx;
pub mod date;
pub mod diagnostic;
pub mod event;
mod input;
pub mod options;
mod parser;
pub mod robots_rules;
pub mod scope;
mod sniff;
mod stream;
pub mod summary;
mod text;
pub mod url;
mod xml;

pub use date::{Lastmod, Precision};
pub use diagnostic::{Diagnostic, Position, Rule, Severity};
pub use event::{
    Alternate, ChangeFreq, Event, Image, Listed, News, Relationship, SitemapRef, UrlEntry, Video,
};
pub use options::{ParseOptions, ScopeMode, Strictness};
pub use parser::{MAX_TOKEN_BYTES, Parser};
pub use robots_rules::RobotsRules;
pub use scope::{OutOfScope, Scope, in_scope, in_scope_with, scope_directory};
pub use stream::{ParseStream, parse_async};
pub use summary::{Format, Summary};
pub use url::{HostKey, NormUrl, UrlError};
