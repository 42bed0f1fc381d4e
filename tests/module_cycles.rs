//! No import cycles between the modules of any crate of the workspace, nor of
//! the binary. Run it alone with
//!
//! ```sh
//! cargo test -p sitemapd --test module_cycles
//! ```
//!
//! The check reads the sources, not the compiler's view: in every crate it
//! builds the module tree from the `mod` declarations, collects the paths
//! each file names through `crate::`, `super::` and `self::` (and `use` groups
//! under them), resolves them to modules (through a parent's `pub use
//! child::…` re-exports too) and, among the child modules of every module,
//! looks for cycles. A reference between a module and its own ancestor
//! (`super::Walker` in `walk/site.rs`) is not an edge: a parent holds its
//! children's shared items. Comments and string literals are skipped; test
//! modules count (a test importing across is still an import).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Crates not checked yet (none: every crate is checked).
const NOT_YET: &[&str] = &[];

/// Edges between top-level modules left out, as (crate, from, to) (none).
const ALLOWED_EDGES: &[(&str, &str, &str)] = &[];

#[test]
fn no_import_cycles_between_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src/main.rs")];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let lib = dir.join("src/lib.rs");
        if lib.exists() {
            crates.push(lib);
        }
    }
    let mut failures = String::new();
    for crate_root in crates {
        let name = crate_root
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        let name = if name.is_empty() {
            "sitemapd (src/)".into()
        } else {
            name
        };
        let ignored: Vec<(&str, &str)> = ALLOWED_EDGES
            .iter()
            .filter(|(n, ..)| *n == name)
            .map(|&(_, from, to)| (from, to))
            .collect();
        let cycles = cycles_of(&crate_root, &ignored);
        if cycles.is_empty() {
            continue;
        }
        let mut report = format!("{name}:\n");
        for c in &cycles {
            let _ = writeln!(report, "  {c}");
        }
        if NOT_YET.iter().any(|n| name == *n) {
            eprintln!("not checked yet (TODO, see NOT_YET): {report}");
        } else {
            failures.push_str(&report);
        }
    }
    assert!(
        failures.is_empty(),
        "import cycles between modules:\n{failures}"
    );
}

/// A module's path from the crate root (`["walk", "site"]`).
type ModPath = Vec<String>;

/// A module: its path from the crate root and its file.
struct Module {
    path: Vec<String>,
    file: PathBuf,
}

/// The modules of a crate: walks the `mod NAME;` declarations from the root.
fn modules(root: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut todo = vec![Module {
        path: Vec::new(),
        file: root.to_path_buf(),
    }];
    while let Some(m) = todo.pop() {
        let raw = std::fs::read_to_string(&m.file).unwrap();
        let paths = path_attributes(&raw);
        let text = strip(&raw);
        let stem = m.file.file_stem().unwrap().to_str().unwrap();
        let dir = if m.path.is_empty() || stem == "mod" {
            m.file.parent().unwrap().to_path_buf()
        } else {
            m.file.parent().unwrap().join(stem)
        };
        for child in declared_modules(&text) {
            let flat = dir.join(format!("{child}.rs"));
            let file = if let Some(path) = paths.get(&child) {
                // `#[path = "…"]` is relative to the declaring file's folder.
                m.file.parent().unwrap().join(path)
            } else if flat.exists() {
                flat
            } else {
                dir.join(&child).join("mod.rs")
            };
            assert!(
                file.exists(),
                "module {child} of {}: no file",
                m.file.display()
            );
            let mut path = m.path.clone();
            path.push(child);
            todo.push(Module { path, file });
        }
        out.push(m);
    }
    out
}

/// `#[path = "FILE"] mod NAME;` declarations: NAME -> FILE.
fn path_attributes(raw: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = raw;
    while let Some(at) = rest.find("#[path") {
        rest = &rest[at + 6..];
        let Some(open) = rest.find('"') else { break };
        let Some(len) = rest[open + 1..].find('"') else {
            break;
        };
        let file = rest[open + 1..open + 1 + len].to_string();
        let after = &rest[open + 1 + len..];
        let Some(m) = after.find("mod ") else { break };
        let name: String = after[m + 4..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.insert(name, file);
    }
    out
}

/// `mod NAME;` declarations (not inline modules).
fn declared_modules(text: &str) -> Vec<String> {
    let t = tokens(text);
    let mut out = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        if let (true, Some(name), Some(semi)) = (tok.text == "mod", t.get(i + 1), t.get(i + 2))
            && semi.text == ";"
        {
            out.push(name.text.clone());
        }
    }
    out
}

