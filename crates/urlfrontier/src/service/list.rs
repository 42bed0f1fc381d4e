//! Reading a crawl page by page: ListURLs (a stream that reads a page of
//! the store at a time, capped in streams open), CountURLs (the same walk,
//! counted) and ListQueues.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sitemapd_scheduler::{QueuePlace, UrlView};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::convert::url_item;
use super::{ConnectionId, DEFAULT_PAGE, Inner, blocking};
use crate::proto;
use crate::status::store_status;

/// A ListURLs stream whose client takes less than a page ([`LIST_PAGE`]
/// URLs) in this long is cut.
pub const STALLED_LIST: Duration = Duration::from_secs(30);
/// ListURLs streams open at once, over every client; one more is
/// RESOURCE_EXHAUSTED. A stream holds a page and no thread while its
/// client does not read.
pub const MAX_LIST_STREAMS: usize = 16;
/// ListURLs streams open at once on one connection (when the transport
/// names connections, [`ConnectionId`]); one more is RESOURCE_EXHAUSTED.
pub const MAX_LIST_STREAMS_PER_CONNECTION: usize = 4;
/// URLs a ListURLs stream reads from the store at once; its client must
/// take them within [`STALLED_LIST`].
pub const LIST_PAGE: usize = 256;
/// Items a server stream holds before the client reads them: a client that
/// reads slowly holds the producer, never a growing buffer.
const STREAM_BUFFER: usize = 64;

/// A ListURLs stream: its URLs, then the status it was cut with, if it was.
pub(super) type ListStream =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<proto::UrlItem, Status>> + Send>>;

/// The caps on ListURLs streams open: in all, and per connection.
pub(super) struct ListCaps {
    /// A permit per ListURLs stream open ([`MAX_LIST_STREAMS`]).
    in_all: Arc<Semaphore>,
    /// ListURLs streams open per connection.
    by_connection: OpenByConnection,
}

/// ListURLs streams open per connection.
type OpenByConnection = Arc<Mutex<HashMap<ConnectionId, usize>>>;

impl Default for ListCaps {
    fn default() -> ListCaps {
        ListCaps {
            in_all: Arc::new(Semaphore::new(MAX_LIST_STREAMS)),
            by_connection: Arc::default(),
        }
    }
}

/// A ListURLs stream's place under the caps, given back when dropped.
struct ListPermit {
    _in_all: tokio::sync::OwnedSemaphorePermit,
    connection: Option<(OpenByConnection, ConnectionId)>,
}

impl Drop for ListPermit {
    fn drop(&mut self) {
        if let Some((by_connection, id)) = &self.connection {
            let mut open = by_connection.lock().unwrap();
            if let Some(n) = open.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    open.remove(id);
                }
            }
        }
    }
}

impl ListCaps {
    /// A place for one more ListURLs stream from `connection`, under both
    /// caps.
    fn permit(&self, connection: Option<ConnectionId>) -> Result<ListPermit, Status> {
        let Ok(in_all) = self.in_all.clone().try_acquire_owned() else {
            return Err(Status::resource_exhausted(format!(
                "{MAX_LIST_STREAMS} ListURLs streams are open: try again when one has ended"
            )));
        };
        let Some(id) = connection else {
            return Ok(ListPermit {
                _in_all: in_all,
                connection: None,
            });
        };
        let mut open = self.by_connection.lock().unwrap();
        let n = open.entry(id).or_default();
        if *n >= MAX_LIST_STREAMS_PER_CONNECTION {
            return Err(Status::resource_exhausted(format!(
                "{MAX_LIST_STREAMS_PER_CONNECTION} ListURLs streams are open on this connection: \
                 try again when one has ended"
            )));
        }
        *n += 1;
        Ok(ListPermit {
            _in_all: in_all,
            connection: Some((self.by_connection.clone(), id)),
        })
    }
}

