//! Mode 3 (`cargo bench --bench daemon_api -- --frontier`): the daemon's two
//! crawler APIs side by side, on one store, in one run.
//!
//! The store is filled first, through the library (`Store::discover`, as a
//! URLFrontier PutDiscovered does): `--urls` URLs (default 1,000,000) over
//! `--url-hosts` hosts (1,000), all due now. The daemon then serves it with
//! `--urlfrontier-listen`, `--lease-delay 0` and SetDelay 0 (the politeness
//! spacing off: with it the figure is the spacing, not the API), and
//! windows of `--seconds` (10) alternate, `--rounds` (2) times:
//!
//! - URLFrontier: `--workers` (4) tasks, each on its own HTTP/2 connection,
//!   loop GetURLs (`--queues` 100 queues x `--per-queue` 10 URLs,
//!   delay_requestable 300 s), then one PutURLs stream with every URL as a
//!   known item (`fetch.statusCode` 304, refetchable a day later), read
//!   until every ack is in;
//! - HTTP (first in even rounds): the same number of threads loop `POST /v1/lease` (n = queues x
//!   per-queue, per_host = per-queue) then `POST /v1/complete`
//!   (not-modified), as the throughput mode does.
//!
//! Each round trip takes a batch of URLs out of the due queue for a day, so
//! the windows never serve a URL twice. `--fill-only DIR` keeps the filled
//! store in DIR and stops; `--from DIR` starts from a copy of it instead of
//! filling. Prints URLs/s through full round
//! trips and the round trips' p50/p99, per window and as a table.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sitemapd_scheduler::{DEFAULT_PARTITIONS, Store, StoreOptions, Timestamp};
use sitemapd_storebench::copy_dir;
use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};
use tonic::transport::Channel;

use super::{
    Batch, Daemon, Figures, TOKEN, arg, cpu_secs, loadavg, log_path, ms, percentiles,
    print_errors_and_target, window,
};

/// What one URLFrontier task did.
#[derive(Default)]
struct Stream {
    served: u64,
    acked_ok: u64,
    not_ok: u64,
    empty: u64,
    errors: Vec<String>,
    get_ms: Vec<f64>,
    put_ms: Vec<f64>,
    round_ms: Vec<f64>,
}

