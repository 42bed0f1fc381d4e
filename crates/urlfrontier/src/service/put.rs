//! PutURLs and PutDiscovered: a client's items read as they arrive,
//! written in chunks crawl by crawl, and acked once on disk.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sitemapd_parser::NormUrl;
use sitemapd_scheduler::{KnownUrl, Put, Store, StoreError, Timestamp};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use prost::Message;
use proto::ack_message::Status as Ack;

use super::convert::{Item, ack_id, completion_of, item_info, item_of, read_item};
use super::peers::{PEER_CALL, Route};
use super::{Inner, Stream, lock};
use crate::crawl_id;
use crate::proto;

/// Items of a PutURLs stream read and written together (each acked once
/// written): the reference reads 1024 unacked items per stream. A
/// PutDiscovered batch is written in chunks of as many.
pub const PUT_CHUNK: usize = 1024;
/// Bytes of read items (ids, URLs, keys, metadata cut to
/// [`sitemapd_scheduler::frontier::MAX_METADATA_BYTES`]) one PutURLs chunk holds at
/// most: with messages of up to 4 MiB, 1,024 items could hold 4 GiB.
pub const PUT_CHUNK_BYTES: usize = 8 << 20;
/// The longest a PutURLs item waits for others to be written with.
pub const PUT_WAIT: Duration = Duration::from_millis(2);
/// A put stream that sends nothing for this long is closed.
pub const IDLE_STREAM: Duration = Duration::from_secs(600);

/// PutURLs: the acks of the items `inbound` sends. In a cluster, an item
/// of a partition another node owns is sent on to it and acked with its
/// ack (not when the stream was `forwarded` by another node: FAIL).
pub(super) fn put_urls(
    inner: Arc<Inner>,
    inbound: impl tokio_stream::Stream<Item = Result<proto::UrlItem, Status>> + Send + 'static,
    forwarded: bool,
) -> Stream<proto::AckMessage> {
    let (tx, rx) = mpsc::channel(PUT_CHUNK);
    tokio::spawn(async move {
        // Each item is read (its metadata cut) as it arrives; a chunk
        // ends at PUT_CHUNK items, PUT_CHUNK_BYTES or PUT_WAIT after
        // its first item.
        let inbound = inbound.timeout(IDLE_STREAM);
        tokio::pin!(inbound);
        let mut done = false;
        // Why the stream broke, sent once what came before is acked.
        let mut broken = None;
        while !done {
            let mut items = Vec::new();
            let mut acks = Vec::new();
            // Items for other nodes, by address.
            let mut theirs: BTreeMap<String, Vec<proto::UrlItem>> = BTreeMap::new();
            let (mut held, mut bytes) = (0usize, 0usize);
            let mut deadline = None;
            while held < PUT_CHUNK && bytes < PUT_CHUNK_BYTES {
                let next = match deadline {
                    None => inbound.next().await,
                    Some(at) => match tokio::time::timeout_at(at, inbound.next()).await {
                        Ok(next) => next,
                        Err(_) => break,
                    },
                };
                deadline.get_or_insert_with(|| tokio::time::Instant::now() + PUT_WAIT);
                held += 1;
                match next {
                    Some(Ok(Ok(item))) => match route_item(&inner, &item, forwarded) {
                        Route::Here => match read_item(item) {
                            Ok((id, crawl, what)) => {
                                bytes += id.len() + crawl.len() + what.bytes();
                                items.push((id, crawl, what));
                            }
                            Err(id) => {
                                bytes += id.len();
                                acks.push((id, proto::ack_message::Status::Skipped));
                            }
                        },
                        Route::Node(addr) => {
                            bytes += item.encoded_len();
                            theirs.entry(addr).or_default().push(item);
                        }
                        Route::Nowhere => {
                            let id = ack_id(&item);
                            bytes += id.len();
                            acks.push((id, proto::ack_message::Status::Fail));
                        }
                    },
                    Some(Ok(Err(status))) => {
                        broken = Some(status);
                        done = true;
                        break;
                    }
                    // An idle or finished stream ends here.
                    _ => {
                        done = true;
                        break;
                    }
                }
            }
            let ids: Vec<String> = items.iter().map(|(id, _, _)| id.clone()).collect();
            let work = items.into_iter().map(|(_, c, w)| (c, w)).collect();
            let sent_on: Vec<_> = theirs
                .into_iter()
                .map(|(addr, items)| {
                    let ids: Vec<String> = items.iter().map(ack_id).collect();
                    (ids, tokio::spawn(put_on(inner.clone(), addr, items)))
                })
                .collect();
            let statuses = put_blocking(inner.clone(), work).await;
            acks.extend(ids.into_iter().zip(statuses));
            for (ids, call) in sent_on {
                let statuses = call.await.unwrap_or_else(|_| vec![Ack::Fail; ids.len()]);
                acks.extend(ids.into_iter().zip(statuses));
            }
            for (id, status) in acks {
                let ack = proto::AckMessage {
                    id,
                    status: status as i32,
                };
                if tx.send(Ok(ack)).await.is_err() {
                    return;
                }
            }
        }
        if let Some(status) = broken {
            let _ = tx.send(Err(status)).await;
        }
    });
    ReceiverStream::new(rx)
}

