//! The replicated write log on a JetStream stream: one subject per
//! partition (`sitemapd.log.P`), each entry a batch of the store
//! ([`sitemapd_scheduler::write_log`]). Its owner appends a partition's
//! batches before applying them; the next owner replays them into its own
//! store and goes on from there.
//!
//! Every append is fenced: it carries the sequence of the subject's last
//! message as this node knows it, and JetStream refuses it if another
//! message came since. A node taking a partition over replays the subject,
//! then appends a takeover record: from then on the ex-owner's appends are
//! refused, so a paused ex-owner can no longer change the partition. A lost
//! acknowledgement is resolved by sending the same message again under the
//! same message id: JetStream answers with the first copy's sequence
//! instead of storing it twice.
//!
//! An entry larger than a NATS message goes in chunks, appended in order,
//! each fenced on the one before; a replay applies an entry once its last
//! chunk is read, and drops chunks a failure left without their end.
//!
//! The log runs its own NATS connection on a thread of its own, so that the
//! store's writing threads can wait for an append whatever runtime they run
//! in.

use std::sync::Mutex;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, context::PublishErrorKind, stream};
use futures_util::StreamExt;
use sitemapd_scheduler::{Store, WriteLog};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use crate::ClusterError;

/// The stream's name.
pub(crate) const STREAM: &str = "SITEMAPD_LOG";
/// How long one append may keep retrying a send whose answer was lost (a
/// NATS server failing over takes 4 to 9 s).
const RETRY_FOR: Duration = Duration::from_secs(30);
/// The largest chunk of an entry in one message, bytes (NATS's own limit is
/// 1 MiB by default).
const CHUNK: usize = 512 << 10;
/// Header: this message is chunk `i` (from 1) …
const CHUNK_HEADER: &str = "Sitemapd-Chunk";
/// … of this many.
const CHUNKS_HEADER: &str = "Sitemapd-Chunks";
/// Header: a takeover record, naming the node.
const TAKEOVER_HEADER: &str = "Sitemapd-Takeover";

/// A partition's subject.
fn subject(partition: u16) -> String {
    format!("sitemapd.log.{partition}")
}

/// What taking a partition over did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakeOver {
    /// Entries replayed into the store.
    pub applied: u64,
    /// The subject's last sequence once this node holds it (its takeover
    /// record's).
    pub fence: u64,
}

/// The write log of a cluster's partitions: a [`WriteLog`] that appends
/// the batches of the partitions this node has taken over and refuses the
/// others'.
pub struct JetStreamLog {
    node_id: String,
    requests: mpsc::UnboundedSender<Request>,
    /// Per partition: the subject's last sequence while this node holds it.
    fences: Vec<Mutex<Option<u64>>>,
    /// Entries appended in more than one message.
    chunked: std::sync::atomic::AtomicU64,
    /// Told how long each append took ([`JetStreamLog::observe_appends`]).
    on_append: std::sync::OnceLock<Box<dyn Fn(std::time::Duration) + Send + Sync>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for JetStreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamLog")
            .field("node_id", &self.node_id)
            .field("partitions", &self.fences.len())
            .finish_non_exhaustive()
    }
}

/// A call to the log's thread.
enum Request {
    Append {
        subject: String,
        payload: bytes::Bytes,
        headers: HeaderMap,
        expected: u64,
        id: String,
        reply: std::sync::mpsc::SyncSender<Result<u64, Append>>,
    },
    Last {
        subject: String,
        reply: std::sync::mpsc::SyncSender<Result<u64, String>>,
    },
    Read {
        subject: String,
        from: u64,
        until: u64,
        items: mpsc::Sender<Result<Read, String>>,
    },
}

/// Why an append was not stored.
#[derive(Debug)]
enum Append {
    /// Another message came first: the subject's last sequence is past
    /// the one expected.
    Fenced(String),
    /// Anything else.
    Failed(String),
}

/// A message read back.
#[derive(Debug)]
struct Read {
    sequence: u64,
    headers: Option<HeaderMap>,
    payload: bytes::Bytes,
}

