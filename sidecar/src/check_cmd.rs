//! `email-verdict check [FILE]`: verdicts in bulk without a server or a key. One input per line
//! (standard input without FILE), one output line per input, in order: the lookup record (JSON
//! lines) or a CSV row; an invalid line gets its error in its own output line.
//!
//! Streams: at most `--concurrency` lookups under way and that many results waiting to be
//! written in order, whatever the file's size; lines longer than [`MAX_LINE`] are an error
//! (skipped to their end, never held). Lookups go through the server's own path (MX cache with
//! single flight, lists, the verdict rules), so a domain that repeats is resolved once while it
//! is in the cache. Ctrl-C stops reading; every line written is whole.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use email_verdict_core::{BatchItem, Catalog, ErrorCode, LookupInput, LookupRecord};
use futures::StreamExt;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use crate::clock::SystemClock;
use crate::config::ServeArgs;
use crate::dns::{HickoryResolver, MxCache, MxResolver};
use crate::lists::{LiveCatalog, offline_catalog};
use crate::metrics::Metrics;
use crate::state::{self, StateStore};
use crate::usage_error;
use crate::verdicts::{LookupError, SharedResult, Verdicts};

mod progress;

use progress::Progress;

/// Longer lines cannot be an email address (254 octets) or a domain; they are not buffered.
const MAX_LINE: usize = 4096;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// One domain or email per line [default: standard input]
    pub file: Option<PathBuf>,
    /// Nameserver ADDR[:PORT] to query instead of the system resolver; repeatable
    #[arg(long, env = "EMAIL_VERDICT_DNS", value_name = "ADDR[:PORT]", value_delimiter = ',')]
    pub dns: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Lookups under way at once
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Settings file (TOML, as for serve): its lists and DNS settings apply
    #[arg(long, env = "EMAIL_VERDICT_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// State store whose reviewer decisions and mail-server index apply, read only [default: a
    /// temporary one, which learns during the run]
    #[arg(long, value_name = "URL")]
    pub state: Option<String>,
    /// Distinct domains whose answers are kept: a repeat among them is not resolved again, and
    /// memory stays flat once they are [default: 100000, or the --config file's]
    #[arg(long, value_name = "N")]
    pub cache_size: Option<usize>,
    /// A domain that certainly has mail servers, asked once before the run: a resolver that
    /// says it does not exist (a sandbox, a captive network) would make every domain `safe`
    #[arg(long, value_name = "DOMAIN", default_value = "gmail.com")]
    pub resolver_check: String,
    /// Skip that check
    #[arg(long)]
    pub no_resolver_check: bool,
}

