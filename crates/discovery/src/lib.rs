#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod fetch;
pub mod guard;
pub mod politeness;
pub mod robots;
pub mod walk;

pub use fetch::{Body, BodyProgress, FetchConfig, FetchError, Fetched, Fetcher, Hop, Validators};
pub use robots::{DeclaredSitemap, RobotsTxt};
pub use walk::{FollowRule, Seed, SitemapMemory, WalkConfig, WalkEvent, WalkStream, Walker};
