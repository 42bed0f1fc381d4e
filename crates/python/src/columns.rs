//! Arrow columns of parse results: the `urls`, `sitemaps` and `diagnostics`
//! tables, built a batch at a time.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, ListBuilder, StringBuilder,
    StringDictionaryBuilder, StructBuilder, TimestampMicrosecondBuilder, UInt16Builder,
    UInt32Builder, UInt64Builder,
};
use arrow_array::types::{Int8Type, Int32Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};
use sitemapd_parser::{Diagnostic, Lastmod, SitemapRef, UrlEntry};

use crate::entries::decimal;
use crate::time::micros;

/// Rows per batch of a table built in one go.
pub(crate) const BATCH_ROWS: usize = 65_536;

pub(crate) fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

pub(crate) fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}

/// A column of a few distinct strings (a precision, a changefreq): one
/// byte per row, each batch's values once.
pub(crate) fn keyword(name: &str) -> Field {
    Field::new(
        name,
        DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
        true,
    )
}

/// The `sitemap` column of a discovery: one sitemap's URL for many rows.
fn sitemap_field() -> Field {
    Field::new(
        "sitemap",
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        false,
    )
}

fn news_fields() -> Fields {
    Fields::from(vec![
        utf8("title"),
        utf8("publication_name"),
        utf8("language"),
        Field::new("publication_date", timestamp(), true),
    ])
}

fn item(data_type: DataType) -> FieldRef {
    Arc::new(Field::new("item", data_type, true))
}

fn alternate_fields() -> Fields {
    Fields::from(vec![utf8("hreflang"), utf8("href")])
}

fn video_fields() -> Fields {
    Fields::from(vec![
        utf8("title"),
        utf8("description"),
        utf8("thumbnail_loc"),
        utf8("content_loc"),
        utf8("player_loc"),
        Field::new("duration", DataType::UInt32, true),
        Field::new("publication_date", timestamp(), true),
    ])
}

/// The `urls` table's schema.
pub(crate) static URL_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("loc", DataType::Utf8, false),
        Field::new("lastmod", timestamp(), true),
        keyword("lastmod_precision"),
        keyword("changefreq"),
        Field::new("priority", DataType::Float64, true),
        Field::new("images", DataType::List(item(DataType::Utf8)), false),
        Field::new(
            "alternates",
            DataType::List(item(DataType::Struct(alternate_fields()))),
            false,
        ),
        Field::new(
            "videos",
            DataType::List(item(DataType::Struct(video_fields()))),
            false,
        ),
        // A list of at most one: four bytes a row, where a struct column
        // would cost its four columns' offsets on every row without news.
        Field::new(
            "news",
            DataType::List(item(DataType::Struct(news_fields()))),
            false,
        ),
    ]))
});

/// The `urls` table of a discovery: [`URL_SCHEMA`] and the sitemap that
/// listed each URL.
pub(crate) static DISCOVERED_URL_SCHEMA: LazyLock<SchemaRef> =
    LazyLock::new(|| with_sitemap(&URL_SCHEMA));

/// `schema` with a last column, `sitemap`: the document a row came from.
fn with_sitemap(schema: &Schema) -> SchemaRef {
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(sitemap_field()));
    Arc::new(Schema::new(fields))
}

/// The `sitemaps` table's schema: child sitemaps of an index.
pub(crate) static SITEMAP_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("loc", DataType::Utf8, false),
        Field::new("lastmod", timestamp(), true),
        keyword("lastmod_precision"),
    ]))
});

/// The `diagnostics` table's schema.
pub(crate) static DIAGNOSTIC_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("rule", DataType::Utf8, false),
        Field::new("severity", DataType::Utf8, false),
        Field::new("line", DataType::UInt64, false),
        Field::new("column", DataType::UInt64, false),
        Field::new("message", DataType::Utf8, false),
    ]))
});

/// The `diagnostics` table of a discovery, with the sitemap concerned.
pub(crate) static DISCOVERED_DIAGNOSTIC_SCHEMA: LazyLock<SchemaRef> =
    LazyLock::new(|| with_sitemap(&DIAGNOSTIC_SCHEMA));

