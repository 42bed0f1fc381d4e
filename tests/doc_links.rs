//! Every link between the project's documents resolves, and every document a
//! source file or a document cites by path exists. Run it alone with
//!
//! ```sh
//! cargo test -p sitemapd --test doc_links
//! ```
//!
//! Two checks, on the files as they are in the repository (no build needed):
//!
//! - **Links.** In README.md, RELIABILITY.md, the changelog if there is
//!   one, every Markdown file under docs/ (docs/examples/ included) and each
//!   crate's README.md, every relative Markdown link `[text](path)`,
//!   `[text](path#anchor)` or `[text](#anchor)` (images too) names a file or
//!   directory that exists, relative to the linking file; an anchor into a
//!   Markdown file names one of its headings, by GitHub's rules (below).
//!   Links in fenced code blocks and code spans are not links. In a crate's README.md, which is also its
//!   rustdoc page, a target that is a Rust path (`ORACLE`,
//!   `sitemapd_scheduler::Store`) is an intra-doc link, not a file.
//! - **Citations.** In every `*.rs` and `*.md` file of the repository
//!   (target/ and .git/ aside), every path of a Markdown file written out
//!   (`docs/scheduling.md`, `docs/queue.md#the-order`, `RELIABILITY.md`)
//!   names a file that exists, relative to the citing file's directory or
//!   else to the repository root; an anchor after it names one of its
//!   headings. Web addresses and glob patterns are not citations, nor is the
//!   text of a link the link check reads (`[the order](docs/queue.md#the-order)`).
//!
//! Heading anchors follow GitHub: the heading's text without its Markdown
//! (code spans, emphasis, links keep their text), lowercased, every
//! character that is not a letter, a digit, a space, '-' or '_' removed,
//! each space turned into '-'; a repeated anchor gets "-1", "-2", … in
//! order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

#[test]
fn every_link_and_citation_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files.sort();
    assert!(files.len() > 100, "only {} files found", files.len());
    let mut repo = Repo {
        root,
        anchors: HashMap::new(),
    };
    let mut broken = Broken::new();
    for rel in &files {
        let text = std::fs::read_to_string(root.join(rel))
            .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        let is_md = rel.extension().is_some_and(|e| e == "md");
        if is_md && link_checked(rel) {
            check_links(&mut repo, rel, &text, &mut broken);
        }
        // This file's own examples cite files that do not exist.
        if rel != Path::new(file!()) {
            check_citations(&mut repo, rel, &text, is_md, &mut broken);
        }
    }
    assert!(
        broken.is_empty(),
        "{} broken link(s) or citation(s):\n{}",
        broken.len(),
        broken
            .into_iter()
            .map(|((file, line), what)| format!("{}:{line}: {what}", file.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// What is broken, by file and line.
type Broken = BTreeSet<((PathBuf, usize), String)>;

/// The *.rs and *.md files under `dir` (relative to `root`), target/ and
/// .git/ aside.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if name != "target" && name != ".git" {
                walk(root, &path, out);
            }
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs" || e == "md") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// Whether the links of this Markdown file are checked.
fn link_checked(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    match parts.as_slice() {
        [top] => ["README", "RELIABILITY", "CHANGELOG"]
            .iter()
            .any(|stem| top.strip_suffix(".md") == Some(stem)),
        ["docs", ..] => true,
        ["crates", _, "README.md"] => true,
        _ => false,
    }
}

/// Whether this Markdown file is a crate's README, its rustdoc page too.
fn is_crate_readme(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    matches!(parts.as_slice(), ["crates", _, "README.md"])
}

struct Repo<'a> {
    root: &'a Path,
    /// The anchors of each Markdown file read so far (`None`: unreadable).
    anchors: HashMap<PathBuf, Option<BTreeSet<String>>>,
}

impl Repo<'_> {
    /// Whether `rel` (relative to the root, normalised) exists.
    fn exists(&self, rel: &Path) -> bool {
        self.root.join(rel).exists()
    }

    /// Whether the Markdown file `rel` has a heading with this anchor.
    fn has_anchor(&mut self, rel: &Path, anchor: &str) -> bool {
        let root = self.root;
        let anchors = self.anchors.entry(rel.to_path_buf()).or_insert_with(|| {
            std::fs::read_to_string(root.join(rel))
                .ok()
                .map(|t| heading_anchors(&t))
        });
        anchors.as_ref().is_some_and(|a| a.contains(anchor))
    }
}

