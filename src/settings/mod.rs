//! Every setting, defined once ([`groups`]), and one layering rule for
//! every command that takes settings:
//!
//! built-in default < TOML file (`--config FILE`) < `SITEMAPD_*` environment variables < flags
//!
//! A setting has one name: the TOML key (in the table of its group, `store`
//! and `sites` at the top), the flag (`_` → `-`) and the environment
//! variable (`SITEMAPD_` + the name in capitals). clap reads the flags and
//! the environment (each setting's arg gets its `env`, [`with_env`]); the
//! values the user gave that way are merged by figment over the defaults and
//! the file. `--print-config` prints the result as commented TOML, the
//! comments being the flags' help.

mod groups;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command};
use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Value};
use sitemapd_discovery::Seed;

pub(crate) use groups::*;

/// `--config FILE` and `--print-config`, on every command that takes settings.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ConfigArgs {
    /// Settings file (TOML; every key optional, unknown keys refused). Environment variables
    /// `SITEMAPD_<SETTING>` override it, flags override both.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective settings (defaults < --config file < SITEMAPD_* environment <
    /// flags) as commented TOML, and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// The environment variable of the setting `id`.
pub(crate) fn env_name(id: &str) -> String {
    format!("SITEMAPD_{}", id.to_ascii_uppercase())
}

