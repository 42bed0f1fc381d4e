//! Arrow tables of what a store holds: `Store.urls()`, one row per URL with
//! the columns of `sitemapd export`, and `Store.hosts()`, one row per host
//! with its counts, politeness and lastmod trust.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, StringBuilder, StringDictionaryBuilder,
    TimestampMicrosecondBuilder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use sitemapd_parser::{HostKey, NormUrl};
use sitemapd_scheduler::{HostView, Store, StoreError, Timestamp, UrlView};

use crate::columns::{BATCH_ROWS, batch, keyword, timestamp, utf8};
use crate::entries::decimal;
use crate::table::Table;

fn time(name: &str, nullable: bool) -> Field {
    Field::new(name, timestamp(), nullable)
}

fn number(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}

fn micros(t: Timestamp) -> i64 {
    t.unix().saturating_mul(1_000_000)
}

/// `Store.urls()`: the columns of `sitemapd export`, in its order.
static STORE_URL_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        time("first_seen", false),
        time("last_seen", false),
        time("lastmod", true),
        keyword("lastmod_precision"),
        number("lastmod_changes", DataType::UInt64, false),
        keyword("changefreq"),
        number("priority", DataType::Float64, true),
        number("images", DataType::UInt16, false),
        number("videos", DataType::UInt16, false),
        number("news", DataType::Boolean, false),
        number("alternates", DataType::UInt16, false),
        number("fetches", DataType::UInt32, false),
        number("changes", DataType::UInt32, false),
        time("last_fetch", true),
        time("last_change", true),
        time("due", false),
        keyword("reason"),
        number("retired", DataType::Boolean, false),
        keyword("status"),
        keyword("last_outcome"),
        number("last_status", DataType::UInt16, true),
        utf8("redirected_from"),
    ]))
});

/// Builds `Store.urls()` a row at a time.
#[derive(Default)]
struct StoreUrlColumns {
    url: StringBuilder,
    first_seen: TimestampMicrosecondBuilder,
    last_seen: TimestampMicrosecondBuilder,
    lastmod: TimestampMicrosecondBuilder,
    lastmod_precision: StringDictionaryBuilder<Int8Type>,
    lastmod_changes: UInt64Builder,
    changefreq: StringDictionaryBuilder<Int8Type>,
    priority: Float64Builder,
    images: UInt16Builder,
    videos: UInt16Builder,
    news: BooleanBuilder,
    alternates: UInt16Builder,
    fetches: UInt32Builder,
    changes: UInt32Builder,
    last_fetch: TimestampMicrosecondBuilder,
    last_change: TimestampMicrosecondBuilder,
    due: TimestampMicrosecondBuilder,
    reason: StringDictionaryBuilder<Int8Type>,
    retired: BooleanBuilder,
    status: StringDictionaryBuilder<Int8Type>,
    last_outcome: StringDictionaryBuilder<Int8Type>,
    last_status: UInt16Builder,
    redirected_from: StringBuilder,
}

impl StoreUrlColumns {
    fn push(&mut self, v: &UrlView) {
        self.url.append_value(&v.url);
        self.first_seen.append_value(micros(v.first_seen));
        self.last_seen.append_value(micros(v.last_seen));
        self.lastmod.append_option(v.lastmod.map(micros));
        self.lastmod_precision
            .append_option(v.lastmod_precision.map(|p| p.as_str()));
        self.lastmod_changes
            .append_value(u64::try_from(v.lastmod_changes).unwrap_or(u64::MAX));
        self.changefreq
            .append_option(v.changefreq.map(|c| c.as_str()));
        self.priority.append_option(v.priority.map(decimal));
        self.images.append_value(v.images);
        self.videos.append_value(v.videos);
        self.news.append_value(v.news);
        self.alternates.append_value(v.alternates);
        self.fetches.append_value(v.fetches);
        self.changes.append_value(v.changes);
        self.last_fetch.append_option(v.last_fetch.map(micros));
        self.last_change.append_option(v.last_change.map(micros));
        self.due.append_value(micros(v.due));
        self.reason.append_value(v.reason.as_str());
        self.retired.append_value(v.retired);
        self.status.append_value(v.status.as_str());
        self.last_outcome
            .append_option(v.last_outcome.map(|o| o.as_str()));
        self.last_status.append_option(v.last_status);
        self.redirected_from
            .append_option(v.redirected_from.as_deref());
    }

    fn len(&self) -> usize {
        self.due.len()
    }

    fn finish(&mut self) -> RecordBatch {
        let utc = |b: &mut TimestampMicrosecondBuilder| -> ArrayRef {
            Arc::new(b.finish().with_timezone("UTC"))
        };
        batch(
            &STORE_URL_SCHEMA,
            vec![
                Arc::new(self.url.finish()),
                utc(&mut self.first_seen),
                utc(&mut self.last_seen),
                utc(&mut self.lastmod),
                Arc::new(self.lastmod_precision.finish()),
                Arc::new(self.lastmod_changes.finish()),
                Arc::new(self.changefreq.finish()),
                Arc::new(self.priority.finish()),
                Arc::new(self.images.finish()),
                Arc::new(self.videos.finish()),
                Arc::new(self.news.finish()),
                Arc::new(self.alternates.finish()),
                Arc::new(self.fetches.finish()),
                Arc::new(self.changes.finish()),
                utc(&mut self.last_fetch),
                utc(&mut self.last_change),
                utc(&mut self.due),
                Arc::new(self.reason.finish()),
                Arc::new(self.retired.finish()),
                Arc::new(self.status.finish()),
                Arc::new(self.last_outcome.finish()),
                Arc::new(self.last_status.finish()),
                Arc::new(self.redirected_from.finish()),
            ],
        )
    }
}