/// `base/target` with `.` and `..` resolved; `None` when it leaves the
/// repository.
fn join(base: &Path, target: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in base.join(target).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Each line of `text` with its number, and whether it is inside a fenced
/// code block (the fences themselves count as inside).
fn lines_with_fences(text: &str) -> Vec<(usize, &str, bool)> {
    let mut fence: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        let opener = ['`', '~']
            .into_iter()
            .map(|c| (c, run(c)))
            .find(|&(_, n)| n >= 3);
        match (fence, opener) {
            (None, Some(f)) => {
                fence = Some(f);
                out.push((i + 1, line, true));
            }
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && t.trim_end().len() == n2 => {
                fence = None;
                out.push((i + 1, line, true));
            }
            (Some(_), _) => out.push((i + 1, line, true)),
            (None, None) => out.push((i + 1, line, false)),
        }
    }
    out
}

/// `line` with its code spans blanked out (same length in bytes).
fn without_code_spans(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = line.to_string().into_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        // The closing run of the same length.
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                for c in &mut out[i..j + n] {
                    *c = b' ';
                }
                i = j + n;
            }
            None => i += n,
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The anchors of the headings of a Markdown file.
fn heading_anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line, fenced) in lines_with_fences(text) {
        if fenced {
            continue;
        }
        let Some(title) = atx_heading(line) else {
            continue;
        };
        let slug = slug(title);
        let n = seen.entry(slug.clone()).or_insert(0);
        let anchor = if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        };
        *n += 1;
        out.insert(anchor);
    }
    out
}

/// The text of an ATX heading (`## Title ##`), if `line` is one.
fn atx_heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let rest = rest.trim();
    // A closing run of '#' preceded by a space is not part of the title.
    let closed = rest.trim_end_matches('#');
    Some(if closed.is_empty() || closed.ends_with(' ') {
        closed.trim_end()
    } else {
        rest
    })
}