/// The `sitemaps` table of a discovery: every sitemap fetched or failed.
pub(crate) static FETCH_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("status", DataType::UInt16, true),
        utf8("format"),
        Field::new("urls", DataType::UInt64, true),
        Field::new("sitemaps", DataType::UInt64, true),
        Field::new("complete", DataType::Boolean, false),
        Field::new("not_modified", DataType::Boolean, false),
        utf8("parent"),
        Field::new("depth", DataType::UInt32, false),
        Field::new("via", DataType::Utf8, false),
        utf8("error"),
        Field::new("bytes", DataType::UInt64, true),
        utf8("etag"),
        utf8("last_modified"),
    ]))
});

fn push_lastmod(
    values: &mut TimestampMicrosecondBuilder,
    precisions: &mut StringDictionaryBuilder<Int8Type>,
    lastmod: Option<&Lastmod>,
) {
    values.append_option(lastmod.map(micros));
    precisions.append_option(lastmod.map(|l| l.precision.as_str()));
}

/// Builds the `urls` table a row at a time.
pub(crate) struct UrlColumns {
    loc: StringBuilder,
    lastmod: TimestampMicrosecondBuilder,
    precision: StringDictionaryBuilder<Int8Type>,
    changefreq: StringDictionaryBuilder<Int8Type>,
    priority: Float64Builder,
    images: ListBuilder<StringBuilder>,
    alternates: ListBuilder<StructBuilder>,
    videos: ListBuilder<StructBuilder>,
    news: ListBuilder<StructBuilder>,
    /// The `sitemap` column of a discovery's table.
    sitemap: Option<StringDictionaryBuilder<Int32Type>>,
}

impl Default for UrlColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl UrlColumns {
    pub(crate) fn new() -> Self {
        let struct_builder = |fields: Fields| StructBuilder::from_fields(fields, 0);
        Self {
            loc: StringBuilder::new(),
            lastmod: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            precision: StringDictionaryBuilder::new(),
            changefreq: StringDictionaryBuilder::new(),
            priority: Float64Builder::new(),
            images: ListBuilder::new(StringBuilder::new()).with_field(item(DataType::Utf8)),
            alternates: ListBuilder::new(struct_builder(alternate_fields()))
                .with_field(item(DataType::Struct(alternate_fields()))),
            videos: ListBuilder::new(struct_builder(video_fields()))
                .with_field(item(DataType::Struct(video_fields()))),
            news: ListBuilder::new(struct_builder(news_fields()))
                .with_field(item(DataType::Struct(news_fields()))),
            sitemap: None,
        }
    }

    /// A table with the `sitemap` column of a discovery
    /// ([`DISCOVERED_URL_SCHEMA`]); rows go in with [`Self::push_from`].
    pub(crate) fn with_sitemap() -> Self {
        Self {
            sitemap: Some(StringDictionaryBuilder::new()),
            ..Self::new()
        }
    }

    /// A row of a discovery: `entry`, listed by `sitemap`.
    pub(crate) fn push_from(&mut self, entry: &UrlEntry, sitemap: &str) {
        if let Some(column) = &mut self.sitemap {
            column.append_value(sitemap);
        }
        self.push(entry);
    }

    /// Rows appended since the last `finish`.
    pub(crate) fn len(&self) -> usize {
        self.loc.len()
    }

    /// A row of a document's own table (for a discovery's, see [`Self::push_from`]).
    pub(crate) fn push(&mut self, entry: &UrlEntry) {
        self.loc.append_value(entry.loc.as_str());
        push_lastmod(
            &mut self.lastmod,
            &mut self.precision,
            entry.lastmod.as_ref(),
        );
        self.changefreq
            .append_option(entry.changefreq.map(|c| c.as_str()));
        self.priority.append_option(entry.priority.map(decimal));
        for image in &entry.images {
            self.images.values().append_value(image.loc.as_str());
        }
        self.images.append(true);
        let alternates = self.alternates.values();
        for alternate in &entry.alternates {
            string_field(alternates, 0).append_value(&alternate.hreflang);
            string_field(alternates, 1).append_value(alternate.href.as_str());
            alternates.append(true);
        }
        self.alternates.append(true);
        let videos = self.videos.values();
        for video in &entry.videos {
            string_field(videos, 0).append_option(video.title.as_deref());
            string_field(videos, 1).append_option(video.description.as_deref());
            string_field(videos, 2).append_option(video.thumbnail_loc.as_ref().map(|u| u.as_str()));
            string_field(videos, 3).append_option(video.content_loc.as_ref().map(|u| u.as_str()));
            string_field(videos, 4).append_option(video.player_loc.as_ref().map(|u| u.as_str()));
            field::<UInt32Builder>(videos, 5).append_option(video.duration);
            field::<TimestampMicrosecondBuilder>(videos, 6)
                .append_option(video.publication_date.as_ref().map(micros));
            videos.append(true);
        }
        self.videos.append(true);
        if let Some(news) = entry.news.as_deref() {
            let fields = self.news.values();
            string_field(fields, 0).append_option(news.title.as_deref());
            string_field(fields, 1).append_option(news.publication_name.as_deref());
            string_field(fields, 2).append_option(news.publication_language.as_deref());
            field::<TimestampMicrosecondBuilder>(fields, 3)
                .append_option(news.publication_date.as_ref().map(micros));
            fields.append(true);
        }
        self.news.append(true);
    }