/// Every cycle among sibling modules (each group of modules that import each
/// other, with one cycle and every edge in the group), leaving out the
/// `ignored` edges between top-level modules.
fn cycles_of(root: &Path, ignored: &[(&str, &str)]) -> Vec<String> {
    let mods = modules(root);
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();
    // Per module: the names it re-exports from a child (`pub use child::x`).
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    // (module, (module named, segments after it), where)
    let mut refs: Vec<(ModPath, (ModPath, Vec<String>), String)> = Vec::new();
    for m in &mods {
        let text = strip(&std::fs::read_to_string(&m.file).unwrap());
        let toks = tokens(&text);
        let mut map = BTreeMap::new();
        for (i, t) in toks.iter().enumerate() {
            if t.text == "pub" && toks.get(i + 1).is_some_and(|u| u.text == "use") {
                for p in use_paths(&toks, i + 2) {
                    let child = [m.path.clone(), vec![p[0].clone()]].concat();
                    if p.len() >= 2 && known.contains(&child) {
                        map.insert(p.last().unwrap().clone(), p[0].clone());
                    }
                }
            }
        }
        reexports.insert(m.path.clone(), map);
        for (from, path, line) in paths(&toks, &m.path) {
            let at = format!("{}:{line}", m.file.display());
            if let Some(target) = resolve(&from, &path, &known) {
                refs.push((from, target, at));
            }
        }
    }
    // Follow re-exports: `crate::Fetcher` is `crate::fetch::Fetcher`.
    let refs: Vec<_> = refs
        .into_iter()
        .map(|(from, (mut target, rest), at)| {
            let mut rest = rest.into_iter();
            let child = rest
                .next()
                .and_then(|next| reexports.get(&target).and_then(|r| r.get(&next)));
            if let Some(child) = child {
                target.push(child.clone());
            }
            (from, target, at)
        })
        .collect();
    // Edges among the children of each module.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>> =
        BTreeMap::new();
    for (from, to, at) in refs {
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        let ignore = common == 0
            && from.len() > common
            && to.len() > common
            && ignored.contains(&(from[0].as_str(), to[0].as_str()));
        if ignore {
            eprintln!(
                "edge left out (TODO, see ALLOWED_EDGES): {} -> {} at {at}",
                from[0], to[0]
            );
            continue;
        }
        if from.len() > common && to.len() > common {
            graphs
                .entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .entry(to[common].clone())
                .or_insert(at);
        }
    }
    let mut out = Vec::new();
    for (parent, graph) in &graphs {
        let prefix = if parent.is_empty() {
            "crate".to_string()
        } else {
            format!("crate::{}", parent.join("::"))
        };
        for scc in components(graph) {
            if scc.len() < 2 {
                continue;
            }
            let cycle = one_cycle(graph, &scc);
            let mut line = format!("{prefix}: {}", cycle.join(" -> "));
            if scc.len() >= cycle.len() {
                let _ = write!(line, " (one of the cycles among {})", scc.join(", "));
            }
            // Every edge within the group, so that each can be looked at.
            for (from, to) in scc.iter().flat_map(|a| {
                graph[a]
                    .keys()
                    .filter(|b| scc.contains(b))
                    .map(move |b| (a, b))
            }) {
                let _ = write!(line, "\n      {from} -> {to} at {}", graph[from][to]);
            }
            out.push(line);
        }
    }
    out
}

/// The module a path names, and the segments after it: the deepest known
/// module along the path.
fn resolve(
    from: &[String],
    path: &[String],
    known: &BTreeSet<Vec<String>>,
) -> Option<(Vec<String>, Vec<String>)> {
    let mut base: Vec<String> = from.to_vec();
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            // A child module named without `self::` (edition 2018 paths).
            if !known.contains(&[from.to_vec(), vec![first.to_string()]].concat()) {
                return None;
            }
        }
    }
    let mut i = 0;
    while i < rest.len() && known.contains(&[base.clone(), vec![rest[i].clone()]].concat()) {
        base.push(rest[i].clone());
        i += 1;
    }
    Some((base, rest[i..].to_vec()))
}