/// How far a ListURLs stream has gone.
struct ListWalk {
    /// Where the next page starts.
    place: QueuePlace,
    /// Matching URLs still to pass over (the request's `start`).
    skip: usize,
    /// URLs still to send (the request's `size`).
    left: usize,
}

/// ListURLs of `p`, its place under the caps held until the stream ends.
/// A ListURLs stream of the node at `addr` (the owner of the queue `p`
/// names), passed on as it comes: it holds a place under this node's caps
/// too, and the other node cuts it if the client stalls.
pub(super) async fn list_urls_of(
    inner: Arc<Inner>,
    addr: &str,
    p: proto::ListUrlParams,
    connection: Option<ConnectionId>,
) -> Result<ListStream, Status> {
    let permit = inner.list_streams.permit(connection)?;
    let theirs = inner
        .peer(addr)?
        .list_ur_ls(p)
        .await
        .map_err(|s| super::peers::peer_failed(addr, s))?
        .into_inner();
    Ok(Box::pin(theirs.map(move |item| {
        let _held = &permit;
        item
    })))
}

pub(super) fn list_urls(
    inner: Arc<Inner>,
    p: proto::ListUrlParams,
    connection: Option<ConnectionId>,
) -> Result<ListStream, Status> {
    let permit = inner.list_streams.permit(connection)?;
    // Read a page at a time on the blocking pool, sent from here: a
    // client that does not read holds no thread, only this task and
    // its page, and one that takes less than a page in STALLED_LIST
    // is cut (a dump asks for 2^31 - 1 URLs in one stream). A stream
    // cut, or whose read failed, ends with that status after what it
    // holds, never as if the list were whole.
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let (end_tx, end_rx) = tokio::sync::oneshot::channel::<Status>();
    tokio::spawn(async move {
        let _permit = permit;
        let p = Arc::new(p);
        let mut walk = ListWalk {
            place: QueuePlace::default(),
            skip: p.start as usize,
            left: if p.size == 0 {
                DEFAULT_PAGE
            } else {
                p.size as usize
            },
        };
        loop {
            let (inner, params) = (inner.clone(), p.clone());
            let read = blocking(move || {
                let page = inner.list_page(&params, &mut walk)?;
                Ok((page, walk))
            })
            .await;
            let ((page, ended), next) = match read {
                Ok(read) => read,
                Err(status) => {
                    let _ = end_tx.send(status);
                    return;
                }
            };
            let taken = tokio::time::timeout(STALLED_LIST, async {
                for item in page {
                    tx.send(Ok(item)).await.ok()?;
                }
                Some(())
            })
            .await;
            match taken {
                Err(_) => {
                    let _ = end_tx.send(Status::deadline_exceeded(format!(
                        "the client took fewer than {LIST_PAGE} URLs in {} s: stream cut",
                        STALLED_LIST.as_secs()
                    )));
                    return;
                }
                // The client went away.
                Ok(None) => return,
                Ok(Some(())) if ended => return,
                Ok(Some(())) => walk = next,
            }
        }
    });
    let end = tokio_stream::once(end_rx)
        .then(|end| async move { end.await.ok() })
        .filter_map(|status| status.map(Err));
    Ok(Box::pin(ReceiverStream::new(rx).chain(end)))
}