    /// The rows appended so far as one batch; the builder starts empty again.
    pub(crate) fn finish(&mut self) -> RecordBatch {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.loc.finish()),
            Arc::new(self.lastmod.finish()),
            Arc::new(self.precision.finish()),
            Arc::new(self.changefreq.finish()),
            Arc::new(self.priority.finish()),
            Arc::new(self.images.finish()),
            Arc::new(self.alternates.finish()),
            Arc::new(self.videos.finish()),
            Arc::new(self.news.finish()),
        ];
        match &mut self.sitemap {
            Some(sitemap) => {
                columns.push(Arc::new(sitemap.finish()));
                batch(&DISCOVERED_URL_SCHEMA, columns)
            }
            None => batch(&URL_SCHEMA, columns),
        }
    }
}

fn field<T: ArrayBuilder>(builder: &mut StructBuilder, i: usize) -> &mut T {
    builder
        .field_builder::<T>(i)
        .expect("the struct's field builders follow its fields")
}

fn string_field(builder: &mut StructBuilder, i: usize) -> &mut StringBuilder {
    field::<StringBuilder>(builder, i)
}

pub(crate) fn batch(schema: &SchemaRef, mut columns: Vec<ArrayRef>) -> RecordBatch {
    // A builder's buffers grow by doubling: a table of millions of rows
    // keeps only what its rows fill.
    for column in &mut columns {
        <ArrayRef as Array>::shrink_to_fit(column);
    }
    RecordBatch::try_new(schema.clone(), columns)
        .expect("the builders' types are the schema's, and every column has one value per row")
}

/// Builds the `sitemaps` table.
#[derive(Default)]
pub(crate) struct SitemapColumns {
    loc: StringBuilder,
    lastmod: TimestampMicrosecondBuilder,
    precision: StringDictionaryBuilder<Int8Type>,
}

impl SitemapColumns {
    pub(crate) fn len(&self) -> usize {
        self.loc.len()
    }

    pub(crate) fn push(&mut self, sitemap: &SitemapRef) {
        self.loc.append_value(sitemap.loc.as_str());
        push_lastmod(
            &mut self.lastmod,
            &mut self.precision,
            sitemap.lastmod.as_ref(),
        );
    }

    pub(crate) fn finish(&mut self) -> RecordBatch {
        let lastmod = self.lastmod.finish().with_timezone("UTC");
        batch(
            &SITEMAP_SCHEMA,
            vec![
                Arc::new(self.loc.finish()),
                Arc::new(lastmod),
                Arc::new(self.precision.finish()),
            ],
        )
    }
}

/// Builds the `diagnostics` table.
#[derive(Default)]
pub(crate) struct DiagnosticColumns {
    rule: StringBuilder,
    severity: StringBuilder,
    line: UInt64Builder,
    column: UInt64Builder,
    message: StringBuilder,
    /// The `sitemap` column of a discovery's table.
    sitemap: Option<StringDictionaryBuilder<Int32Type>>,
}

impl DiagnosticColumns {
    /// A table with the `sitemap` column of a discovery.
    pub(crate) fn with_sitemap() -> Self {
        Self {
            sitemap: Some(StringDictionaryBuilder::new()),
            ..Self::default()
        }
    }