/// `Store.hosts()`: a host's counts (as `stats()["hosts"]` gives them),
/// its politeness and its lastmod trust.
static HOST_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        number("active", DataType::UInt64, false),
        number("retired", DataType::UInt64, false),
        number("blocked", DataType::UInt64, false),
        number("lease_delay_s", DataType::Float64, false),
        time("next_allowed", false),
        number("lastmod_trusted", DataType::Boolean, false),
        number("lastmod_probation", DataType::Boolean, false),
        number("lastmod_complete", DataType::Boolean, false),
        number("lastmod_precision", DataType::Float64, true),
        number("lastmod_recall", DataType::Float64, true),
        number("lastmod_silent_rate", DataType::Float64, true),
        number("lastmod_agreement", DataType::Float64, true),
        number("lastmod_observations", DataType::UInt32, false),
    ]))
});

/// One host's row: its counts from the store's stats, the rest from its view.
struct HostRow<'a> {
    active: u64,
    retired: u64,
    blocked: u64,
    view: &'a HostView,
}

/// Builds `Store.hosts()`.
#[derive(Default)]
struct HostColumns {
    host: StringBuilder,
    active: UInt64Builder,
    retired: UInt64Builder,
    blocked: UInt64Builder,
    lease_delay: Float64Builder,
    next_allowed: TimestampMicrosecondBuilder,
    trusted: BooleanBuilder,
    probation: BooleanBuilder,
    complete: BooleanBuilder,
    precision: Float64Builder,
    recall: Float64Builder,
    silent_rate: Float64Builder,
    agreement: Float64Builder,
    observations: UInt32Builder,
}

impl HostColumns {
    fn push(&mut self, row: &HostRow<'_>) {
        let v = row.view;
        self.host.append_value(v.host.as_str());
        self.active.append_value(row.active);
        self.retired.append_value(row.retired);
        self.blocked.append_value(row.blocked);
        self.lease_delay.append_value(v.lease_delay.as_secs_f64());
        self.next_allowed.append_value(micros(v.next_allowed));
        self.trusted.append_value(v.lastmod_trusted);
        self.probation.append_value(v.lastmod_probation);
        self.complete.append_value(v.lastmod_complete);
        self.precision.append_option(v.lastmod_precision);
        self.recall.append_option(v.lastmod_recall);
        self.silent_rate.append_option(v.lastmod_silent_rate);
        self.agreement.append_option(v.lastmod_agreement);
        self.observations.append_value(v.lastmod_observations);
    }

    fn len(&self) -> usize {
        self.host.len()
    }

    fn finish(&mut self) -> RecordBatch {
        batch(
            &HOST_SCHEMA,
            vec![
                Arc::new(self.host.finish()),
                Arc::new(self.active.finish()),
                Arc::new(self.retired.finish()),
                Arc::new(self.blocked.finish()),
                Arc::new(self.lease_delay.finish()),
                Arc::new(self.next_allowed.finish().with_timezone("UTC")),
                Arc::new(self.trusted.finish()),
                Arc::new(self.probation.finish()),
                Arc::new(self.complete.finish()),
                Arc::new(self.precision.finish()),
                Arc::new(self.recall.finish()),
                Arc::new(self.silent_rate.finish()),
                Arc::new(self.agreement.finish()),
                Arc::new(self.observations.finish()),
            ],
        )
    }
}

/// The key the store gave a host, back as a [`HostKey`]: the host of an
/// `https` URL, unless its port is 443 (which `https` drops and `http`
/// keeps). Every stored key comes from a URL, so one of the two gives it.
fn host_key(name: &str) -> Option<HostKey> {
    ["https", "http"].into_iter().find_map(|scheme| {
        let key = NormUrl::parse(&format!("{scheme}://{name}/"))
            .ok()?
            .host_key();
        (key.as_str() == name).then_some(key)
    })
}

/// Every URL `store` holds, retired ones included.
pub(crate) fn urls(store: &Store) -> Result<Table, StoreError> {
    let mut columns = StoreUrlColumns::default();
    let mut batches = Vec::new();
    for view in store.export() {
        columns.push(&view?);
        if columns.len() == BATCH_ROWS {
            batches.push(columns.finish());
        }
    }
    batches.push(columns.finish());
    Ok(Table::new(STORE_URL_SCHEMA.clone(), batches))
}

/// Every host `store` holds URLs of, in host order.
pub(crate) fn hosts(store: &Store, now: Timestamp) -> Result<Table, StoreError> {
    let stats = store.stats(now)?;
    let mut columns = HostColumns::default();
    let mut batches = Vec::new();
    for (name, counts) in &stats.hosts {
        let Some(key) = host_key(name) else {
            continue; // not a key a URL gave: none such is stored
        };
        let view = store.host(&key)?;
        columns.push(&HostRow {
            active: counts.active,
            retired: counts.retired,
            blocked: counts.blocked,
            view: &view,
        });
        if columns.len() == BATCH_ROWS {
            batches.push(columns.finish());
        }
    }
    batches.push(columns.finish());
    Ok(Table::new(HOST_SCHEMA.clone(), batches))
}
