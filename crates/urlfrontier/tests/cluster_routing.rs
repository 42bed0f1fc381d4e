//! Two services on loopback as two nodes of one cluster, each serving one
//! of the two partitions of its own store: a keyed call reaches the node
//! that serves its partition, whichever node it was sent to; a call one
//! node sends on is never sent on again; `local=false` counts sum both
//! nodes; a partition no node serves answers FAIL or UNAVAILABLE.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sitemapd_scheduler::{Store, StoreOptions};
use sitemapd_urlfrontier::Frontier;
use sitemapd_urlfrontier::proto::ack_message::Status as Ack;
use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
use sitemapd_urlfrontier::proto::{self};
use sitemapd_urlfrontier::service::{ClusterMap, FORWARDED};
use tonic::transport::Channel;

/// Who owns which partition, as every node sees it (a test edits it).
#[derive(Default)]
struct Owners {
    /// Partition → its owner's address.
    of: Mutex<HashMap<u16, String>>,
    nodes: Mutex<Vec<String>>,
}

/// One node's look at [`Owners`].
struct Map {
    me: String,
    owners: Arc<Owners>,
}

impl ClusterMap for Map {
    fn nodes(&self) -> Vec<String> {
        self.owners.nodes.lock().unwrap().clone()
    }

    fn peers(&self) -> Vec<String> {
        let nodes = self.nodes();
        nodes.into_iter().filter(|n| *n != self.me).collect()
    }

    fn owner(&self, partition: u16) -> Option<String> {
        let owner = self.owners.of.lock().unwrap().get(&partition).cloned()?;
        (owner != self.me).then_some(owner)
    }
}

struct Node {
    addr: String,
    store: Arc<Store>,
}

/// A node on loopback: a store of two partitions serving `serves` only.
async fn node(owners: &Arc<Owners>, serves: u16) -> Node {
    let options = StoreOptions {
        min_delay: 0.0,
        partitions: 2,
        ..StoreOptions::default()
    };
    let store = Arc::new(Store::in_memory(options).unwrap());
    store.serve_partition(1 - serves, false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let frontier = Frontier::new(store.clone(), addr.clone(), None);
    let map = Map {
        me: addr.clone(),
        owners: owners.clone(),
    };
    frontier.join_cluster(Arc::new(map), None);
    owners.of.lock().unwrap().insert(serves, addr.clone());
    owners.nodes.lock().unwrap().push(addr.clone());
    owners.nodes.lock().unwrap().sort();
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(frontier.into_server())
            .serve_with_incoming(incoming),
    );
    Node { addr, store }
}

async fn client(addr: &str) -> UrlFrontierClient<Channel> {
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap();
    UrlFrontierClient::new(channel.connect().await.unwrap())
}

fn discovered(url: &str) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(proto::UrlInfo {
                    url: url.into(),
                    ..Default::default()
                }),
            },
        )),
        id: String::new(),
        creation_date: 0,
    }
}

/// PutURLs of `items` (with `forwarded` set when asked): each id's ack.
async fn put(
    c: &mut UrlFrontierClient<Channel>,
    items: Vec<proto::UrlItem>,
    forwarded: bool,
) -> HashMap<String, Ack> {
    let n = items.len();
    let mut request = tonic::Request::new(tokio_stream::iter(items));
    if forwarded {
        request
            .metadata_mut()
            .insert(FORWARDED, "1".parse().unwrap());
    }
    let mut acks = c.put_ur_ls(request).await.unwrap().into_inner();
    let mut out = HashMap::new();
    while let Some(ack) = acks.message().await.unwrap() {
        out.insert(ack.id, Ack::try_from(ack.status).unwrap());
    }
    assert_eq!(out.len(), n, "one ack per item");
    out
}

/// PutDiscovered of one batch of `urls` with id `id`: its ack.
async fn put_discovered(
    c: &mut UrlFrontierClient<Channel>,
    id: &str,
    urls: &[&str],
) -> proto::BatchAck {
    let batch = proto::DiscoveredBatch {
        id: id.into(),
        items: urls
            .iter()
            .map(|u| proto::UrlInfo {
                url: u.to_string(),
                ..Default::default()
            })
            .collect(),
    };
    let mut acks = c
        .put_discovered(tokio_stream::iter([batch]))
        .await
        .unwrap()
        .into_inner();
    acks.message().await.unwrap().unwrap()
}