    /// A row of a discovery: `diagnostic`, found in `sitemap`.
    pub(crate) fn push_from(&mut self, diagnostic: &Diagnostic, sitemap: &str) {
        if let Some(column) = &mut self.sitemap {
            column.append_value(sitemap);
        }
        self.push(diagnostic);
    }

    pub(crate) fn len(&self) -> usize {
        self.rule.len()
    }

    pub(crate) fn push(&mut self, diagnostic: &Diagnostic) {
        self.rule.append_value(diagnostic.rule.id());
        self.severity.append_value(diagnostic.severity.to_string());
        self.line.append_value(diagnostic.position.line);
        self.column.append_value(diagnostic.position.column);
        self.message.append_value(&diagnostic.message);
    }

    pub(crate) fn finish(&mut self) -> RecordBatch {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.rule.finish()),
            Arc::new(self.severity.finish()),
            Arc::new(self.line.finish()),
            Arc::new(self.column.finish()),
            Arc::new(self.message.finish()),
        ];
        match &mut self.sitemap {
            Some(sitemap) => {
                columns.push(Arc::new(sitemap.finish()));
                batch(&DISCOVERED_DIAGNOSTIC_SCHEMA, columns)
            }
            None => batch(&DIAGNOSTIC_SCHEMA, columns),
        }
    }
}

/// Builds the `sitemaps` table of a discovery: one row per sitemap fetched
/// or failed.
#[derive(Default)]
pub(crate) struct FetchColumns {
    url: StringBuilder,
    status: UInt16Builder,
    format: StringBuilder,
    urls: UInt64Builder,
    sitemaps: UInt64Builder,
    complete: BooleanBuilder,
    not_modified: BooleanBuilder,
    parent: StringBuilder,
    depth: UInt32Builder,
    via: StringBuilder,
    error: StringBuilder,
    bytes: UInt64Builder,
    etag: StringBuilder,
    last_modified: StringBuilder,
}

/// One sitemap's fetch, as a row of [`FetchColumns`].
pub(crate) struct FetchRow<'a> {
    pub(crate) url: &'a str,
    pub(crate) status: Option<u16>,
    pub(crate) summary: Option<&'a sitemapd_parser::Summary>,
    pub(crate) complete: bool,
    pub(crate) not_modified: bool,
    pub(crate) parent: Option<&'a str>,
    pub(crate) depth: u32,
    pub(crate) via: &'a str,
    pub(crate) error: Option<&'a str>,
    /// Bytes of the body as received (compressed or not).
    pub(crate) bytes: Option<u64>,
    pub(crate) etag: Option<&'a str>,
    pub(crate) last_modified: Option<&'a str>,
}

impl FetchColumns {
    pub(crate) fn len(&self) -> usize {
        self.url.len()
    }

    pub(crate) fn push(&mut self, row: &FetchRow<'_>) {
        self.url.append_value(row.url);
        self.status.append_option(row.status);
        self.format
            .append_option(row.summary.and_then(|s| s.format).map(|f| f.as_str()));
        self.urls.append_option(row.summary.map(|s| s.urls));
        self.sitemaps.append_option(row.summary.map(|s| s.sitemaps));
        self.complete.append_value(row.complete);
        self.not_modified.append_value(row.not_modified);
        self.parent.append_option(row.parent);
        self.depth.append_value(row.depth);
        self.via.append_value(row.via);
        self.error.append_option(row.error);
        self.bytes.append_option(row.bytes);
        self.etag.append_option(row.etag);
        self.last_modified.append_option(row.last_modified);
    }

    pub(crate) fn finish(&mut self) -> RecordBatch {
        batch(
            &FETCH_SCHEMA,
            vec![
                Arc::new(self.url.finish()),
                Arc::new(self.status.finish()),
                Arc::new(self.format.finish()),
                Arc::new(self.urls.finish()),
                Arc::new(self.sitemaps.finish()),
                Arc::new(self.complete.finish()),
                Arc::new(self.not_modified.finish()),
                Arc::new(self.parent.finish()),
                Arc::new(self.depth.finish()),
                Arc::new(self.via.finish()),
                Arc::new(self.error.finish()),
                Arc::new(self.bytes.finish()),
                Arc::new(self.etag.finish()),
                Arc::new(self.last_modified.finish()),
            ],
        )
    }
}