/// PutDiscovered: an ack per batch `inbound` sends, a status per item. In
/// a cluster, the items of a partition another node owns are sent on to it
/// in a batch of their own, their statuses its (not when the stream was
/// `forwarded` by another node: FAIL).
pub(super) fn put_discovered(
    inner: Arc<Inner>,
    inbound: impl tokio_stream::Stream<Item = Result<proto::DiscoveredBatch, Status>> + Send + 'static,
    forwarded: bool,
) -> Stream<proto::BatchAck> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let batches = inbound.timeout(IDLE_STREAM);
        tokio::pin!(batches);
        while let Some(next) = batches.next().await {
            let batch = match next {
                Ok(Ok(batch)) => batch,
                // A broken stream says why (a message over its bound).
                Ok(Err(status)) => {
                    let _ = tx.send(Err(status)).await;
                    return;
                }
                Err(_idle) => return,
            };
            // A repeat within the batch is SKIPPED by the store (it
            // knows the URL by then).
            let mut statuses = vec![Ack::Skipped; batch.items.len()];
            let mut work = Vec::new();
            let mut at = Vec::new();
            let mut theirs: BTreeMap<String, (Vec<usize>, Vec<proto::UrlInfo>)> = BTreeMap::new();
            for (i, info) in batch.items.into_iter().enumerate() {
                let route = match crate::queue_key(&info.url, &info.key) {
                    Ok(_) => inner.route_url(&info.url, forwarded),
                    // Skipped here.
                    Err(_) => Route::Here,
                };
                match route {
                    Route::Here => {
                        if let Some(item) = item_of(info, None) {
                            at.push(i);
                            work.push(item);
                        }
                    }
                    Route::Node(addr) => {
                        let (at, items) = theirs.entry(addr).or_default();
                        at.push(i);
                        items.push(info);
                    }
                    Route::Nowhere => statuses[i] = Ack::Fail,
                }
            }
            let sent_on: Vec<_> = theirs
                .into_iter()
                .map(|(addr, (at, items))| {
                    (
                        at,
                        tokio::spawn(put_discovered_on(inner.clone(), addr, items)),
                    )
                })
                .collect();
            // Written PUT_CHUNK items at a time, as PutURLs is: a
            // lease or another client's write waits for one chunk, not
            // for a batch of 100,000. Each item's status says whether
            // it was written, so a batch may be written in part.
            let mut done = Vec::with_capacity(work.len());
            while !work.is_empty() {
                let rest = work.split_off(work.len().min(PUT_CHUNK));
                let chunk = std::mem::replace(&mut work, rest);
                done.extend(put_blocking(inner.clone(), chunk).await);
            }
            for (i, s) in at.into_iter().zip(done) {
                statuses[i] = s;
            }
            for (at, call) in sent_on {
                let done = call.await.unwrap_or_else(|_| vec![Ack::Fail; at.len()]);
                for (i, s) in at.into_iter().zip(done) {
                    statuses[i] = s;
                }
            }
            let ack = proto::BatchAck {
                id: batch.id,
                statuses: statuses.into_iter().map(|s| s as i32).collect(),
            };
            if tx.send(Ok(ack)).await.is_err() {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// Where a PutURLs item is written: its URL's partition's node. One that
/// names no URL, or no queue, is skipped here.
fn route_item(inner: &Inner, item: &proto::UrlItem, forwarded: bool) -> Route {
    match item_info(item) {
        Some(info) if crate::queue_key(&info.url, &info.key).is_ok() => {
            inner.route_url(&info.url, forwarded)
        }
        _ => Route::Here,
    }
}

/// Sends `items` on to the node at `addr` in a PutURLs stream of their
/// own: their acks in order, FAIL (to resend) for any it did not ack in
/// [`PEER_CALL`].
async fn put_on(inner: Arc<Inner>, addr: String, items: Vec<proto::UrlItem>) -> Vec<Ack> {
    let mut statuses = vec![Ack::Fail; items.len()];
    // Each sent with its index as its id, so that the acks find their items.
    let items = items.into_iter().enumerate().map(|(i, mut item)| {
        item.id = i.to_string();
        item
    });
    let call = async {
        let mut acks = inner
            .peer(&addr)?
            .put_ur_ls(tokio_stream::iter(items))
            .await?
            .into_inner();
        while let Some(ack) = acks.message().await? {
            if let Some(s) = ack.id.parse().ok().and_then(|i: usize| statuses.get_mut(i)) {
                *s = Ack::try_from(ack.status).unwrap_or(Ack::Fail);
            }
        }
        Ok::<_, Status>(())
    };
    sent_on(&addr, call).await;
    statuses
}

/// Sends `items` on to the node at `addr` in a PutDiscovered batch of
/// their own: their statuses, FAIL for any it did not answer in
/// [`PEER_CALL`].
async fn put_discovered_on(
    inner: Arc<Inner>,
    addr: String,
    items: Vec<proto::UrlInfo>,
) -> Vec<Ack> {
    let mut statuses = vec![Ack::Fail; items.len()];
    let batch = proto::DiscoveredBatch {
        id: String::new(),
        items,
    };
    let call = async {
        let mut acks = inner
            .peer(&addr)?
            .put_discovered(tokio_stream::iter([batch]))
            .await?
            .into_inner();
        if let Some(ack) = acks.message().await? {
            for (s, got) in statuses.iter_mut().zip(ack.statuses) {
                *s = Ack::try_from(got).unwrap_or(Ack::Fail);
            }
        }
        Ok::<_, Status>(())
    };
    sent_on(&addr, call).await;
    statuses
}

/// Waits for a put sent on to `addr`, at most [`PEER_CALL`], logging why
/// it failed if it did.
async fn sent_on(addr: &str, call: impl std::future::Future<Output = Result<(), Status>>) {
    let failed = match tokio::time::timeout(PEER_CALL, call).await {
        Ok(Ok(())) => return,
        Ok(Err(status)) => status,
        Err(_) => Status::deadline_exceeded("no answer"),
    };
    tracing::warn!(node = addr, error = %failed, "urlfrontier: a put sent on to another node failed: its items are acked FAIL");
}

/// [`Inner::put`] on the blocking pool; every item FAIL (to resend) if it
/// could not run.
async fn put_blocking(
    inner: Arc<Inner>,
    work: Vec<(String, Item)>,
) -> Vec<proto::ack_message::Status> {
    let n = work.len();
    tokio::task::spawn_blocking(move || inner.put(work))
        .await
        .unwrap_or_else(|_| vec![proto::ack_message::Status::Fail; n])
}

impl Inner {
    /// Releases the holds of the URLs of `known` (a known update releases
    /// a URL's hold at once): each is held under the queue GetURLs handed
    /// it out in, which is the one the update names (or its host's) when
    /// the client sends back what it got; the store is asked for the
    /// others only, and only while the crawl holds any URL.
    fn release_holds(&self, crawl: &str, store: &Store, known: &[(usize, KnownUrl)]) {
        let mut missed = Vec::new();
        let mut rules = lock(&self.rules);
        if !rules
            .iter()
            .any(|((c, _), r)| c == crawl && !r.in_transit.is_empty())
        {
            return;
        }
        for (_, k) in known {
            let Ok(norm) = NormUrl::parse(&k.url) else {
                continue;
            };
            let queue = match &k.queue {
                Some(queue) => queue.clone(),
                None => norm.host_key().to_string(),
            };
            let released = rules
                .get_mut(&(crawl.to_string(), queue))
                .is_some_and(|r| r.in_transit.remove(norm.as_str()).is_some());
            if !released {
                missed.push(norm.into_string());
            }
        }
        drop(rules);
        let held: Vec<(String, String)> = missed
            .iter()
            .filter_map(|url| store.url_queue(url).ok().flatten())
            .collect();
        let mut rules = lock(&self.rules);
        for (queue, url) in held {
            if let Some(r) = rules.get_mut(&(crawl.to_string(), queue)) {
                r.in_transit.remove(&url);
            }
        }
    }

    /// Writes the items of one chunk, crawl by crawl; a status per item,
    /// in order.
    pub(super) fn put(&self, items: Vec<(String, Item)>) -> Vec<proto::ack_message::Status> {
        use proto::ack_message::Status as Ack;
        let mut statuses = vec![Ack::Fail; items.len()];
        let mut by_crawl: BTreeMap<String, Vec<(usize, Item)>> = BTreeMap::new();
        for (i, (crawl, item)) in items.into_iter().enumerate() {
            by_crawl
                .entry(crawl_id(&crawl).to_string())
                .or_default()
                .push((i, item));
        }
        let now = self.now();
        for (crawl, items) in by_crawl {
            let store = match self.store(&crawl) {
                Ok(store) => store,
                Err(refused) => {
                    // A crawl id over the bounds: do not resend. The store
                    // failing: resend.
                    let ack = if refused.code() == tonic::Code::Unavailable {
                        Ack::Fail
                    } else {
                        Ack::Skipped
                    };
                    for (i, _) in items {
                        statuses[i] = ack;
                    }
                    continue;
                }
            };
            let mut discovered = Vec::new();
            let mut known = Vec::new();
            let written: Vec<usize> = items.iter().map(|(i, _)| *i).collect();
            for (i, item) in items {
                match item {
                    Item::Discovered(d) => discovered.push((i, d)),
                    Item::Known(k) => known.push((i, k)),
                }
            }
            let put =
                |result: Result<Vec<Put>, StoreError>, at: Vec<usize>, st: &mut [Ack]| match result
                {
                    Ok(found) => {
                        for (i, p) in at.into_iter().zip(found) {
                            st[i] = match p {
                                Put::Stored => Ack::Ok,
                                Put::Known | Put::Invalid => Ack::Skipped,
                            };
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "urlfrontier: put failed");
                    }
                };
            if !discovered.is_empty() {
                let at = discovered.iter().map(|d| d.0).collect();
                let result = store.discover(
                    discovered.into_iter().map(|(_, d)| d),
                    Timestamp::from_unix(now),
                );
                put(result, at, &mut statuses);
            }
            if !known.is_empty() {
                self.release_holds(&crawl, &store, &known);
                let at = known.iter().map(|k| k.0).collect();
                let result = store.put_known(
                    known.into_iter().map(|(_, k)| k).collect(),
                    Timestamp::from_unix(now),
                    |k, stored| completion_of(&k.metadata, stored),
                );
                put(result, at, &mut statuses);
            }
            // Acked once on disk: a crash after an OK loses nothing.
            if let Err(e) = store.flush() {
                tracing::warn!(error = %e, "urlfrontier: flush failed");
                for i in written {
                    statuses[i] = Ack::Fail;
                }
            }
        }
        statuses
    }
}