/// Asks the resolver about a domain that has mail servers: an answer that it does not exist or
/// has none stops the run (every verdict would be a lie); a resolver that does not answer is
/// only warned about (every line then says so itself).
async fn check_resolver(resolver: &dyn MxResolver, name: &str) -> anyhow::Result<()> {
    let domain =
        email_verdict_core::Domain::parse(name).map_err(|e| usage_error(format!("--resolver-check {name:?}: {e}")))?;
    match resolver.resolve(&domain).await {
        Ok(answer) if answer.mx.has_mx() => Ok(()),
        Ok(answer) => Err(anyhow::anyhow!(
            "the resolver says {name} {}, which cannot be true: its answers would make every domain `safe`. \
             Point --dns at a resolver that answers for real domains, or pass --no-resolver-check \
             (or --resolver-check NAME with a domain it serves)",
            if answer.mx.domain_exists() { "has no mail servers" } else { "does not exist" }
        )),
        Err(e) => {
            eprintln!(
                "email-verdict: warning: the resolver did not answer for {name} ({e}); lines it cannot answer get an error"
            );
            Ok(())
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
}

pub async fn run(args: CheckArgs) -> anyhow::Result<()> {
    let settings = ServeArgs {
        dns: args.dns.clone(),
        config: args.config.clone(),
        cache_size: args.cache_size,
        ..Default::default()
    }
    .resolve()?;
    let (store, temporary) = store(args.state.as_deref())?;
    // A store this run created holds no reviewer decision: reading one per line would only cost.
    let shared_state = temporary.is_none();
    let metrics = Arc::new(Metrics::new());
    let resolver =
        Arc::new(HickoryResolver::new(&settings.resolver, metrics.clone()).context("cannot set up the DNS resolver")?);
    if !args.no_resolver_check {
        check_resolver(&*resolver, &args.resolver_check).await?;
    }
    let verdicts = Verdicts::new(
        // The lists as they are now (files, kept copies of URL lists): a run does not reload.
        Arc::new(LiveCatalog::fixed(Catalog::clone(&*offline_catalog(&settings.lists)?))),
        MxCache::new(resolver, settings.cache.clone(), metrics.clone()),
        store,
        Arc::new(SystemClock),
        settings.infra_threshold,
        metrics,
    );
    // A server's store (`--state`) is read for its decisions and its index, never written: a list
    // checked against it must not fill its review queue. The run's own store learns as it goes.
    let verdicts = if shared_state { verdicts.read_only() } else { verdicts };
    let (reader, size): (Box<dyn AsyncBufRead + Unpin + Send>, Option<u64>) = match &args.file {
        Some(path) => {
            let file = tokio::fs::File::open(path)
                .await
                .map_err(|e| usage_error(format!("cannot read {}: {e}", path.display())))?;
            let size = file.metadata().await.ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 16, file)), size)
        }
        None => (Box::new(BufReader::new(tokio::io::stdin())), None),
    };
    let mut progress = Progress::new(size);
    let mut out = Output::new(args.format)?;
    let lines = futures::stream::unfold(reader, |mut r| async move {
        match read_line(&mut r).await {
            Ok(Some(line)) => Some((Ok(line), r)),
            Ok(None) => None,
            Err(e) => Some((Err(e), r)),
        }
    });
    let verdicts = &verdicts;
    let results = lines
        .map(|line| async move {
            match line {
                Ok(line) => Ok((line.consumed, judge(verdicts, shared_state, line.text).await)),
                Err(e) => Err(e),
            }
        })
        .buffered(args.concurrency as usize);
    tokio::pin!(results);
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            item = results.next() => match item {
                Some(Ok((consumed, item))) => {
                    out.write(&item)?;
                    progress.written(consumed, &item);
                }
                Some(Err(e)) => {
                    out.finish()?;
                    let written = progress.lines();
                    progress.finish(Some("stopped by a read error"));
                    return Err(anyhow::Error::new(e).context(format!("reading the input after {written} lines")));
                }
                None => break,
            },
            _ = &mut interrupt => {
                out.finish()?;
                let written = progress.lines();
                progress.finish(Some("interrupted"));
                anyhow::bail!("interrupted: {written} lines written, each whole");
            }
        }
    }
    out.finish()?;
    progress.finish(None);
    Ok(())
}

/// The store whose reviewer decisions apply, or a temporary one (removed with the guard).
fn store(url: Option<&str>) -> anyhow::Result<(Arc<dyn StateStore>, Option<TempState>)> {
    if let Some(url) = url {
        return Ok((state::open(url)?, None));
    }
    let temp = TempState::create(&std::env::temp_dir())?;
    let store = state::open(&format!("sqlite:{}", temp.db.display()))?;
    Ok((store, Some(temp)))
}

/// The run's own store: `state.db` in a directory only this user can enter, made for this run
/// under a random name. A file someone planted at a predictable name (issue 23: the old
/// `/tmp/email-verdict-check-<pid>.db`, whose mail-server index turned a domain disposable)
/// is never opened: the directory is created, never reused (`mkdir` fails on any existing
/// name, a symbolic link included), and the database file in it is created, never opened.
struct TempState {
    dir: PathBuf,
    db: PathBuf,
}