impl JetStreamLog {
    /// Connects to `servers` and opens the log's stream (created with
    /// `replicas` replicas if missing), for a store of `partitions`.
    pub fn open(
        servers: &[String],
        node_id: &str,
        partitions: u16,
        replicas: usize,
    ) -> Result<JetStreamLog, ClusterError> {
        let (requests, received) = mpsc::unbounded_channel();
        let (ready, started) = std::sync::mpsc::sync_channel(1);
        let servers = servers.to_vec();
        let name = format!("sitemapd-{node_id}-log");
        let thread = std::thread::Builder::new()
            .name("write-log".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready.send(Err(ClusterError::jetstream("starting the log", e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let js = match connect(&servers, &name, replicas).await {
                        Ok(js) => {
                            let _ = ready.send(Ok(()));
                            js
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return;
                        }
                    };
                    serve(js, received).await;
                });
            })
            .map_err(|e| ClusterError::jetstream("starting the log's thread", e))?;
        started
            .recv()
            .map_err(|_| ClusterError::jetstream("starting the log", "its thread ended"))??;
        Ok(JetStreamLog {
            node_id: node_id.to_string(),
            requests,
            fences: (0..partitions).map(|_| Mutex::new(None)).collect(),
            chunked: std::sync::atomic::AtomicU64::new(0),
            on_append: std::sync::OnceLock::new(),
            thread: Some(thread),
        })
    }

