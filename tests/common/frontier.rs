//! What the tests of the URLFrontier service share: a daemon with the
//! service on loopback, the generated client with the token, and the
//! messages a crawler sends.

use std::collections::HashMap;

use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};
use tonic::Request;
use tonic::transport::Channel;

use super::daemon::Daemon;

/// What the client adds to every call: the token.
pub(crate) type Auth = Box<dyn FnMut(Request<()>) -> Result<Request<()>, tonic::Status> + Send>;
pub(crate) type Client =
    UrlFrontierClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Whether this test binary runs [`frontier_daemon`]'s daemons as
/// one-node clusters, each on a NATS server of its own: the binary
/// `urlfrontier_protocol_cluster` runs the protocol's tests that way.
fn in_cluster() -> bool {
    env!("CARGO_CRATE_NAME") == "urlfrontier_protocol_cluster"
}

/// `sitemapd daemon` on a store in `dir` with the URLFrontier service on
/// loopback (and `extra` arguments), and the service's address; without a
/// lease delay unless `extra` sets one, so that the protocol's own rules
/// (the queue delay, `max_urls_per_queue`) are what spaces a queue's URLs,
/// as in the reference service. A one-node cluster in the binary
/// [`in_cluster`] names, once the node serves its partitions.
pub(crate) fn frontier_daemon(dir: &tempfile::TempDir, extra: &[&str]) -> (Daemon, String) {
    let no_lease_delay: &[&str] = if extra.contains(&"--lease-delay") {
        &[]
    } else {
        &["--lease-delay", "0"]
    };
    let nats = in_cluster().then(|| sitemapd_testsite::nats::NatsCluster::start(1));
    let cluster = match &nats {
        Some(nats) => vec![
            "--cluster".to_string(),
            nats.url(0),
            "--node-id".into(),
            "n1".into(),
            "--cluster-replicas".into(),
            "1".into(),
        ],
        None => Vec::new(),
    };
    let cluster: Vec<&str> = cluster.iter().map(String::as_str).collect();
    let args = [
        &["--urlfrontier-listen", "127.0.0.1:0"][..],
        no_lease_delay,
        &cluster,
        extra,
    ]
    .concat();
    let mut d = Daemon::start(&dir.path().join("store"), &args);
    let addr = frontier_addr(&d);
    if let Some(nats) = nats {
        d.keep(nats);
        d.wait_for("the node to serve its partitions", |d| {
            d.log().contains("partition taken over: served")
        });
    }
    (d, addr)
}

/// The address the daemon's URLFrontier service listens on, from its log.
pub(crate) fn frontier_addr(d: &Daemon) -> String {
    let mut addr = String::new();
    d.wait_for("the URLFrontier service", |d| {
        let log = d.log();
        let Some(at) = log.find("URLFrontier service listening on ") else {
            return false;
        };
        let rest = &log[at + "URLFrontier service listening on ".len()..];
        addr = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        true
    });
    addr
}

pub(crate) async fn client(addr: &str, token: Option<&'static str>) -> Client {
    try_client(addr, token).await.unwrap()
}

/// [`client`], or why it could not connect.
pub(crate) async fn try_client(addr: &str, token: Option<&'static str>) -> Result<Client, String> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))?;
    let auth: Auth = Box::new(move |mut req: Request<()>| {
        if let Some(t) = token {
            req.metadata_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        Ok(req)
    });
    Ok(UrlFrontierClient::with_interceptor(channel, auth))
}

/// No delay between two servings of a queue (SetDelay, no key), for the
/// tests.
pub(crate) async fn no_delay(c: &mut Client) {
    c.set_delay(proto::QueueDelayParams {
        key: String::new(),
        delay_requestable: 0,
        crawl_id: String::new(),
        local: false,
    })
    .await
    .unwrap();
}

pub(crate) async fn set_active(c: &mut Client, state: bool) {
    let active = proto::Active {
        state,
        local: false,
    };
    c.set_active(active).await.unwrap();
}

pub(crate) fn info(url: &str, crawl: &str, meta: &[(&str, &str)]) -> proto::UrlInfo {
    proto::UrlInfo {
        url: url.into(),
        key: String::new(),
        metadata: meta
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    proto::StringList {
                        values: vec![v.to_string()],
                    },
                )
            })
            .collect(),
        crawl_id: crawl.into(),
    }
}

pub(crate) fn discovered(url: &str, crawl: &str) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(info(url, crawl, &[("depth", "1")])),
            },
        )),
        id: String::new(),
        creation_date: 0,
    }
}

pub(crate) fn known(url: &str, crawl: &str, date: u64, meta: &[(&str, &str)]) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
            info: Some(info(url, crawl, meta)),
            refetchable_from_date: date,
        })),
        id: String::new(),
        creation_date: 0,
    }
}

/// PutURLs of `items` on one stream: the acks by id.
pub(crate) async fn put(c: &mut Client, items: Vec<proto::UrlItem>) -> HashMap<String, Ack> {
    let n = items.len();
    let mut acks = c
        .put_ur_ls(tokio_stream::iter(items))
        .await
        .unwrap()
        .into_inner();
    let mut out = HashMap::new();
    while let Some(ack) = acks.message().await.unwrap() {
        out.insert(ack.id, Ack::try_from(ack.status).unwrap());
    }
    assert_eq!(out.len(), n, "one ack per item");
    out
}