async fn count(c: &mut UrlFrontierClient<Channel>, local: bool) -> u64 {
    let p = proto::CountUrlParams {
        local: Some(local),
        ..Default::default()
    };
    c.count_ur_ls(p).await.unwrap().into_inner().value
}

/// URLs of 20 hosts, 3 each, and the partition each is in.
fn urls(store: &Store) -> Vec<(String, u16)> {
    (0..20)
        .flat_map(|h| (0..3).map(move |i| format!("https://host{h}.example/{i}")))
        .map(|u| {
            let p = store.partition_of_url(&u);
            (u, p)
        })
        .collect()
}

#[tokio::test]
async fn keyed_calls_reach_the_node_serving_their_partition() {
    let owners = Arc::new(Owners::default());
    let (zero, one) = (node(&owners, 0).await, node(&owners, 1).await);
    let urls = urls(&zero.store);
    assert!(urls.iter().any(|(_, p)| *p == 0) && urls.iter().any(|(_, p)| *p == 1));
    let mut c0 = client(&zero.addr).await;
    let mut c1 = client(&one.addr).await;

    // Every URL put through node 0: each written by the node serving it.
    let items = urls.iter().map(|(u, _)| discovered(u)).collect();
    let acks = put(&mut c0, items, false).await;
    assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
    for (url, p) in &urls {
        let (home, away) = if *p == 0 {
            (&zero, &one)
        } else {
            (&one, &zero)
        };
        assert!(home.store.url(url).unwrap().is_some(), "{url}");
        assert!(away.store.url(url).unwrap().is_none(), "{url}");
    }
    // Put again through node 1: each node knows its URLs (SKIPPED).
    let items = urls.iter().map(|(u, _)| discovered(u)).collect();
    let acks = put(&mut c1, items, false).await;
    assert!(acks.values().all(|a| *a == Ack::Skipped), "{acks:?}");

    // PutDiscovered through node 1: each item's status is its owner's.
    let more: Vec<String> = (0..10)
        .map(|h| format!("https://more{h}.example/"))
        .collect();
    let items: Vec<&str> = more
        .iter()
        .chain([&urls[0].0])
        .map(String::as_str)
        .collect();
    let ack = put_discovered(&mut c1, "more", &items).await;
    let mut want = vec![Ack::Ok as i32; more.len()];
    want.push(Ack::Skipped as i32);
    assert_eq!((ack.id.as_str(), ack.statuses), ("more", want));
    for url in &more {
        let home = [&zero, &one][usize::from(zero.store.partition_of_url(url))];
        assert!(home.store.url(url).unwrap().is_some(), "{url}");
    }
    assert!(more.iter().any(|u| zero.store.partition_of_url(u) == 0));
    assert!(more.iter().any(|u| zero.store.partition_of_url(u) == 1));

    // GetURLStatus through either node finds every URL.
    for (url, _) in &urls {
        for c in [&mut c0, &mut c1] {
            let p = proto::UrlStatusRequest {
                url: url.clone(),
                ..Default::default()
            };
            let item = c.get_url_status(p).await.unwrap().into_inner();
            let Some(proto::url_item::Item::Known(k)) = item.item else {
                panic!("{url}: {item:?}");
            };
            assert_eq!(k.info.unwrap().url, *url);
        }
    }

    // ListURLs of a queue through the node that does not hold it: the
    // queue's URLs, as its node lists them.
    let (theirs, _) = urls.iter().find(|(_, p)| *p == 1).unwrap();
    let host = theirs.split('/').nth(2).unwrap();
    let p = proto::ListUrlParams {
        key: host.into(),
        size: 100,
        ..Default::default()
    };
    let mut listed = Vec::new();
    let mut stream = c0.list_ur_ls(p).await.unwrap().into_inner();
    while let Some(item) = stream.message().await.unwrap() {
        let Some(proto::url_item::Item::Known(k)) = item.item else {
            panic!("{item:?}");
        };
        listed.push(k.info.unwrap().url);
    }
    listed.sort();
    let mut want: Vec<&String> = urls
        .iter()
        .map(|(u, _)| u)
        .filter(|u| u.contains(&format!("//{host}/")))
        .collect();
    want.sort();
    assert_eq!(listed.iter().collect::<Vec<_>>(), want);

    // Counts: each node's own, and the cluster's through either node.
    let own = [count(&mut c0, true).await, count(&mut c1, true).await];
    let all: Vec<&String> = urls.iter().map(|(u, _)| u).chain(&more).collect();
    let in_zero = all
        .iter()
        .filter(|u| zero.store.partition_of_url(u) == 0)
        .count() as u64;
    assert_eq!(own, [in_zero, all.len() as u64 - in_zero]);
    assert_eq!(count(&mut c0, false).await, all.len() as u64);
    assert_eq!(count(&mut c1, false).await, all.len() as u64);
    let stats = c1
        .get_stats(proto::QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.size, stats.number_of_queues), (70, 30));

    // A queue's control reaches the node serving its host: blocked through
    // node 1, node 0 hands out none of that host's URLs.
    let (first, p) = &urls[0];
    let host = first.split('/').nth(2).unwrap().to_string();
    let block = proto::BlockQueueParams {
        key: host.clone(),
        time: u64::MAX / 2,
        ..Default::default()
    };
    let via = if *p == 0 { &mut c1 } else { &mut c0 };
    via.block_queue_until(block).await.unwrap();
    let serving = if *p == 0 { &mut c0 } else { &mut c1 };
    let get = proto::GetParams {
        max_urls_per_queue: 10,
        max_queues: 100,
        ..Default::default()
    };
    let mut got = serving.get_ur_ls(get).await.unwrap().into_inner();
    let mut handed = 0;
    while let Some(info) = got.message().await.unwrap() {
        assert!(!info.url.contains(&format!("//{host}/")), "{}", info.url);
        handed += 1;
    }
    let same_partition = all
        .iter()
        .filter(|u| zero.store.partition_of_url(u) == *p)
        .count();
    assert_eq!(handed, same_partition - 3);
}