impl Inner {
    /// Visits the URLs of `crawl` (one queue of it with `key`) matching
    /// `filter` (a substring), in store order, while `visit` says go on:
    /// one record in memory at a time.
    fn each_matching(
        &self,
        crawl: &str,
        key: &str,
        filter: Option<&str>,
        ignore_case: bool,
        from: QueuePlace,
        mut visit: impl FnMut(QueuePlace, UrlView) -> bool,
    ) -> Result<(), Status> {
        let Some(store) = self.existing(crawl)? else {
            return Ok(());
        };
        let filter = filter.filter(|f| !f.is_empty()).map(|f| {
            if ignore_case {
                f.to_lowercase()
            } else {
                f.to_owned()
            }
        });
        let queue = (!key.is_empty()).then_some(key);
        for item in store.queue_urls_from(queue, from, self.clock.now()) {
            let (place, view) = item.map_err(store_status)?;
            let keep = match &filter {
                None => true,
                Some(f) if ignore_case => view.url.to_lowercase().contains(f.as_str()),
                Some(f) => view.url.contains(f.as_str()),
            };
            if keep && !visit(place, view) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The next page of a ListURLs walk ([`LIST_PAGE`] items at most), and
    /// whether the walk is over.
    fn list_page(
        &self,
        p: &proto::ListUrlParams,
        walk: &mut ListWalk,
    ) -> Result<(Vec<proto::UrlItem>, bool), Status> {
        let (mut page, mut visited) = (Vec::new(), 0);
        let from = std::mem::take(&mut walk.place);
        let ignore_case = p.ignore_case.unwrap_or(false);
        let filter = p.filter.as_deref();
        self.each_matching(
            &p.crawl_id,
            &p.key,
            filter,
            ignore_case,
            from,
            |place, v| {
                walk.place = place;
                if walk.skip > 0 {
                    walk.skip -= 1;
                } else {
                    page.push(url_item(&v, &p.crawl_id));
                    walk.left -= 1;
                }
                visited += 1;
                walk.left > 0 && visited < LIST_PAGE
            },
        )?;
        // Over when the store had no more, or the client no more room.
        let ended = walk.left == 0 || visited < LIST_PAGE;
        Ok((page, ended))
    }

    /// CountURLs: the URLs of `crawl` (one queue of it with `key`)
    /// matching `filter`.
    pub(super) fn count(&self, p: &proto::CountUrlParams) -> Result<u64, Status> {
        let mut n = 0u64;
        let ignore_case = p.ignore_case.unwrap_or(false);
        let filter = p.filter.as_deref();
        let start = QueuePlace::default();
        self.each_matching(&p.crawl_id, &p.key, filter, ignore_case, start, |_, _| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// ListQueues: a page of the queues of `crawl` (normalised), those
    /// blocked or with nothing scheduled left out unless
    /// `include_inactive`.
    pub(super) fn queue_page(
        &self,
        crawl: &str,
        p: &proto::Pagination,
    ) -> Result<Vec<String>, Status> {
        let Some(store) = self.existing(crawl)? else {
            return Ok(Vec::new());
        };
        let size = if p.size == 0 {
            DEFAULT_PAGE
        } else {
            p.size as usize
        };
        let blocked = self.blocked(crawl, self.now());
        let mut values = Vec::new();
        let mut matched = 0usize;
        for q in store.queues() {
            let (name, q) = q.map_err(store_status)?;
            if !p.include_inactive && (blocked.contains(&name) || q.scheduled == 0) {
                continue;
            }
            matched += 1;
            if matched > p.start as usize {
                values.push(name);
                if values.len() >= size {
                    break;
                }
            }
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_capped_per_connection_and_in_all() {
        let caps = ListCaps::default();
        let one = ConnectionId(1);
        let mut held: Vec<ListPermit> = (0..MAX_LIST_STREAMS_PER_CONNECTION)
            .map(|_| caps.permit(Some(one)).unwrap())
            .collect();
        let refused = caps.permit(Some(one)).err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(refused.message().contains("on this connection"));
        // Another connection, or none, still has room; one ended frees one.
        held.push(caps.permit(Some(ConnectionId(2))).unwrap());
        held.remove(0);
        held.push(caps.permit(Some(one)).unwrap());
        while held.len() < MAX_LIST_STREAMS {
            held.push(caps.permit(None).unwrap());
        }
        let refused = caps.permit(None).err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(!refused.message().contains("connection"));
        held.clear();
        assert!(caps.by_connection.lock().unwrap().is_empty());
        assert!(caps.permit(Some(one)).is_ok());
    }
}