pub(crate) fn compare(args: &[String]) {
    let urls: usize = arg(args, "--urls").unwrap_or(1_000_000);
    let hosts: usize = arg(args, "--url-hosts").unwrap_or(1_000);
    let workers: usize = arg(args, "--workers").unwrap_or(4);
    let seconds: f64 = arg(args, "--seconds").unwrap_or(10.0);
    let rounds: usize = arg(args, "--rounds").unwrap_or(2);
    let queues: u32 = arg(args, "--queues").unwrap_or(100);
    let per_queue: u32 = arg(args, "--per-queue").unwrap_or(10);

    let store = tempfile::tempdir().unwrap();
    match args.iter().position(|a| a == "--from") {
        // A store filled by an earlier `--fill-only DIR`, copied: the
        // windows change what they serve.
        Some(i) => {
            let from = Path::new(&args[i + 1]);
            copy_dir(from, store.path());
            println!("store: a copy of {}", from.display());
        }
        None => {
            let partitions: u16 = arg(args, "--partitions").unwrap_or(DEFAULT_PARTITIONS);
            fill(store.path(), urls, hosts, partitions)
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--fill-only") {
        copy_dir(store.path(), Path::new(&args[i + 1]));
        println!("filled store kept in {}", args[i + 1]);
        return;
    }
    let (daemon, addr, runtime) = start(
        store.path(),
        &["--lease-delay", "0", "--per-host", "100000"],
        "frontier",
    );
    runtime.block_on(async {
        let mut c = client(addr).await;
        c.set_delay(proto::QueueDelayParams {
            key: String::new(),
            delay_requestable: 0,
            crawl_id: String::new(),
            local: false,
        })
        .await
        .unwrap();
    });
    let batch = Batch {
        n: (queues * per_queue) as usize,
        per_host: per_queue as usize,
    };
    let mut rows = Vec::new();
    // Which API goes first alternates: what one window leaves in the store
    // (emptied due lists, cold pages) the next one meets.
    for round in 1..=rounds {
        let http_first = round % 2 == 0;
        let mut http = None;
        if http_first {
            println!("\nround {round}, HTTP API first:");
            http = Some(window(&daemon, workers, seconds, batch));
        }
        println!("\nround {round}, URLFrontier:");
        let cpu = cpu_secs(daemon.pid());
        let m0 = daemon.api.metrics().unwrap();
        let grpc = runtime.block_on(grpc_window(addr, workers, seconds, queues, per_queue));
        let m1 = daemon.api.metrics().unwrap();
        // The daemon's own view: its rpc histograms' sums and counts.
        for rpc in ["GetURLs", "PutURLs"] {
            let delta = |what: &str| {
                let name = format!("sitemapd_urlfrontier_rpc_seconds_{what}");
                m1.by_label(&name, "rpc").get(rpc).copied().unwrap_or(0.0)
                    - m0.by_label(&name, "rpc").get(rpc).copied().unwrap_or(0.0)
            };
            println!(
                "  {rpc} in the daemon (/metrics): mean {:.1} ms over {} calls",
                delta("sum") / delta("count").max(1.0) * 1e3,
                delta("count")
            );
        }
        println!(
            "  daemon: {:.0}% of one core",
            (cpu_secs(daemon.pid()) - cpu) / seconds * 100.0
        );
        let http = http.unwrap_or_else(|| {
            println!("round {round}, HTTP API:");
            window(&daemon, workers, seconds, batch)
        });
        rows.push((grpc, http));
    }

    println!(
        "\n{urls} URLs over {hosts} hosts; {workers} client streams; {} URLs a round trip ({queues} queues x {per_queue})",
        batch.n
    );
    println!(
        "| round | URLFrontier URLs/s | round trip p50 / p99 | HTTP API URLs/s | round trip p50 / p99 | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, (mut g, mut h)) in rows.into_iter().enumerate() {
        println!(
            "| {} | {:.0} | {} | {:.0} | {} | {:.2} |",
            i + 1,
            g.urls_per_s,
            p50_p99(&mut g.round_ms),
            h.urls_per_s,
            p50_p99(&mut h.round_ms),
            g.urls_per_s / h.urls_per_s.max(1.0)
        );
    }
    println!();
    daemon.print_log_summary();
    let (took, status) = daemon.stop();
    println!(
        "daemon stopped {:.2} s after SIGTERM: {status}",
        took.as_secs_f64()
    );
}

/// The daemon on the store in `dir` with its URLFrontier service on
/// loopback (and `extra` arguments), logging to `log` in the temp
/// directory; the service's address, and a runtime for its clients.
pub(crate) fn start(
    dir: &Path,
    extra: &[&str],
    log: &str,
) -> (Daemon, SocketAddr, tokio::runtime::Runtime) {
    let args: Vec<String> = ["--urlfrontier-listen", "127.0.0.1:0"]
        .iter()
        .chain(extra)
        .map(|a| a.to_string())
        .collect();
    let daemon = Daemon::start(dir, &args, &[], log_path(log));
    let addr = daemon.frontier_addr();
    println!(
        "daemon pid {}: HTTP API on {}, URLFrontier on {addr}; load average {}",
        daemon.pid(),
        daemon.api.addr,
        loadavg()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    (daemon, addr, runtime)
}

/// `p50 / p99 ms` of round trips.
fn p50_p99(v: &mut [f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!("{:.1} / {:.1} ms", p(0.5), p(0.99))
}

/// A store of `urls` URLs over `hosts` hosts (each its own site), all due
/// now, in `partitions` partitions, written through the library in batches
/// of 10,000; closed before the daemon opens it.
pub(crate) fn fill(dir: &Path, urls: usize, hosts: usize, partitions: u16) {
    let t = Instant::now();
    let options = StoreOptions {
        partitions,
        ..StoreOptions::default()
    };
    let store = Store::open(dir, options).unwrap();
    let now = Timestamp::now();
    for start in (0..urls).step_by(10_000) {
        let batch = (start..(start + 10_000).min(urls)).map(|i| {
            let url = format!(
                "http://u{}-bench.test/catalog/section-{}/product-{i}.html",
                i % hosts,
                i % 97
            );
            (url, Vec::new())
        });
        store.discover(batch, now).unwrap();
    }
    store.flush().unwrap();
    println!(
        "store: {urls} URLs over {hosts} hosts in {} partitions discovered in {:.1} s",
        store.partitions(),
        t.elapsed().as_secs_f64()
    );
}

/// A client on its own connection, sending the bench's token.
pub(crate) async fn client(addr: SocketAddr) -> Client {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let auth: Auth = |mut req| {
        let bearer = format!("Bearer {TOKEN}").parse().unwrap();
        req.metadata_mut().insert("authorization", bearer);
        Ok(req)
    };
    UrlFrontierClient::with_interceptor(channel, auth)
}

/// `workers` tasks loop GetURLs then PutURLs for `seconds`; prints and
/// returns the figures.
async fn grpc_window(
    addr: SocketAddr,
    workers: usize,
    seconds: f64,
    queues: u32,
    per_queue: u32,
) -> Figures {
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..workers)
        .map(|_| tokio::spawn(stream(addr, deadline, queues, per_queue)))
        .collect();
    let mut done = Vec::new();
    for task in tasks {
        done.push(task.await.unwrap());
    }
    let window = t0.elapsed().as_secs_f64();
    let sum = |f: fn(&Stream) -> u64| done.iter().map(f).sum::<u64>();
    let gets = done.iter().map(|s| s.get_ms.len()).sum::<usize>();
    let acked = sum(|s| s.acked_ok);
    let mut get_ms: Vec<f64> = done.iter().flat_map(|s| s.get_ms.clone()).collect();
    let mut put_ms: Vec<f64> = done.iter().flat_map(|s| s.put_ms.clone()).collect();
    let round_ms: Vec<f64> = done.iter().flat_map(|s| s.round_ms.clone()).collect();
    let errors: Vec<&String> = done.iter().flat_map(|s| &s.errors).collect();
    println!(
        "  {window:.2} s, {workers} streams, GetURLs {queues} queues x {per_queue}, PutURLs known (304, a day later)"
    );
    println!(
        "  {:.0} URLs/s through GetURLs + PutURLs ({acked} acked OK, {} served in {gets} GetURLs: {:.1} a call; {} not OK, {} empty, {} errors)",
        acked as f64 / window,
        sum(|s| s.served),
        sum(|s| s.served) as f64 / gets.max(1) as f64,
        sum(|s| s.not_ok),
        sum(|s| s.empty),
        errors.len()
    );
    println!("  GetURLs:  {}", percentiles(&mut get_ms));
    println!("  PutURLs:  {}", percentiles(&mut put_ms));
    print_errors_and_target(&errors, acked as f64 / window, 20_000.0);
    Figures {
        urls_per_s: acked as f64 / window,
        round_ms,
    }
}

/// One client stream's loop until `deadline` (its last round trip
/// finished).
async fn stream(addr: SocketAddr, deadline: Instant, queues: u32, per_queue: u32) -> Stream {
    let mut c = client(addr).await;
    let mut s = Stream::default();
    while Instant::now() < deadline {
        let t = Instant::now();
        let params = proto::GetParams {
            max_urls_per_queue: per_queue,
            max_queues: queues,
            key: String::new(),
            delay_requestable: 300,
            item: None,
        };
        let served = match get_urls(&mut c, params).await {
            Ok(served) => served,
            Err(e) => {
                s.errors.push(e);
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        s.get_ms.push(ms(t));
        if served.is_empty() {
            s.empty += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        s.served += served.len() as u64;
        let put = Instant::now();
        match put_known(&mut c, served).await {
            Ok((ok, not_ok)) => {
                s.acked_ok += ok;
                s.not_ok += not_ok;
            }
            Err(e) => s.errors.push(e),
        }
        s.put_ms.push(ms(put));
        s.round_ms.push(ms(t));
    }
    s
}

/// Adds the bench's token to a call.
pub(crate) type Auth = fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>;
pub(crate) type Client =
    UrlFrontierClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

/// One GetURLs: the URLs it served.
async fn get_urls(c: &mut Client, params: proto::GetParams) -> Result<Vec<proto::UrlInfo>, String> {
    let mut stream = c
        .get_ur_ls(params)
        .await
        .map_err(|e| format!("GetURLs: {e}"))?
        .into_inner();
    let mut served = Vec::new();
    while let Some(info) = stream
        .message()
        .await
        .map_err(|e| format!("GetURLs: {e}"))?
    {
        served.push(info);
    }
    Ok(served)
}

/// One PutURLs stream with every URL known (not modified, refetchable a day
/// later): (acked OK, acked otherwise).
async fn put_known(c: &mut Client, served: Vec<proto::UrlInfo>) -> Result<(u64, u64), String> {
    let refetch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let items: Vec<proto::UrlItem> = served
        .into_iter()
        .map(|mut info| {
            info.metadata = [(
                "fetch.statusCode".to_string(),
                proto::StringList {
                    values: vec!["304".into()],
                },
            )]
            .into();
            proto::UrlItem {
                id: info.url.clone(),
                creation_date: 0,
                item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
                    info: Some(info),
                    refetchable_from_date: refetch,
                })),
            }
        })
        .collect();
    let mut acks = c
        .put_ur_ls(tokio_stream::iter(items))
        .await
        .map_err(|e| format!("PutURLs: {e}"))?
        .into_inner();
    let (mut ok, mut not_ok) = (0, 0);
    while let Some(ack) = acks.message().await.map_err(|e| format!("PutURLs: {e}"))? {
        if ack.status == Ack::Ok as i32 {
            ok += 1;
        } else {
            not_ok += 1;
        }
    }
    Ok((ok, not_ok))
}
