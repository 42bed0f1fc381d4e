//! The docs describe the product: no development history in them or in
//! the code's comments, every `sitemapd` command they quote in a code
//! block still parses (the binary takes its subcommand and flags), and CI
//! runs the test command the README gives.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every file under `dir` (recursively) with one of `extensions`, outside
/// build output and version control.
fn files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | ".git" | "corpus" | "node_modules") {
                files(&path, extensions, out);
            }
        } else if extensions
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            out.push(path);
        }
    }
}

/// Words that tell how the project was built rather than what it does: an
/// issue or development stop by number, "the issue's …".
fn history_word(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    for word in ["issue", "stop"] {
        let mut rest = lower.as_str();
        while let Some(at) = rest.find(word) {
            let after = &rest[at + word.len()..];
            let before = rest[..at].chars().next_back();
            let starts_word = before.is_none_or(|c| !c.is_alphanumeric());
            let number = after
                .trim_start_matches([' ', '#'])
                .starts_with(|c: char| c.is_ascii_digit());
            if starts_word && (number || (word == "issue" && after.starts_with("'s"))) {
                return Some(if word == "issue" {
                    "an issue of the project"
                } else {
                    "a development stop"
                });
            }
            rest = &rest[at + word.len()..];
        }
    }
    for phrase in [
        "the issue asks",
        "the issue gives",
        "as the issue",
        "development stop",
    ] {
        if lower.contains(phrase) {
            return Some("an issue of the project");
        }
    }
    None
}

#[test]
fn no_development_history_in_docs_or_comments() {
    let root = Path::new(ROOT);
    let mut all = Vec::new();
    files(root, &["md", "rs", "toml", "py", "sh"], &mut all);
    assert!(all.len() > 100, "only {} files found", all.len());
    let mut found = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(root).unwrap();
        // What changed between versions is the changelog's subject; this
        // file names the words it looks for.
        if rel == Path::new("CHANGELOG.md") || rel == Path::new(file!()) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if let Some(what) = history_word(line) {
                found.push(format!(
                    "{}:{}: {what}: {}",
                    rel.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "development history in docs or comments (history lives in git and CHANGELOG.md):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_history_check_finds_what_it_looks_for() {
    for line in [
        "as issue 17 asked",
        "/// Issue 17, point 7: behind a proxy",
        "the figures of stop 28",
        "the issue's targets",
        "(see issue #4)",
    ] {
        assert!(history_word(line).is_some(), "{line}");
    }
    for line in [
        "an ingest session writes",
        "stops after 50,000 entries",
        "sled's open issue spacejam/sled#1333",
        "the daemon stops on SIGTERM",
        "backstop 3",
    ] {
        assert!(history_word(line).is_none(), "{line}");
    }
}

/// The `sitemapd` commands quoted in `text`: in fenced shell blocks
/// (`sh`, `bash`, `shell`, `console`), and after a `$ ` prompt in untagged
/// blocks (whose other lines are usage synopses and trees); each as its
/// line and arguments. Synopses with `[…]` or `<…>` are left out.
fn quoted_commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut block: Option<&str> = None; // Some(the block's tag)
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(tag) = trimmed.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(tag.trim()),
            };
            continue;
        }
        let shell = matches!(block, Some("sh" | "bash" | "shell" | "console"));
        let prompted = block == Some("") && trimmed.starts_with("$ ");
        if !(shell || prompted) {
            continue;
        }
        // A command line ends at a comment, a pipe, a redirection or a
        // second command.
        let mut command = trimmed.trim_start_matches("$ ");
        for end in [" #", " |", " >", " &&", " 2>"] {
            if let Some(at) = command.find(end) {
                command = &command[..at];
            }
        }
        let words = split_words(command);
        // Environment settings before the program.
        let start = words.iter().position(|w| !is_assignment(w));
        let Some(start) = start else { continue };
        if words[start] != "sitemapd" || command.contains(" [") || command.contains('<') {
            continue;
        }
        out.push((i + 1, words[start + 1..].to_vec()));
    }
    out
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// Shell words: split on spaces, single and double quotes kept together.
fn split_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote) = (Vec::new(), String::new(), None);
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, ' ' | '\t') => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[test]
fn every_command_the_docs_quote_parses() {
    let root = Path::new(ROOT);
    let mut docs = vec![root.join("README.md"), root.join("RELIABILITY.md")];
    files(&root.join("docs"), &["md"], &mut docs);
    files(&root.join("crates"), &["md"], &mut docs);
    let mut checked = 0;
    let mut failed = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap_or_default();
        for (line, args) in quoted_commands(&text) {
            // `--help` after the arguments: clap checks every one of them
            // (an unknown flag or subcommand is an error, exit 2) and then
            // prints the help instead of running.
            let out = Command::new(env!("CARGO_BIN_EXE_sitemapd"))
                .args(&args)
                .arg("--help")
                .env_remove("SITEMAPD_TOKEN")
                .output()
                .unwrap();
            checked += 1;
            if !out.status.success() {
                failed.push(format!(
                    "{}:{line}: sitemapd {}: {}",
                    doc.strip_prefix(root).unwrap().display(),
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    assert!(checked >= 10, "only {checked} commands found in the docs");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn quoted_commands_are_found_and_split() {
    let text = "```sh\nSITEMAPD_TOKEN=x sitemapd daemon a.example --urlfrontier-listen 127.0.0.1:7071   # API\n\
                sitemapd queue -n 5 | head\ncargo test\n```\n```\nsitemapd stats [--check]\n\
                sitemapd complete       outcomes on stdin\n$ sitemapd export\n```\n\
                ```rust\nsitemapd nope\n```\n";
    assert_eq!(
        quoted_commands(text),
        [
            (
                2,
                [
                    "daemon",
                    "a.example",
                    "--urlfrontier-listen",
                    "127.0.0.1:7071"
                ]
                .map(String::from)
                .to_vec()
            ),
            (3, ["queue", "-n", "5"].map(String::from).to_vec()),
            (9, vec!["export".to_string()])
        ]
    );
    assert_eq!(split_words(r#"a "b c" 'd'"#), ["a", "b c", "d"]);
}

/// The command of the first `sh` code block of the README's section
/// `heading`, or `None`.
fn section_command(readme: &str, heading: &str) -> Option<String> {
    let section = readme.split("\n## ").find(|s| s.starts_with(heading))?;
    let block = section.split("```sh\n").nth(1)?.split("```").next()?;
    Some(block.trim().to_string())
}

/// `.ci/run` runs the README's test command and nothing else (besides
/// setting up its shell: `set`, `cd`), so CI's verdict is that
/// command's.
#[test]
fn ci_runs_the_readmes_test_command() {
    let root = Path::new(ROOT);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = section_command(&readme, "Tests\n").expect("a sh block in the README's Tests");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let lines: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(lines.contains(&"set -euo pipefail"), "{ci}");
    let commands: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !["set ", "cd "].iter().any(|p| l.starts_with(p)))
        .collect();
    assert_eq!(commands, [command.as_str()], ".ci/run:\n{ci}");
}

#[test]
fn a_sections_command_is_found() {
    let text = "# T\n\n## Tests\n\nRun:\n\n```sh\nscripts/x.sh\n```\n\n## Next\n\n```sh\nno\n```\n";
    assert_eq!(
        section_command(text, "Tests\n").as_deref(),
        Some("scripts/x.sh")
    );
    assert_eq!(section_command(text, "Other\n"), None);
}
