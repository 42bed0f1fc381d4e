//! `sitemapd parse INPUT`: one document to JSON Lines or CSV.

use std::fs::File;
use std::io::{self, Read};
use std::process::ExitCode;

use anyhow::{Context, Result};
use sitemapd_parser::{ParseOptions, Parser, Strictness};

use crate::cli::ParseArgs;
use crate::output::{DiagnosticSink, EntrySink};

/// Runs the command.
pub fn run(args: &ParseArgs) -> Result<ExitCode> {
    let options = ParseOptions {
        document_url: args.url.clone(),
        scope: args.scope,
        strictness: if args.strict {
            Strictness::Strict
        } else {
            Strictness::Lenient
        },
        max_bytes: args.max_bytes,
        max_entries: args.max_entries,
        ..ParseOptions::default()
    };
    let (input, label): (Box<dyn Read + Send>, String) = if args.input == "-" {
        (Box::new(io::stdin()), "<stdin>".into())
    } else {
        let file =
            File::open(&args.input).with_context(|| format!("cannot open {}", args.input))?;
        (Box::new(file), args.input.clone())
    };
    let mut parser = Parser::new(input, options);
    let mut entries = EntrySink::new(io::stdout().lock(), args.format)?;
    let mut diagnostics =
        DiagnosticSink::new(label, args.diagnostics, args.max_diagnostics_per_rule);
    for event in parser.by_ref() {
        match event {
            sitemapd_parser::Event::Diagnostic(d) => diagnostics.write(&d)?,
            other => entries.write(&other)?,
        }
    }
    entries.finish()?;
    let summary = parser.summary();
    diagnostics.summary(summary)?;
    Ok(if summary.format.is_some() && !summary.rejected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