/// The ids of the settings `T` defines as args.
fn ids<T: Args>() -> Vec<String> {
    T::augment_args(Command::new("settings"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// `cmd` with an environment variable on every setting of `T`.
pub(crate) fn with_env<T: Args>(cmd: Command) -> Command {
    ids::<T>().into_iter().fold(cmd, |cmd, id| {
        let env = env_name(&id);
        cmd.mut_arg(id, |a| a.env(env))
    })
}

/// The settings of `T` the user gave as flags or environment variables
/// (clap's defaults left out), nested as in the file.
fn given<T: Settings>(parsed: &T, matches: &ArgMatches) -> Result<Dict> {
    let ids: HashSet<String> = ids::<T>().into_iter().collect();
    let given = |id: &str| {
        ids.contains(id)
            && matches!(
                matches.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
    };
    fn keep(dict: Dict, given: &dyn Fn(&str) -> bool) -> Dict {
        dict.into_iter()
            .filter_map(|(key, value)| match value {
                _ if given(&key) => Some((key, value)),
                Value::Dict(tag, inner) => {
                    let inner = keep(inner, given);
                    (!inner.is_empty()).then_some((key, Value::Dict(tag, inner)))
                }
                _ => None,
            })
            .collect()
    }
    match Value::serialize(parsed)? {
        Value::Dict(_, dict) => Ok(keep(dict, &given)),
        _ => anyhow::bail!("settings are not a table"),
    }
}

/// The layers: `T::default()`, the file, then `flags` (what the user gave
/// on the command line or in the environment).
fn figment<T: Settings>(file: Option<&Path>, flags: Dict) -> Result<Figment> {
    let mut figment = Figment::from(Serialized::defaults(T::default()));
    if let Some(path) = file {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        if meta.is_dir() {
            anyhow::bail!(
                "the config file {} is a directory, not a TOML file: give --config the path of a \
                 settings file (`--print-config` writes one)",
                path.display()
            );
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    Ok(figment.merge(Serialized::defaults(flags)))
}

/// The effective settings: `parsed` (clap's view of the flags and the
/// environment) layered over the file and the defaults, validated.
pub(crate) fn layer<T: Settings>(
    config: &ConfigArgs,
    parsed: &T,
    matches: &ArgMatches,
) -> Result<T> {
    let file = config.config.as_deref();
    let settings: T = figment::<T>(file, given(parsed, matches)?)?
        .extract()
        .map_err(|e| anyhow::anyhow!("{}", describe(e)))
        .with_context(|| match file {
            Some(path) => format!("bad setting in {}", path.display()),
            None => "bad setting".to_string(),
        })?;
    settings.validate().with_context(|| match file {
        Some(path) => format!(
            "bad setting (in {}, the environment or a flag)",
            path.display()
        ),
        None => "bad setting (in the environment or a flag)".to_string(),
    })?;
    Ok(settings)
}

/// What is wrong with the settings, one line per error: the key by its
/// dotted path, what was found and what was expected (the keys a table
/// takes, when a key is unknown).
fn describe(errors: figment::Error) -> String {
    use figment::error::Kind;
    let quoted = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    errors
        .into_iter()
        .map(|e| {
            let key = e.path.join(".");
            let table = match e.path.split_last() {
                Some((_, [])) | None => "at the top level".to_string(),
                Some((_, parents)) => format!("in [{}]", parents.join(".")),
            };
            match &e.kind {
                Kind::UnknownField(found, expected) => format!(
                    "unknown key `{found}` {table} (the keys there: {})",
                    quoted(expected)
                ),
                Kind::UnknownVariant(found, expected) => format!(
                    "`{key}`: unknown value `{found}`, expected one of {}",
                    quoted(expected)
                ),
                kind if key.is_empty() => kind.to_string(),
                kind => format!("`{key}`: {kind}"),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Layers the settings into `parsed`; with `--print-config`, prints them
/// and says so (the command has nothing more to do).
pub(crate) fn resolve<T: Settings>(
    config: &ConfigArgs,
    parsed: &mut T,
    matches: &ArgMatches,
) -> Result<bool> {
    *parsed = layer(config, parsed, matches)?;
    if config.print_config {
        print!("{}", to_toml(parsed)?);
        return Ok(true);
    }
    Ok(false)
}

/// What the tables are, for the printed file.
const TABLES: [(&str, &str); 9] = [
    ("api", "The daemon's HTTP API and its logs."),
    ("scheduler", "The crawl queue."),
    (
        "refresh",
        "How often the daemon re-reads robots.txt and sitemaps: a sitemap's interval halves when \
         a read finds a change and grows 1.5x when it does not, within [min_refresh_secs, \
         max_refresh_secs]; a failed fetch is retried after error_backoff_secs, doubling per \
         failure in a row.",
    ),
    (
        "walk",
        "How a site is walked (robots.txt, indexes, sitemaps).",
    ),
    ("parse", "How every fetched document is parsed."),
    ("fetch", "How documents (robots.txt, sitemaps) are fetched."),
    ("world", "The simulated web."),
    ("sitemap", "What the simulated hosts' sitemaps say."),
    ("crawl", "The simulated crawler."),
];

/// `settings` as a commented TOML file: every key preceded by its flag's
/// help, keys that are unset commented out.
pub(crate) fn to_toml<T: Settings>(settings: &T) -> Result<String> {
    let cmd = T::augment_args(Command::new("settings"));
    let help = |id: &str| {
        cmd.get_arguments()
            .find(|a| a.get_id() == id)
            .and_then(|a| a.get_long_help().or(a.get_help()))
            .map(|h| h.to_string())
    };
    // The keys, with every unset one, from the figment view (which keeps `None`).
    let Value::Dict(_, all) = Value::serialize(settings)? else {
        anyhow::bail!("settings are not a table");
    };
    let set = toml::Table::try_from(settings)?;
    let order: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let position = |key: &str| order.iter().position(|id| id == key).unwrap_or(usize::MAX);
    let sorted = |dict: &Dict| {
        let mut keys: Vec<&String> = dict.keys().collect();
        keys.sort_by_key(|k| position(k));
        keys.into_iter().cloned().collect::<Vec<_>>()
    };

    let mut out = String::from(
        "# sitemapd settings (--config FILE). Every key is optional; unknown keys are refused.\n\
         # Each key is also a flag (`_` -> `-`) and an environment variable\n\
         # (SITEMAPD_ + the key in capitals): defaults < this file < environment < flags.\n",
    );
    let mut tables = BTreeMap::new();
    let mut top = Vec::new();
    for key in sorted(&all) {
        match all.get(&key) {
            Some(Value::Dict(_, inner)) => {
                tables.insert(key.clone(), sorted(inner));
            }
            _ => top.push(key),
        }
    }
    let doc = |key: &str| help(key).or_else(|| (key == "sites").then(sites_help));
    for key in &top {
        write_key(&mut out, key, set.get(key), doc(key));
    }
    let mut names: Vec<&String> = tables.keys().collect();
    names.sort_by_key(|t| {
        let first = tables.get(*t).and_then(|keys| keys.first());
        first.map_or(usize::MAX, |k| position(k))
    });
    for name in names {
        out.push('\n');
        if let Some((_, about)) = TABLES.iter().find(|(t, _)| t == name) {
            comment(&mut out, about);
        }
        out.push_str(&format!("[{name}]\n"));
        let table = set.get(name.as_str()).and_then(|t| t.as_table());
        for key in tables.get(name).into_iter().flatten() {
            write_key(&mut out, key, table.and_then(|t| t.get(key)), help(key));
        }
    }
    Ok(out)
}

/// The doc of the daemon's `sites` key (it is no flag: SITE arguments add to it).
fn sites_help() -> String {
    "Sites to follow: \"example.com\", \"https://example.com/\", or a sitemap URL. The API \
     (POST /v1/sites) adds more; the store remembers them all. SITE arguments add to them."
        .to_string()
}

fn write_key(out: &mut String, key: &str, value: Option<&toml::Value>, help: Option<String>) {
    if let Some(help) = help {
        comment(out, &help);
    }
    match value {
        Some(v) => out.push_str(&format!("{key} = {v}\n")),
        None => out.push_str(&format!("# {key} =\n")),
    }
}

/// `text` as `#` lines of at most 90 columns.
fn comment(out: &mut String, text: &str) {
    for paragraph in text.lines() {
        let mut line = String::from("#");
        for word in paragraph.split_whitespace() {
            if line.len() + 1 + word.len() > 90 && line.len() > 1 {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    }
}

/// A host as the store keys hosts (`host[:port]`, lower case, an IDN as its
/// punycode), from a host name with a port if not the default one; `None`
/// for anything else (a path, a user, a scheme).
pub(crate) fn host_key(host: &str) -> Option<sitemapd_parser::HostKey> {
    let plain = !host.is_empty()
        && host.len() <= 255
        && !host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "/?#@\\%".contains(c));
    let url = sitemapd_parser::NormUrl::parse(&format!("https://{host}/")).ok()?;
    (plain && url.path() == "/").then(|| url.host_key())
}

/// The store key of a site: its seed, normalised.
pub(crate) fn site_key(input: &str) -> Result<String> {
    Ok(Seed::parse(input)
        .with_context(|| format!("{input:?} is not a site or a sitemap URL"))?
        .url()
        .to_string())
}

/// The seeds of a walk, each a site or a sitemap URL.
pub(crate) fn seeds<S: AsRef<str>>(inputs: &[S]) -> Result<Vec<Seed>> {
    inputs
        .iter()
        .map(|s| {
            let s = s.as_ref();
            if !s.contains("://") && std::path::Path::new(s).is_file() {
                anyhow::bail!(
                    "{s:?} is a file on this machine, not a site: sites are walked over HTTP. \
                     To read the file, `sitemapd parse {s}` (or `sitemapd ingest {s}` to store \
                     its URLs); for a host of that name, give its URL (https://{s}/)"
                );
            }
            Seed::parse(s).with_context(|| format!("{s:?} is not a site or a sitemap URL"))
        })
        .collect()
}

/// A tokio runtime for the commands that fetch: two workers (the parser
/// runs on the blocking pool beside them).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Now, in unix seconds.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