/// Strongly connected components (Tarjan).
fn components(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(edges) = s.graph.get(v) {
            for w in edges.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            scc.sort();
            s.out.push(scc);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A shortest cycle through the first node of a component, `a -> b -> a`.
fn one_cycle(graph: &BTreeMap<String, BTreeMap<String, String>>, scc: &[String]) -> Vec<String> {
    let start = &scc[0];
    let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
            if !scc.contains(w) {
                continue;
            }
            if w == start {
                let mut cycle = vec![v.clone()];
                let mut at = v;
                while at != start {
                    at = prev[at];
                    cycle.push(at.clone());
                }
                cycle.reverse();
                cycle.push(start.clone());
                return cycle;
            }
            if !prev.contains_key(w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    unreachable!("a component of two or more nodes has a cycle")
}

struct Token {
    text: String,
    line: usize,
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                text: text[start..i].to_string(),
                line,
            });
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += ch.len_utf8();
        }
    }
    out
}

/// Every path of a file that starts with `crate`, `super`, `self` or an
/// identifier (resolved later), as (module it is in, segments, line).
/// Tracks inline modules (`mod tests { … }`), where `super` is the file's
/// module.
fn paths(toks: &[Token], file_module: &[String]) -> Vec<(Vec<String>, Vec<String>, usize)> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i].text;
        match t.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if toks.get(i + 2).is_some_and(|n| n.text == "{") => {
                inline.push((toks[i + 1].text.clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        let starts = is_ident(t)
            && (i == 0 || toks[i - 1].text != "::")
            && toks.get(i + 1).is_some_and(|n| n.text == "::");
        if starts {
            let module: Vec<String> = file_module
                .iter()
                .cloned()
                .chain(inline.iter().map(|(n, _)| n.clone()))
                .collect();
            let (list, end) = use_tree(toks, i);
            for p in list {
                out.push((module.clone(), p, toks[i].line));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

/// The paths of a `use` declaration's tree starting at token `i`.
fn use_paths(toks: &[Token], i: usize) -> Vec<Vec<String>> {
    use_tree(toks, i).0
}

/// Parses `a::b::{c, d::e}` from token `i`: the expanded paths and the
/// index after the tree.
fn use_tree(toks: &[Token], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    while let Some(t) = toks.get(i) {
        if is_ident(&t.text) {
            prefix.push(t.text.clone());
            i += 1;
            if toks.get(i).is_some_and(|n| n.text == "::") {
                i += 1;
                continue;
            }
            return (vec![prefix], i);
        }
        if t.text == "{" {
            let mut out = Vec::new();
            i += 1;
            loop {
                match toks.get(i).map(|t| t.text.as_str()) {
                    None => return (out, i),
                    Some("}") => return (out, i + 1),
                    Some(",") => i += 1,
                    Some(_) => {
                        let (inner, next) = use_tree(toks, i);
                        for p in inner {
                            out.push([prefix.clone(), p].concat());
                        }
                        i = if next == i { i + 1 } else { next };
                    }
                }
            }
        }
        // `*` or anything else ends the path.
        return (vec![prefix], i + usize::from(t.text == "*"));
    }
    (vec![prefix], i)
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// The source without comments, string and char literals (newlines kept,
/// so that lines still count).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_newlines = |s: &str, out: &mut String| {
        for _ in s.bytes().filter(|&c| c == b'\n') {
            out.push('\n');
        }
    };
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let (mut depth, mut j) = (0, 0);
            while j < rest.len() {
                if rest[j..].starts_with("/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with("*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            keep_newlines(&rest[..j], &mut out);
            i += j;
        } else if let Some(len) = raw_string(rest) {
            keep_newlines(&rest[..len], &mut out);
            out.push_str("\"\"");
            i += len;
        } else if b[i] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            keep_newlines(&rest[..j.min(rest.len())], &mut out);
            out.push_str("\"\"");
            i += (j + 1).min(rest.len());
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}'), or a lifetime.
            let mut chars = rest[1..].char_indices();
            let len = match chars.next() {
                Some((_, '\\')) => rest.get(3..).and_then(|r| r.find('\'')).map(|e| e + 4),
                Some((_, c)) if rest[1 + c.len_utf8()..].starts_with('\'') => {
                    Some(2 + c.len_utf8())
                }
                _ => None,
            };
            match len {
                Some(len) => {
                    out.push_str("' '");
                    i += len;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"…"`, `br#"…"#`) at the start of
/// `s`, if one is there.
fn raw_string(s: &str) -> Option<usize> {
    let after_b = s.strip_prefix('b').unwrap_or(s);
    let body = after_b.strip_prefix('r')?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    let open = body[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = open.find(&close)?;
    Some(s.len() - open.len() + end + close.len())
}