impl TempState {
    fn create(base: &std::path::Path) -> anyhow::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let mut last = None;
        // A clash with a random name is someone's planted directory (or astronomically rare):
        // another name is tried, a few times.
        for _ in 0..8 {
            let dir = base.join(format!("email-verdict-check-{}", uuid::Uuid::new_v4().simple()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let temp = Self { db: dir.join("state.db"), dir };
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&temp.db)
                        .with_context(|| format!("cannot create {}", temp.db.display()))?;
                    return Ok(temp);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e).with_context(|| format!("cannot create a directory in {}", base.display())),
            }
        }
        Err(anyhow::anyhow!("cannot create a private directory in {}: {:?}", base.display(), last))
    }
}

impl Drop for TempState {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One input line: its text (without the line end) and how many bytes it took in the input.
struct Line {
    text: Result<String, &'static str>,
    consumed: u64,
}

/// The next line, bounded by [`MAX_LINE`] (a longer one is skipped to its end); `None` at the
/// end of the input.
async fn read_line(r: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Option<Line>> {
    let mut bytes = Vec::new();
    let mut consumed = 0u64;
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            if consumed == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        if !too_long && bytes.len() + chunk.len() <= MAX_LINE + 2 {
            bytes.extend_from_slice(chunk);
        } else {
            too_long = true;
            bytes.clear();
        }
        let n = chunk.len();
        consumed += n as u64;
        r.consume(n);
        if done {
            break;
        }
    }
    while matches!(bytes.last(), Some(b'\n' | b'\r')) {
        bytes.pop();
    }
    let text = if too_long {
        Err("the line is longer than 4096 bytes")
    } else {
        String::from_utf8(bytes).map_err(|_| "the line is not UTF-8")
    };
    Ok(Some(Line { text, consumed }))
}

/// The record of one line, or its error; the reviewer's decision is read when `shared_state`.
async fn judge(verdicts: &Verdicts, shared_state: bool, line: Result<String, &'static str>) -> BatchItem {
    let raw = match line {
        Ok(raw) => raw,
        Err(why) => return BatchItem::error("", ErrorCode::InvalidInput, why),
    };
    let input = match LookupInput::parse(raw.trim()) {
        Ok(input) => input,
        Err(e) => return BatchItem::error(raw, ErrorCode::InvalidInput, e.to_string()),
    };
    let verdict = async {
        let decision = if shared_state { verdicts.decision(input.domain()).await? } else { None };
        verdicts.verdict(&input, decision).await
    };
    match verdict.await {
        Ok(judged) => BatchItem::Record(Box::new(
            crate::verdicts::record(&raw, &input, judged).map_result(SharedResult::into_owned),
        )),
        Err(LookupError::Dns(e)) => BatchItem::error(raw, ErrorCode::InternalError, format!("DNS: {e}")),
        Err(LookupError::Store(e)) => BatchItem::error(raw, ErrorCode::InternalError, format!("state store: {e}")),
    }
}

/// Standard output, one whole line per item.
enum Output {
    Jsonl(std::io::BufWriter<std::io::Stdout>),
    Csv(Box<csv::Writer<std::io::Stdout>>),
}

/// The CSV columns. New columns go at the end, so that a reader by position keeps working.
const CSV_HEADER: [&str; 24] = [
    "input",
    "input_type",
    "email",
    "domain",
    "verdict",
    "free_provider",
    "business_email",
    "shared_mx",
    "has_mx",
    "domain_exists",
    "mx_records",
    "review_required",
    "allowlisted",
    "blocked",
    "mx_ip_match",
    "did_you_mean",
    "normalized_email",
    "role_account",
    "relay",
    "provider",
    "domain_age_days",
    "error",
    "error_message",
    "subaddressed",
];

/// Where `error` stands in [`CSV_HEADER`] (`error_message` follows it).
const ERROR_COLUMN: usize = 21;

impl Output {
    fn new(format: Format) -> anyhow::Result<Self> {
        Ok(match format {
            Format::Jsonl => Self::Jsonl(std::io::BufWriter::new(std::io::stdout())),
            Format::Csv => {
                let mut w = csv::Writer::from_writer(std::io::stdout());
                w.write_record(CSV_HEADER)?;
                Self::Csv(Box::new(w))
            }
        })
    }

