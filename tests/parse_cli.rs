//! `sitemapd parse` end to end: the real binary, its output contract, its
//! diagnostics and exit codes.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use common::{bin, run, stderr};

fn fixture(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
        .to_string_lossy()
        .into_owned()
}

fn stdout_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn jsonl_output_contract() {
    let input = fixture("parse/contract.xml");
    let o = run(&["parse", &input]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = String::from_utf8(o.stdout.clone()).unwrap();
    let first = lines.lines().next().unwrap();
    assert_eq!(
        first,
        r#"{"type":"url","loc":"http://www.example.com/catalog?item=12&desc=vacation_hawaii","lastmod":"2004-12-23T18:00:15Z","lastmod_precision":"second","changefreq":"weekly","priority":0.3}"#
    );
    let v = stdout_lines(&o);
    assert_eq!(v.len(), 3);
    let second = &v[1];
    assert_eq!(second["lastmod"], "2008-12-23T00:00:00Z");
    assert_eq!(second["lastmod_precision"], "day");
    assert_eq!(
        second["images"],
        serde_json::json!([{"loc": "http://cdn.example.com/merger.jpg"}])
    );
    assert_eq!(second["videos"][0]["duration"], 600);
    assert_eq!(
        second["videos"][0]["content_loc"],
        "http://www.example.com/video/1.mp4"
    );
    assert_eq!(second["news"]["publication_name"], "The Example Times");
    assert_eq!(
        second["alternates"],
        serde_json::json!([{"hreflang": "de", "href": "http://www.example.com/de/news/merger.html"}])
    );
    assert!(
        second.get("changefreq").is_none() && second.get("priority").is_none(),
        "absent fields are omitted"
    );
    assert_eq!(
        v[2],
        serde_json::json!({"type": "url", "loc": "http://www.example.com/bad-date"})
    );
}

#[test]
fn index_entries_are_sitemap_objects() {
    let o = run(&["parse", &fixture("parse/index.xml")]);
    let v = stdout_lines(&o);
    assert_eq!(
        v[0],
        serde_json::json!({"type":"sitemap","loc":"http://www.example.com/sitemap1.xml.gz","lastmod":"2004-10-01T18:23:17Z","lastmod_precision":"second"})
    );
    assert_eq!(
        v[1],
        serde_json::json!({"type":"sitemap","loc":"http://www.example.com/sitemap2.xml.gz"})
    );
    assert!(stderr(&o).contains("format=sitemapindex entries=2 (urls=0 sitemaps=2)"));
}

#[test]
fn text_diagnostics_name_rule_input_line_and_column_then_a_summary() {
    let input = fixture("parse/contract.xml");
    let o = run(&[
        "parse",
        &input,
        "--url",
        "http://www.example.com/sitemap.xml",
    ]);
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "warning[X7] {input}:33:5: lastmod \"yesterday\" dropped: expected a four-digit year"
        )
    );
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with(&format!(
            "summary: {input}: format=urlset entries=3 (urls=3 sitemaps=0)"
        )),
        "{summary}"
    );
    assert!(summary.contains("diagnostics=1 [X7=1]"), "{summary}");
}

#[test]
fn json_diagnostics() {
    let o = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--diagnostics",
        "json",
    ]);
    let lines: Vec<serde_json::Value> = stderr(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "diagnostic");
    assert_eq!(lines[0]["rule"], "X7");
    assert_eq!(lines[0]["severity"], "warning");
    assert_eq!(
        (lines[0]["line"].as_u64(), lines[0]["column"].as_u64()),
        (Some(33), Some(5))
    );
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["format"], "urlset");
    assert_eq!(summary["urls"], 3);
    assert_eq!(summary["diagnostics"]["X7"], 1);
}

#[test]
fn scope_rule_applies_with_url() {
    let o = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--url",
        "http://www.example.com/news/sitemap.xml",
    ]);
    assert_eq!(stdout_lines(&o).len(), 1);
    assert!(stderr(&o).contains("out_of_scope=[directory=2]"));
    let none = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--url",
        "http://www.example.com/news/sitemap.xml",
        "--scope",
        "none",
    ]);
    assert_eq!(stdout_lines(&none).len(), 3);
}

#[test]
fn stdin_and_gzip() {
    let gz = std::fs::read(fixture(
        "corpus/gzip/adbar__trafilatura__tests__resources__sitemap.xml.gz",
    ))
    .unwrap();
    let mut child = bin()
        .args(["parse", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&gz).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout_lines(&o).len(), 84);
    assert!(stderr(&o).contains("summary: <stdin>: format=urlset entries=84"));
    assert!(stderr(&o).contains("gzip_layers=1"));
}