pub(crate) fn get(
    max_per_queue: u32,
    max_queues: u32,
    key: &str,
    crawl: Option<&str>,
) -> proto::GetParams {
    proto::GetParams {
        max_urls_per_queue: max_per_queue,
        max_queues,
        key: key.into(),
        delay_requestable: 0,
        item: Some(match crawl {
            Some(c) => proto::get_params::Item::CrawlId(c.into()),
            None => proto::get_params::Item::AnyCrawlId(proto::AnyCrawlId {}),
        }),
    }
}

pub(crate) async fn get_urls(c: &mut Client, p: proto::GetParams) -> Vec<proto::UrlInfo> {
    let mut s = c.get_ur_ls(p).await.unwrap().into_inner();
    let mut out = Vec::new();
    while let Some(u) = s.message().await.unwrap() {
        out.push(u);
    }
    out
}

pub(crate) fn urls(infos: &[proto::UrlInfo]) -> Vec<&str> {
    let mut v: Vec<&str> = infos.iter().map(|i| i.url.as_str()).collect();
    v.sort();
    v
}

pub(crate) fn scoped(key: &str, crawl: &str) -> proto::QueueWithinCrawlParams {
    proto::QueueWithinCrawlParams {
        key: key.into(),
        crawl_id: crawl.into(),
        local: false,
    }
}

/// [`info`] in queue `key`.
pub(crate) fn info_in(url: &str, key: &str, crawl: &str) -> proto::UrlInfo {
    proto::UrlInfo {
        key: key.into(),
        ..info(url, crawl, &[])
    }
}

/// A discovered URL in queue `key` of crawl `crawl`.
pub(crate) fn discovered_in(url: &str, key: &str, crawl: &str) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(info_in(url, key, crawl)),
            },
        )),
        id: String::new(),
        creation_date: 0,
    }
}

/// A known URL in queue `key` of crawl `crawl`, due at `date` (0:
/// completed).
pub(crate) fn known_in(url: &str, key: &str, crawl: &str, date: u64) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
            info: Some(info_in(url, key, crawl)),
            refetchable_from_date: date,
        })),
        id: String::new(),
        creation_date: 0,
    }
}

/// The URLs of a ListURLs answer, with their queue and date.
pub(crate) async fn list_urls(
    c: &mut Client,
    p: proto::ListUrlParams,
) -> Vec<(String, String, u64)> {
    let mut s = c.list_ur_ls(p).await.unwrap().into_inner();
    let mut out = Vec::new();
    while let Some(item) = s.message().await.unwrap() {
        let Some(proto::url_item::Item::Known(k)) = item.item else {
            panic!("ListURLs answers known items");
        };
        let info = k.info.unwrap();
        out.push((info.url, info.key, k.refetchable_from_date));
    }
    out
}

/// ListURLs of queue `key` (every queue: empty) of crawl `crawl`.
pub(crate) fn list_params(key: &str, crawl: &str, start: u32, size: u32) -> proto::ListUrlParams {
    proto::ListUrlParams {
        start,
        size,
        key: key.into(),
        crawl_id: crawl.into(),
        local: false,
        filter: None,
        ignore_case: None,
    }
}

/// CountURLs of queue `key` of crawl `crawl`.
pub(crate) async fn count_urls(
    c: &mut Client,
    key: &str,
    crawl: &str,
    filter: Option<&str>,
    ignore_case: bool,
) -> u64 {
    let p = proto::CountUrlParams {
        key: key.into(),
        crawl_id: crawl.into(),
        filter: filter.map(Into::into),
        ignore_case: Some(ignore_case),
        local: Some(false),
    };
    c.count_ur_ls(p).await.unwrap().into_inner().value
}

/// ListQueues of crawl `crawl`.
pub(crate) async fn list_queues(c: &mut Client, crawl: &str, inactive: bool) -> Vec<String> {
    let p = proto::Pagination {
        start: 0,
        size: 0,
        include_inactive: inactive,
        crawl_id: crawl.into(),
        local: false,
    };
    c.list_queues(p).await.unwrap().into_inner().values
}

/// GetURLStatus of `url` in queue `key`: its queue and date, or the
/// error's code.
pub(crate) async fn url_status(
    c: &mut Client,
    url: &str,
    key: &str,
    crawl: &str,
) -> Result<(String, u64), tonic::Code> {
    let p = proto::UrlStatusRequest {
        url: url.into(),
        key: key.into(),
        crawl_id: crawl.into(),
    };
    match c.get_url_status(p).await {
        Ok(item) => {
            let Some(proto::url_item::Item::Known(k)) = item.into_inner().item else {
                panic!("GetURLStatus answers a known item");
            };
            Ok((k.info.unwrap().key, k.refetchable_from_date))
        }
        Err(e) => Err(e.code()),
    }
}

/// The mutual-TLS certificates of `fixtures/tls/mutual/` (see its
/// generate.sh).
pub(crate) fn pki(name: &str) -> String {
    format!("{}/fixtures/tls/mutual/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A channel over TLS (trusting the test CA), presenting the client
/// certificate `identity` (`client`, `stranger`) if any.
pub(crate) async fn tls_channel(addr: &str, identity: Option<&str>) -> Result<Channel, String> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let read = |name: &str| std::fs::read(pki(name)).unwrap();
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.pem")))
        .domain_name("localhost");
    if let Some(name) = identity {
        let (cert, key) = (read(&format!("{name}.pem")), read(&format!("{name}.key")));
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    Channel::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))
}