/// GitHub's anchor of a heading's text.
fn slug(title: &str) -> String {
    // Links keep their text: `[text](url)` → `text`.
    let mut text = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            let end = after[close + 2..].find(')')?;
            Some((close, close + 2 + end))
        }) {
            Some((close, end)) => {
                text.push_str(&rest[..open]);
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                text.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.chars()
        .filter(|&c| c != '`' && c != '*')
        .flat_map(char::to_lowercase)
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The targets of the inline links of `line` (code spans blanked already):
/// (byte range of the link from its text's `[` to its `)`, target).
fn link_targets(line: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = line[i..].find("](") {
        let text_end = i + p;
        let text_start = line[i..text_end].rfind('[').map_or(text_end, |k| i + k);
        let start = text_end + 2;
        // The target ends at the ')' that closes the '(' (balanced).
        let mut depth = 1;
        let mut end = None;
        for (k, &c) in b[start..].iter().enumerate() {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            break;
        };
        let mut target = line[start..end].trim();
        if let Some(t) = target.strip_prefix('<') {
            target = t.split('>').next().unwrap_or("");
        } else if let Some((path, _title)) = target.split_once(char::is_whitespace) {
            target = path;
        }
        out.push((text_start..end, target.to_string()));
        i = end;
    }
    out
}

/// Whether a link target is a Rust path (an intra-doc link of rustdoc).
fn is_rust_path(target: &str) -> bool {
    let t = target.trim_end_matches("()").trim_end_matches('!');
    !t.is_empty()
        && t.split("::").all(|seg| {
            let mut cs = seg.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn check_links(repo: &mut Repo<'_>, rel: &Path, text: &str, broken: &mut Broken) {
    let dir = rel.parent().unwrap_or(Path::new(""));
    for (n, line, fenced) in lines_with_fences(text) {
        if fenced {
            continue;
        }
        for (_, target) in link_targets(&without_code_spans(line)) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let path = path.split('?').next().unwrap_or("");
            if is_crate_readme(rel)
                && anchor.is_none()
                && is_rust_path(path)
                && !repo.exists(&dir.join(path))
            {
                continue;
            }
            let resolved = if path.is_empty() {
                Some(rel.to_path_buf())
            } else {
                join(dir, path)
            };
            let here = (rel.to_path_buf(), n);
            let Some(resolved) = resolved.filter(|p| repo.exists(p)) else {
                broken.insert((here, format!("link to `{target}`: no such file")));
                continue;
            };
            if let Some(anchor) = anchor.filter(|a| !a.is_empty()) {
                let is_md = resolved.extension().is_some_and(|e| e == "md");
                if is_md && !repo.has_anchor(&resolved, anchor) {
                    broken.insert((
                        here,
                        format!(
                            "link to `{target}`: {} has no heading `#{anchor}`",
                            resolved.display()
                        ),
                    ));
                }
            }
        }
    }
}

/// The characters a cited path is made of.
fn path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/')
}

/// The characters of an anchor after a cited path.
fn anchor_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-')
}

/// The Markdown paths `line` cites: (path, anchor).
fn cited_paths(line: &str) -> Vec<(String, Option<String>)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = line[from..].find(".md") {
        let dot = from + p;
        let end = dot + 3;
        from = end;
        // Not a longer extension (`.mdx`), nor a path going on (`x.md/y`).
        if b.get(end)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'/')
        {
            continue;
        }
        let mut start = dot;
        while start > 0 && path_char(b[start - 1]) {
            start -= 1;
        }
        let path = &line[start..end];
        let name = path.rsplit('/').next().unwrap_or("");
        // `x/*.md` is a pattern; `//host/x.md`, after `https:`, an address.
        if name.len() <= 3 || line[..start].ends_with('*') || path.starts_with("//") {
            continue;
        }
        // A web address (`https://host/x.md`) is not a citation.
        if line[..start]
            .rsplit(|c: char| c.is_whitespace() || "()<>[]`\"'".contains(c))
            .next()
            .is_some_and(|w| w.contains("://"))
        {
            continue;
        }
        let anchor = if b.get(end) == Some(&b'#') {
            let a: String = line[end + 1..]
                .bytes()
                .take_while(|&c| anchor_char(c))
                .map(char::from)
                .collect();
            (!a.is_empty()).then_some(a)
        } else {
            None
        };
        out.push((path.trim_start_matches("./").to_string(), anchor));
    }
    out
}

fn check_citations(repo: &mut Repo<'_>, rel: &Path, text: &str, is_md: bool, broken: &mut Broken) {
    let dir = rel.parent().unwrap_or(Path::new(""));
    let links_checked = is_md && link_checked(rel);
    for (n, line, fenced) in lines_with_fences(text) {
        // The links the link check reads are its business, their text too.
        let mut line = line.to_string();
        if links_checked && !fenced {
            let blanked = without_code_spans(&line);
            for (range, _) in link_targets(&blanked) {
                let blank = " ".repeat(range.len());
                line.replace_range(range, &blank);
            }
        }
        for (path, anchor) in cited_paths(&line) {
            let found = [join(dir, &path), join(Path::new(""), &path)]
                .into_iter()
                .flatten()
                .find(|p| repo.exists(p));
            let here = (rel.to_path_buf(), n);
            let Some(found) = found else {
                broken.insert((here, format!("cites `{path}`: no such file")));
                continue;
            };
            if let Some(anchor) = anchor
                && !repo.has_anchor(&found, &anchor)
            {
                broken.insert((
                    here,
                    format!(
                        "cites `{path}#{anchor}`: {} has no heading `#{anchor}`",
                        found.display()
                    ),
                ));
            }
        }
    }
}

#[test]
fn the_parsers_find_what_they_look_for() {
    let links: Vec<String> = link_targets("see [a](docs/x.md#y) and [b](../c.md), not (d.md)")
        .into_iter()
        .map(|(_, target)| target)
        .collect();
    assert_eq!(links, ["docs/x.md#y", "../c.md"]);
    assert_eq!(slug("The daemon (`cargo bench`)"), "the-daemon-cargo-bench");
    assert_eq!(
        cited_paths("as docs/scheduling.md#closed-forms says"),
        [(
            "docs/scheduling.md".to_string(),
            Some("closed-forms".to_string())
        )]
    );
}