#[test]
fn csv_output() {
    let o = run(&["parse", &fixture("parse/contract.xml"), "--format", "csv"]);
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(
        rows[0],
        "type,loc,lastmod,lastmod_precision,changefreq,priority,images,videos,news,alternates"
    );
    assert_eq!(
        rows[1],
        "url,http://www.example.com/catalog?item=12&desc=vacation_hawaii,2004-12-23T18:00:15Z,second,weekly,0.3,0,0,0,0"
    );
    assert_eq!(
        rows[2],
        "url,http://www.example.com/news/merger.html,2008-12-23T00:00:00Z,day,,,1,1,1,1"
    );
    assert_eq!(rows.len(), 4);
}

#[test]
fn strict_and_limits() {
    let input = fixture("corpus/urlset/Vitexus__Skeli.cz__src__main__webapp__sitemap.xml");
    let lenient = run(&["parse", &input, "--url", "http://skeli.example/sitemap.xml"]);
    assert_eq!(stdout_lines(&lenient).len(), 6);
    let strict = run(&[
        "parse",
        &input,
        "--url",
        "http://skeli.example/sitemap.xml",
        "--strict",
    ]);
    assert_eq!(
        (strict.status.code(), stdout_lines(&strict).len()),
        (Some(0), 0)
    );
    let limited = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--max-entries",
        "1",
    ]);
    assert_eq!(stdout_lines(&limited).len(), 1);
    assert!(stderr(&limited).contains("warning[C4]"));
    assert_eq!(limited.status.code(), Some(0));
    let rejected = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--max-entries",
        "1",
        "--strict",
    ]);
    assert_eq!(
        rejected.status.code(),
        Some(1),
        "strict mode rejects the whole document"
    );
    assert!(stderr(&rejected).contains("error[C4]"));
    let small = run(&[
        "parse",
        &fixture("parse/contract.xml"),
        "--max-bytes",
        "700",
    ]);
    assert!(stderr(&small).contains("error[C3]"), "{}", stderr(&small));
    assert_eq!(small.status.code(), Some(0), "partly read is still read");
}

#[test]
fn exit_codes() {
    let partial = run(&[
        "parse",
        &fixture("corpus/urlset/adobe__theblog__sitemap.fr.xml"),
    ]);
    assert_eq!(partial.status.code(), Some(0));
    assert!(stderr(&partial).contains("error[C8]"));
    assert_eq!(stdout_lines(&partial).len(), 512);
    for not_sitemap in [
        "parse/not-a-sitemap.html",
        "corpus/urlset/aafeher__go-sitemap-parser__test__sitemap-empty.xml",
    ] {
        let o = run(&["parse", &fixture(not_sitemap)]);
        assert_eq!(o.status.code(), Some(1), "{not_sitemap}");
        assert!(stderr(&o).contains("error[C7]"), "{}", stderr(&o));
        assert!(stderr(&o).contains("format=none"));
    }
    let missing = run(&["parse", "/nonexistent/sitemap.xml"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("cannot open /nonexistent/sitemap.xml"));
    assert_eq!(run(&["parse"]).status.code(), Some(2));
    assert_eq!(
        run(&["parse", "x", "--scope", "galaxy"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["parse", "x", "--bogus"]).status.code(), Some(2));
    assert_eq!(
        run(&["parse", "x", "--url", "ftp://x/"]).status.code(),
        Some(2)
    );
}

#[test]
fn closed_stdout_is_not_an_error() {
    let input = fixture("corpus/urlset/adobe__theblog__sitemap.xml");
    let mut child = bin()
        .args(["parse", &input])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// `--no-fast-lane` reads every entry through quick-xml's events: the same
/// entries, diagnostics (with their lines and columns) and summary as the
/// default, on a spread of the corpus's files, in both diagnostic formats.
#[test]
fn the_fast_lane_changes_nothing_a_user_sees() {
    let mut files = Vec::new();
    for kind in ["urlset", "sitemapindex", "gzip"] {
        let dir = PathBuf::from(fixture("corpus")).join(kind);
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        files.extend(paths.into_iter().step_by(9));
    }
    assert!(files.len() >= 15, "{files:?}");
    let mut lines = 0;
    for file in &files {
        let file = file.to_str().unwrap();
        let url = "https://fixture.invalid/sitemap.xml";
        let args = [
            "parse",
            file,
            "--url",
            url,
            "--scope",
            "none",
            "--max-diagnostics-per-rule",
            "0",
        ];
        let fast = run(&args);
        let full = run(&[&args[..], &["--no-fast-lane"]].concat());
        assert_eq!(fast.status.code(), full.status.code(), "{file}");
        assert_eq!(stderr(&fast), stderr(&full), "{file}");
        assert_eq!(fast.stdout, full.stdout, "{file}");
        lines += fast.stdout.iter().filter(|&&b| b == b'\n').count();
        let json = [&args[..], &["--diagnostics", "json"]].concat();
        let fast = run(&json);
        let full = run(&[&json[..], &["--no-fast-lane"]].concat());
        assert_eq!(stderr(&fast), stderr(&full), "{file}");
    }
    assert!(lines > 1_000, "{lines} entries compared");
}