    fn fence(&self, partition: u16) -> Result<std::sync::MutexGuard<'_, Option<u64>>, String> {
        let fence = self
            .fences
            .get(usize::from(partition))
            .ok_or_else(|| format!("no partition {partition} in a log of {}", self.fences.len()))?;
        Ok(fence.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Takes partition `partition` over for `store`: replays into it what
    /// the subject holds past the store's position, then appends a takeover
    /// record fenced on the last message replayed, so that no earlier
    /// writer can append after it. A message that lands meanwhile is
    /// replayed too, and the takeover tried again. From then on this log
    /// appends the partition's batches. Blocking; call it before the store
    /// serves the partition.
    pub fn take_over(&self, partition: u16, store: &Store) -> Result<TakeOver, ClusterError> {
        self.take_over_while(partition, store, || true)
    }

    /// [`JetStreamLog::take_over`], giving up as soon as `owned` says the
    /// partition is no longer this node's (asked before each takeover
    /// record is appended): a node whose replay took long must not fence
    /// out the partition's new owner.
    pub fn take_over_while(
        &self,
        partition: u16,
        store: &Store,
        owned: impl Fn() -> bool,
    ) -> Result<TakeOver, ClusterError> {
        let subject = subject(partition);
        let failed = |e: &dyn std::fmt::Display| {
            ClusterError::jetstream(format!("taking partition {partition} over"), e)
        };
        // Not held while replaying: the store's own writes of the partition
        // fail meanwhile (they wait for no lock the replay needs).
        self.release(partition);
        let mut position = store.log_position(partition).map_err(|e| failed(&e))?;
        let mut applied = 0;
        let mut chunks = Chunks::default();
        loop {
            let last = self
                .call(|reply| Request::Last {
                    subject: subject.clone(),
                    reply,
                })
                .map_err(|e| failed(&e))?
                .map_err(|e| failed(&e))?;
            if last > position {
                applied += self.replay(&subject, (position + 1, last), &mut chunks, store)?;
                position = last;
            }
            if !owned() {
                return Err(failed(&"the partition is no longer this node's"));
            }
            let mut headers = HeaderMap::new();
            headers.insert(TAKEOVER_HEADER, self.node_id.as_str());
            let id = format!("{}.{partition}.takeover.{last}", self.node_id);
            let mut fence = self.fence(partition).map_err(|e| failed(&e))?;
            match self.append_one(&subject, bytes::Bytes::new(), headers, last, id) {
                Ok(sequence) => {
                    *fence = Some(sequence);
                    info!(
                        partition,
                        applied,
                        fence = sequence,
                        "took the partition over"
                    );
                    return Ok(TakeOver {
                        applied,
                        fence: sequence,
                    });
                }
                Err(Append::Fenced(why)) => {
                    debug!(partition, %why, "a message landed during the takeover; replaying it");
                }
                Err(Append::Failed(why)) => return Err(failed(&why)),
            }
        }
    }

    /// Stops appending `partition`'s batches: they fail until it is taken
    /// over again.
    pub fn release(&self, partition: u16) {
        if let Ok(mut fence) = self.fence(partition) {
            *fence = None;
        }
    }

    /// How many entries this log has appended in chunks (entries larger
    /// than one message).
    pub fn chunked_entries(&self) -> u64 {
        self.chunked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls `observe` with how long each append that succeeds took (all
    /// its chunks, from the send of the first to the last one's
    /// acknowledgement): for a latency metric. Set once: a second call is
    /// ignored.
    pub fn observe_appends(&self, observe: impl Fn(std::time::Duration) + Send + Sync + 'static) {
        let _ = self.on_append.set(Box::new(observe));
    }

    /// Whether this log appends `partition`'s batches now.
    pub fn holds(&self, partition: u16) -> bool {
        self.fence(partition).is_ok_and(|f| f.is_some())
    }

    /// Replays messages `from..=until` of `subject` into `store`: the
    /// entries applied. `chunks` holds an entry whose last chunks are yet to
    /// come (a takeover replays again what landed meanwhile).
    fn replay(
        &self,
        subject: &str,
        (from, until): (u64, u64),
        chunks: &mut Chunks,
        store: &Store,
    ) -> Result<u64, ClusterError> {
        let failed =
            |e: &dyn std::fmt::Display| ClusterError::jetstream(format!("replaying {subject}"), e);
        let (items, mut read) = mpsc::channel(64);
        self.requests
            .send(Request::Read {
                subject: subject.to_string(),
                from,
                until,
                items,
            })
            .map_err(|_| failed(&"the log's thread ended"))?;
        let mut applied = 0;
        let mut reached = from.saturating_sub(1);
        while let Some(item) = read.blocking_recv() {
            let message = item.map_err(|e| failed(&e))?;
            reached = message.sequence;
            if let Some((sequence, entry)) = chunks.push(message)
                && store
                    .apply_logged(sequence, &entry)
                    .map_err(|e| failed(&e))?
            {
                applied += 1;
            }
        }
        // A read that ended early (its task stopped) is no replay.
        if reached != until {
            return Err(failed(&format!(
                "the read ended at {reached}, before {until}"
            )));
        }
        Ok(applied)
    }

    /// Sends `request` to the log's thread and waits for its answer.
    fn call<T>(
        &self,
        request: impl FnOnce(std::sync::mpsc::SyncSender<T>) -> Request,
    ) -> Result<T, String> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.requests
            .send(request(reply))
            .map_err(|_| "the write log's thread ended".to_string())?;
        answer
            .recv()
            .map_err(|_| "the write log's thread ended".to_string())
    }

    fn append_one(
        &self,
        subject: &str,
        payload: bytes::Bytes,
        headers: HeaderMap,
        expected: u64,
        id: String,
    ) -> Result<u64, Append> {
        self.call(|reply| Request::Append {
            subject: subject.to_string(),
            payload,
            headers,
            expected,
            id,
            reply,
        })
        .map_err(Append::Failed)?
    }
}

impl WriteLog for JetStreamLog {
    fn append(&self, partition: u16, entry: &[u8]) -> Result<u64, String> {
        let mut fence = self.fence(partition)?;
        let Some(mut last) = *fence else {
            return Err(format!(
                "node {} does not hold partition {partition} (another node owns it, or it was not \
                 taken over yet)",
                self.node_id
            ));
        };
        let started = std::time::Instant::now();
        let subject = subject(partition);
        let pieces: Vec<&[u8]> = if entry.len() <= CHUNK {
            vec![entry]
        } else {
            entry.chunks(CHUNK).collect()
        };
        let count = pieces.len();
        for (i, piece) in pieces.into_iter().enumerate() {
            let mut headers = HeaderMap::new();
            if count > 1 {
                headers.insert(CHUNK_HEADER, (i + 1).to_string().as_str());
                headers.insert(CHUNKS_HEADER, count.to_string().as_str());
            }
            let id = format!("{}.{partition}.{last}", self.node_id);
            let payload = bytes::Bytes::copy_from_slice(piece);
            match self.append_one(&subject, payload, headers, last, id) {
                Ok(sequence) => last = sequence,
                Err(Append::Fenced(why)) => {
                    // Another node wrote the partition: it is not ours.
                    *fence = None;
                    warn!(partition, %why, "fenced out of the partition: another node took it over");
                    return Err(format!(
                        "node {} was fenced out of partition {partition}: another node took it over ({why})",
                        self.node_id
                    ));
                }
                Err(Append::Failed(why)) => {
                    // Whether it landed is unknown: the partition is not
                    // written again before a takeover has replayed what
                    // did (chunks without their end are dropped then).
                    *fence = None;
                    warn!(partition, %why, "an append's outcome is unknown: the partition is taken over again");
                    return Err(format!(
                        "{why}; whether it was logged is unknown, and node {} stops writing partition \
                         {partition} until it has replayed the log",
                        self.node_id
                    ));
                }
            }
        }
        *fence = Some(last);
        if count > 1 {
            self.chunked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(observe) = self.on_append.get() {
            observe(started.elapsed());
        }
        Ok(last)
    }

    fn unapplied(&self, partition: u16) {
        self.release(partition);
        warn!(
            partition,
            "an entry the log took was not applied to the store: the partition is taken over again"
        );
    }
}

impl Drop for JetStreamLog {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        let (closed, _) = mpsc::unbounded_channel();
        self.requests = closed;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An entry's chunks, gathered as a replay reads them.
#[derive(Default)]
struct Chunks {
    bytes: Vec<u8>,
    /// The next chunk expected (0: none pending).
    next: usize,
}

impl Chunks {
    /// Takes one message: the entry it completes, with its position.
    fn push(&mut self, message: Read) -> Option<(u64, Vec<u8>)> {
        let header = |name: &str| {
            message
                .headers
                .as_ref()
                .and_then(|h| h.get(name))
                .and_then(|v| v.as_str().parse::<usize>().ok())
        };
        let takeover = message
            .headers
            .as_ref()
            .is_some_and(|h| h.get(TAKEOVER_HEADER).is_some());
        let (chunk, of) = (header(CHUNK_HEADER), header(CHUNKS_HEADER));
        match (chunk, of) {
            _ if takeover => {
                self.next = 0;
                None
            }
            (Some(i), Some(n)) if i >= 1 && i <= n => {
                if i == 1 {
                    self.bytes.clear();
                    self.next = 1;
                } else if i != self.next {
                    // A torn entry: its end never came.
                    self.next = 0;
                    return None;
                }
                self.bytes.extend_from_slice(&message.payload);
                self.next = i + 1;
                if i == n {
                    self.next = 0;
                    return Some((message.sequence, std::mem::take(&mut self.bytes)));
                }
                None
            }
            _ => {
                self.next = 0;
                Some((message.sequence, message.payload.to_vec()))
            }
        }
    }
}

/// Connects and opens (or creates) the stream.
async fn connect(
    servers: &[String],
    name: &str,
    replicas: usize,
) -> Result<jetstream::Context, ClusterError> {
    let js = crate::connect::jetstream(servers, name).await?;
    let config = stream::Config {
        name: STREAM.to_string(),
        subjects: vec!["sitemapd.log.>".to_string()],
        retention: stream::RetentionPolicy::Limits,
        // Full: appends fail rather than old entries being dropped.
        discard: stream::DiscardPolicy::New,
        storage: stream::StorageType::File,
        num_replicas: replicas,
        ..Default::default()
    };
    let started = tokio::time::Instant::now();
    loop {
        match js.get_or_create_stream(config.clone()).await {
            Ok(_) => return Ok(js),
            Err(e) if started.elapsed() < RETRY_FOR => {
                debug!(error = %e, "the log's stream is not ready; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(ClusterError::jetstream("opening the log's stream", e)),
        }
    }
}

/// The log's thread: answers requests until the log is dropped, each in a
/// task of its own, so that a long replay never holds up an append (the
/// appends of one partition come one at a time: its fence is held).
async fn serve(js: jetstream::Context, mut requests: mpsc::UnboundedReceiver<Request>) {
    while let Some(request) = requests.recv().await {
        let js = js.clone();
        tokio::spawn(async move {
            match request {
                Request::Append {
                    subject,
                    payload,
                    headers,
                    expected,
                    id,
                    reply,
                } => {
                    let _ = reply.send(append(&js, subject, payload, headers, expected, &id).await);
                }
                Request::Last { subject, reply } => {
                    let _ = reply.send(last_sequence(&js, &subject).await);
                }
                Request::Read {
                    subject,
                    from,
                    until,
                    items,
                } => read(&js, &subject, from, until, &items).await,
            }
        });
    }
}

/// One fenced append, sent again under the same id while its answer is
/// lost: the sequence it took.
async fn append(
    js: &jetstream::Context,
    subject: String,
    payload: bytes::Bytes,
    headers: HeaderMap,
    expected: u64,
    id: &str,
) -> Result<u64, Append> {
    let started = tokio::time::Instant::now();
    loop {
        let publish = jetstream::message::PublishMessage::build()
            .payload(payload.clone())
            .headers(headers.clone())
            .message_id(id)
            .expected_last_subject_sequence(expected);
        let outcome = match js.send_publish(subject.clone(), publish).await {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        let error = match outcome {
            Ok(ack) => return Ok(ack.sequence),
            Err(e) => e,
        };
        let text = error.to_string();
        let fenced = error.kind() == PublishErrorKind::WrongLastSequence
            // Another writer's append in flight on the subject (10164).
            || (error.kind() == PublishErrorKind::Other && text.contains("wrong last sequence"));
        if fenced {
            // An earlier send of this very message may have landed, its
            // answer lost: then the subject's last message is it (a lone
            // server checks the fence before the message id).
            return match landed(js, &subject, id).await {
                Ok(Some(sequence)) => Ok(sequence),
                Ok(None) => Err(Append::Fenced(text)),
                Err(e) => Err(Append::Failed(format!(
                    "appending to {subject}: {text}, and the last message could not be read: {e}"
                ))),
            };
        }
        match error.kind() {
            PublishErrorKind::TimedOut
            | PublishErrorKind::BrokenPipe
            | PublishErrorKind::StreamNotFound
            | PublishErrorKind::Other
                if started.elapsed() < RETRY_FOR =>
            {
                debug!(%subject, error = %text, "append unanswered; sending it again under its id");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            _ => return Err(Append::Failed(format!("appending to {subject}: {text}"))),
        }
    }
}

/// The sequence of `subject`'s last message if its message id is `id`.
async fn landed(js: &jetstream::Context, subject: &str, id: &str) -> Result<Option<u64>, String> {
    let stream = js
        .get_stream_no_info(STREAM)
        .await
        .map_err(|e| e.to_string())?;
    let last = match stream.get_last_raw_message_by_subject(subject).await {
        Ok(last) => last,
        Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let ours = last
        .headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .is_some_and(|h| h.as_str() == id);
    Ok(ours.then_some(last.sequence))
}

/// The sequence of `subject`'s last message (0: none).
async fn last_sequence(js: &jetstream::Context, subject: &str) -> Result<u64, String> {
    let stream = js
        .get_stream_no_info(STREAM)
        .await
        .map_err(|e| e.to_string())?;
    match stream.get_last_raw_message_by_subject(subject).await {
        Ok(message) => Ok(message.sequence),
        Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(0),
        Err(e) => Err(e.to_string()),
    }
}

/// Sends the messages `from..=until` of `subject` to `items`, in order.
async fn read(
    js: &jetstream::Context,
    subject: &str,
    from: u64,
    until: u64,
    items: &mpsc::Sender<Result<Read, String>>,
) {
    let result = async {
        let stream = js
            .get_stream_no_info(STREAM)
            .await
            .map_err(|e| e.to_string())?;
        let reader = stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: subject.to_string(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: from,
                },
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())?;
        let mut messages = reader.messages().await.map_err(|e| e.to_string())?;
        loop {
            // A message that never comes (one deleted under the read) ends
            // it as an error, not a wait without end.
            let Ok(next) = tokio::time::timeout(RETRY_FOR, messages.next()).await else {
                return Err(format!("no message of {subject} within {RETRY_FOR:?}"));
            };
            let Some(message) = next else { break };
            let message = message.map_err(|e| e.to_string())?;
            let sequence = message.info().map_err(|e| e.to_string())?.stream_sequence;
            if sequence > until {
                break;
            }
            let read = Read {
                sequence,
                headers: message.headers.clone(),
                payload: message.payload.clone(),
            };
            if items.send(Ok(read)).await.is_err() || sequence == until {
                break;
            }
        }
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = result {
        let _ = items.send(Err(e)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(sequence: u64, headers: &[(&str, &str)], payload: &[u8]) -> Read {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, *v);
        }
        Read {
            sequence,
            headers: (!headers.is_empty()).then_some(map),
            payload: bytes::Bytes::copy_from_slice(payload),
        }
    }

    /// A send whose answer was lost, sent again under its id, is stored
    /// once; an append on a stale fence is refused as fenced.
    #[test]
    fn an_append_sent_again_under_its_id_is_stored_once() {
        let nats = sitemapd_testsite::nats::NatsCluster::start(1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let js = connect(&nats.urls(), "t", 1).await.unwrap();
            let send = |expected: u64, id: &'static str| {
                append(
                    &js,
                    subject(4),
                    bytes::Bytes::from_static(b"entry"),
                    HeaderMap::new(),
                    expected,
                    id,
                )
            };
            let first = send(0, "a.4.0").await.unwrap();
            assert_eq!(send(0, "a.4.0").await.unwrap(), first);
            assert_eq!(last_sequence(&js, &subject(4)).await.unwrap(), first);
            match send(0, "b.4.0").await {
                Err(Append::Fenced(why)) => assert!(why.contains("wrong last sequence"), "{why}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(send(first, "b.4.1").await.unwrap(), first + 1);
            assert_eq!(last_sequence(&js, &subject(5)).await.unwrap(), 0);
        });
    }

    #[test]
    fn chunks_make_an_entry_and_a_torn_one_is_dropped() {
        let mut chunks = Chunks::default();
        assert_eq!(
            chunks.push(message(1, &[], b"whole")),
            Some((1, b"whole".to_vec()))
        );
        fn c(i: &str) -> [(&str, &str); 2] {
            [(CHUNK_HEADER, i), (CHUNKS_HEADER, "3")]
        }
        assert_eq!(chunks.push(message(2, &c("1"), b"ab")), None);
        assert_eq!(chunks.push(message(3, &c("2"), b"cd")), None);
        assert_eq!(
            chunks.push(message(4, &c("3"), b"e")),
            Some((4, b"abcde".to_vec()))
        );
        // Torn: chunks 1 and 2, then a takeover; then a new entry.
        assert_eq!(chunks.push(message(5, &c("1"), b"x")), None);
        assert_eq!(chunks.push(message(6, &c("2"), b"y")), None);
        assert_eq!(
            chunks.push(message(7, &[(TAKEOVER_HEADER, "b")], b"")),
            None
        );
        assert_eq!(chunks.push(message(8, &c("3"), b"z")), None);
        assert_eq!(
            chunks.push(message(9, &[], b"next")),
            Some((9, b"next".to_vec()))
        );
        // Torn by a whole entry in the middle.
        assert_eq!(chunks.push(message(10, &c("1"), b"x")), None);
        assert_eq!(
            chunks.push(message(11, &[], b"w")),
            Some((11, b"w".to_vec()))
        );
        assert_eq!(chunks.push(message(12, &c("2"), b"y")), None);
    }
}