#[tokio::test]
async fn a_call_sent_on_is_not_sent_on_again_and_a_partition_nobody_serves_fails() {
    let owners = Arc::new(Owners::default());
    let (zero, _one) = (node(&owners, 0).await, node(&owners, 1).await);
    let urls = urls(&zero.store);
    let (theirs, _) = urls.iter().find(|(_, p)| *p == 1).unwrap();
    let (ours, _) = urls.iter().find(|(_, p)| *p == 0).unwrap();
    let mut c0 = client(&zero.addr).await;

    // Marked as sent on by another node: node 0 writes its own partition
    // and FAILs the other's (its owner moved: the client resends).
    let items = vec![discovered(ours), discovered(theirs)];
    let acks = put(&mut c0, items, true).await;
    assert_eq!(acks[ours.as_str()], Ack::Ok);
    assert_eq!(acks[theirs.as_str()], Ack::Fail);
    assert!(zero.store.url(theirs).unwrap().is_none());

    // Partition 1 without an owner: its items FAIL, its reads are
    // UNAVAILABLE, and PutDiscovered says so item by item.
    owners.of.lock().unwrap().remove(&1);
    let acks = put(&mut c0, vec![discovered(theirs)], false).await;
    assert_eq!(acks[theirs.as_str()], Ack::Fail);
    let p = proto::UrlStatusRequest {
        url: theirs.clone(),
        ..Default::default()
    };
    let status = c0.get_url_status(p).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let new_partition = zero.store.partition_of_url("https://new.example/x");
    let ack = put_discovered(&mut c0, "b", &[theirs, "https://new.example/x", ours]).await;
    let new_ack = if new_partition == 0 {
        Ack::Ok
    } else {
        Ack::Fail
    };
    let want = [Ack::Fail, new_ack, Ack::Skipped].map(|a| a as i32);
    assert_eq!(ack.statuses, want);
}