    fn write(&mut self, item: &BatchItem) -> anyhow::Result<()> {
        match self {
            Self::Jsonl(w) => {
                let mut line = serde_json::to_vec(item)?;
                line.push(b'\n');
                w.write_all(&line)?;
            }
            Self::Csv(w) => {
                let mut row = csv_row(item);
                row.iter_mut().for_each(spreadsheet_safe);
                w.write_record(&row)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        match self {
            Self::Jsonl(w) => w.flush()?,
            Self::Csv(w) => w.flush()?,
        }
        Ok(())
    }
}

/// A cell a spreadsheet shows as text, never runs as a formula. Inputs come from signup forms, so
/// from anyone, and `=HYPERLINK(...)@x.example` or `+cmd|...` is a valid email: a cell starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (OWASP's advice for CSV
/// injection), which spreadsheets hide. JSON lines carry every value unchanged.
fn spreadsheet_safe(cell: &mut String) {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        cell.insert(0, '\'');
    }
}

fn csv_row(item: &BatchItem) -> Vec<String> {
    match item {
        BatchItem::Record(r) => record_row(r),
        BatchItem::Error { input, error } => {
            let mut row = vec![String::new(); CSV_HEADER.len()];
            row[0] = input.clone();
            row[ERROR_COLUMN] = error.code.as_str().to_owned();
            row[ERROR_COLUMN + 1] = error.message.clone();
            row
        }
    }
}

fn record_row(r: &LookupRecord) -> Vec<String> {
    let v = &r.result;
    let b = |x: bool| x.to_string();
    let input_type = serde_json::to_value(r.input_type).ok().and_then(|t| t.as_str().map(str::to_owned));
    let verdict = serde_json::to_value(v.verdict).ok().and_then(|t| t.as_str().map(str::to_owned));
    vec![
        r.input.clone(),
        input_type.unwrap_or_default(),
        r.email.clone(),
        r.domain.clone(),
        verdict.unwrap_or_default(),
        b(v.free_provider),
        b(v.business_email),
        b(v.shared_mx),
        b(v.has_mx),
        b(v.domain_exists),
        v.mx_records.join(" "),
        b(v.review_required),
        b(v.allowlisted),
        b(v.blocked),
        b(v.mx_ip_match),
        r.did_you_mean.clone().unwrap_or_default(),
        r.details.normalized_email.clone(),
        b(r.details.role_account),
        b(r.details.relay),
        r.details.provider.clone().unwrap_or_default(),
        r.details.domain_age_days.map(|d| d.to_string()).unwrap_or_default(),
        String::new(),
        String::new(),
        b(r.details.subaddressed),
    ]
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn error_columns_are_where_the_header_says_and_new_columns_come_last() {
        assert_eq!(&CSV_HEADER[ERROR_COLUMN..ERROR_COLUMN + 2], ["error", "error_message"]);
        assert_eq!(CSV_HEADER.last(), Some(&"subaddressed"));
    }

    #[test]
    fn the_temporary_store_is_new_private_and_removed() {
        let base = std::env::temp_dir().join(format!("ev-check-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&base).unwrap();
        // What the old code opened: a file at the predictable name is left alone.
        let planted = base.join(format!("email-verdict-check-{}.db", std::process::id()));
        std::fs::write(&planted, b"planted").unwrap();
        let (a, b) = (TempState::create(&base).unwrap(), TempState::create(&base).unwrap());
        assert_ne!(a.dir, b.dir);
        for t in [&a, &b] {
            let meta = std::fs::symlink_metadata(&t.dir).unwrap();
            assert!(meta.is_dir() && meta.permissions().mode() & 0o777 == 0o700, "{:o}", meta.permissions().mode());
            assert_eq!(std::fs::metadata(&t.db).unwrap().len(), 0, "a database file of its own, empty");
        }
        let dir = a.dir.clone();
        drop(a);
        assert!(!dir.exists(), "removed at the end of the run");
        assert_eq!(std::fs::read(&planted).unwrap(), b"planted");
        drop(b);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
