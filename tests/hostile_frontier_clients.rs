//! Hostile clients of the real daemon's URLFrontier service: idle
//! connections from many addresses, values past the protocol's sense
//! (refused with the bound they broke), and a batch too big to write at
//! once.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::daemon::TOKEN;
use common::frontier::*;
use common::sockets::{connect_from, count_open, daemon_with_fd_limit, raise_fd_limit};
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};

/// `delay_requestable` past 7 days (the HTTP lease's `ttl_secs` bound) is
/// INVALID_ARGUMENT in GetURLs and SetDelay, naming the bound; 7 days
/// itself is taken. A refetch date past 9999-12-31 is SKIPPED, not
/// clamped; the last second of 9999 is taken.
#[test]
fn delays_and_dates_past_their_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        let url = "https://a.example/page";
        assert_eq!(put(&mut c, vec![discovered(url, "")]).await[url], Ack::Ok);

        let mut too_long = get(1, 1, "", None);
        too_long.delay_requestable = u32::MAX;
        let refused = c.get_ur_ls(too_long).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(refused.message().contains("at most 604800"), "{refused:?}");
        let mut week = get(1, 1, "", None);
        week.delay_requestable = 604_800;
        assert_eq!(urls(&get_urls(&mut c, week).await), [url]);

        let delay = |secs| proto::QueueDelayParams {
            key: "a.example".into(),
            delay_requestable: secs,
            crawl_id: String::new(),
            local: false,
        };
        let refused = c.set_delay(delay(604_801)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(refused.message().contains("at most 604800"), "{refused:?}");
        c.set_delay(delay(604_800)).await.unwrap();

        let far = "https://a.example/far";
        let last = "https://a.example/last";
        let acks = put(
            &mut c,
            vec![
                known(far, "", 1 << 63, &[]),
                known(last, "", 253_402_300_799, &[]),
            ],
        )
        .await;
        assert_eq!((acks[far], acks[last]), (Ack::Skipped, Ack::Ok));
        let status = |url: &str| proto::UrlStatusRequest {
            url: url.into(),
            key: String::new(),
            crawl_id: String::new(),
        };
        let missing = c.get_url_status(status(far)).await.unwrap_err();
        assert_eq!(missing.code(), tonic::Code::NotFound);
        let kept = c.get_url_status(status(last)).await.unwrap().into_inner();
        let Some(proto::url_item::Item::Known(k)) = kept.item else {
            panic!("a known item: {kept:?}")
        };
        assert_eq!(k.refetchable_from_date, 253_402_300_799);
    });
}

/// One PutDiscovered batch of 100,000 URLs (3.4 MiB, under the 4 MiB
/// message bound) is written a chunk at a time: its URLs become visible
/// in part while it is written, and an HTTP lease made meanwhile is
/// answered before the batch's ack, instead of waiting behind one write of
/// the whole batch.
#[test]
fn a_big_put_discovered_batch_is_written_in_chunks() {
    const N: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &[]);
    let acked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let acked = acked.clone();
        std::thread::spawn(move || {
            runtime().block_on(async {
                let mut c = client(&addr, Some(TOKEN)).await;
                let batch = proto::DiscoveredBatch {
                    id: "big".into(),
                    items: (0..N)
                        .map(|i| info(&format!("https://h{}.example/p{i}", i % 100), "", &[]))
                        .collect(),
                };
                let mut acks = c
                    .put_discovered(tokio_stream::iter(vec![batch]))
                    .await
                    .unwrap()
                    .into_inner();
                let ack = acks.message().await.unwrap().unwrap();
                acked.store(true, std::sync::atomic::Ordering::SeqCst);
                ack
            })
        })
    };
    // The first time any of the batch shows, and a lease made then.
    let mut first_seen = 0;
    let mut leased_before_ack = None;
    while !writer.is_finished() {
        let active = d.active();
        if active > 0 && first_seen == 0 {
            first_seen = active;
            let lease = d.post("/v1/lease", serde_json::json!({ "n": 5 }));
            leased_before_ack = Some((
                lease["urls"].as_array().map_or(0, Vec::len),
                !acked.load(std::sync::atomic::Ordering::SeqCst),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let ack = writer.join().unwrap();
    assert_eq!(ack.id, "big");
    assert_eq!(ack.statuses.len(), N);
    assert!(ack.statuses.iter().all(|s| *s == Ack::Ok as i32));
    assert_eq!(d.active(), N as u64);
    assert!(
        first_seen > 0 && first_seen < N as u64,
        "the batch showed first with {first_seen} of {N} URLs"
    );
    assert_eq!(leased_before_ack, Some((5, true)));
}

/// 2,000 connections from 40 loopback addresses that never send a byte,
/// against a daemon whose open-file limit leaves the service 256 slots:
/// an authenticated call on a new connection takes the slot of the
/// oldest idle one and is answered; the idle ones are closed once the
/// first-request timeout (`api.head_timeout_secs`, 1 s here) has passed;
/// the log says connections were shed and `/metrics` counts them.
#[test]
fn idle_connections_do_not_lock_out_a_client() {
    raise_fd_limit(2_400);
    let dir = tempfile::tempdir().unwrap();
    let d = daemon_with_fd_limit(
        &dir.path().join("store"),
        &[
            "--urlfrontier-listen",
            "127.0.0.1:0",
            "--head-timeout-secs",
            "1",
        ],
    );
    let addr = frontier_addr(&d);
    let to = addr.parse().unwrap();
    let idle: Vec<_> = (0..2_000u32)
        .filter_map(|i| {
            let from = Ipv4Addr::new(127, 0, 0, 2 + (i % 40) as u8);
            connect_from(from, to, Duration::from_secs(1)).ok()
        })
        .collect();
    assert!(idle.len() > 1_500, "only {} connected", idle.len());
    let started = Instant::now();
    let answered = runtime().block_on(async {
        let call = async {
            let mut c = try_client(&addr, Some(TOKEN)).await?;
            c.get_stats(scoped("", ""))
                .await
                .map(|s| s.into_inner().size)
                .map_err(|e| format!("{e:?}"))
        };
        tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .unwrap_or_else(|_| Err("no answer in 10 s".into()))
    });
    assert_eq!(answered, Ok(0), "after {:?}", started.elapsed());
    eprintln!(
        "answered in {:?} under {} idle connections",
        started.elapsed(),
        idle.len()
    );
    d.wait_for("the idle connections closed", |_| count_open(&idle) == 0);
    assert!(
        d.log().contains("URLFrontier connections at their limit"),
        "{}",
        d.log()
    );
    let metrics = d.get("/metrics");
    let metrics = metrics.as_str().unwrap();
    assert!(
        metrics.contains("sitemapd_connections_shed_total{listener=\"urlfrontier\""),
        "{metrics}"
    );
}

/// 640 ListURLs streams (5 connections x 128) whose client reads nothing,
/// on a store of 3,000 URLs: at most 4 per connection and 16 in all are
/// served (the rest are RESOURCE_EXHAUSTED), and those hold no thread of
/// the blocking pool the store's reads run on: an HTTP lease and GetStats
/// are answered meanwhile.
#[test]
fn unread_list_streams_do_not_stall_the_daemon() {
    use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
    use tonic::transport::Endpoint;
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        let items = (0..3_000)
            .map(|i| {
                discovered(
                    &format!("https://h{}.example/{i}/{}", i % 30, "p".repeat(60)),
                    "",
                )
            })
            .collect();
        put(&mut c, items).await;
        let (mut open, mut exhausted, mut per_connection) = (Vec::new(), 0, Vec::new());
        for _ in 0..5 {
            // Small windows: the service's sends block once a few items
            // are unread.
            let channel = Endpoint::from_shared(format!("http://{addr}"))
                .unwrap()
                .initial_stream_window_size(1024)
                .initial_connection_window_size(65_535)
                .connect()
                .await
                .unwrap();
            let mut raw = UrlFrontierClient::new(channel);
            let before = open.len();
            for _ in 0..128 {
                let mut req = tonic::Request::new(list_params("", "", 0, u32::MAX >> 1));
                req.metadata_mut()
                    .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
                match raw.list_ur_ls(req).await {
                    Ok(stream) => open.push(stream),
                    Err(e) if e.code() == tonic::Code::ResourceExhausted => exhausted += 1,
                    Err(e) => panic!("{e:?}"),
                }
            }
            per_connection.push(open.len() - before);
        }
        // The daemon answers meanwhile, on both ports.
        let started = Instant::now();
        let answered = tokio::time::timeout(Duration::from_secs(10), async {
            let stats = c.get_stats(scoped("", "")).await.unwrap().into_inner();
            let addr = d.addr;
            let lease = tokio::task::spawn_blocking(move || {
                common::http(addr, "POST", "/v1/lease", Some(TOKEN), Some(r#"{"n":5}"#))
            })
            .await
            .unwrap();
            (stats.size, lease.0)
        })
        .await;
        assert_eq!(answered, Ok((3_000, 200)));
        eprintln!("GetStats and a lease answered in {:?}", started.elapsed());
        assert_eq!((open.len(), exhausted), (16, 624));
        assert_eq!(per_connection, [4, 4, 4, 4, 0]);
        drop(open);
    });
}

/// The daemon's resident memory, bytes.
fn rss(d: &common::daemon::Daemon) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.child.id())).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// 128 PutDiscovered streams (two connections), each sending all but the
/// last byte of a message that declares 4 MiB - 1: the bytes held for
/// messages not yet complete stay within the service's budget (64 MiB),
/// the streams past it fail with RESOURCE_EXHAUSTED, and the daemon's
/// RSS grows by 256 MiB at most (it grew by 4 MiB a stream before).
#[test]
fn partial_messages_are_bounded_in_total() {
    const DECLARED: usize = (4 << 20) - 1;
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &[]);
    let before = rss(&d);
    let mut message = vec![0u8];
    message.extend((DECLARED as u32).to_be_bytes());
    message.resize(5 + DECLARED - 1, b'x');
    let message = bytes::Bytes::from(message);
    let (peak, refused) = runtime().block_on(async {
        let mut responses = Vec::new();
        for _ in 0..2 {
            let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let (mut h2, conn) = h2::client::handshake(tcp).await.unwrap();
            tokio::spawn(conn);
            for _ in 0..64 {
                h2 = h2.ready().await.unwrap();
                let request = axum::http::Request::builder()
                    .method("POST")
                    .uri(format!(
                        "http://{addr}/urlfrontier.URLFrontier/PutDiscovered"
                    ))
                    .header("content-type", "application/grpc")
                    .header("te", "trailers")
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(())
                    .unwrap();
                let (response, mut send) = h2.send_request(request, false).unwrap();
                send.send_data(message.clone(), false).unwrap();
                responses.push((response, send));
            }
        }
        // Watch the daemon's memory while the bytes arrive.
        let mut peak = 0;
        for _ in 0..24 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            peak = peak.max(rss(&d));
        }
        // A refused stream ends with RESOURCE_EXHAUSTED (8), in its head
        // or its trailers.
        let statuses = responses.into_iter().map(|(response, send)| {
            tokio::time::timeout(Duration::from_secs(1), async move {
                let _send = send;
                let r = response.await.ok()?;
                if let Some(s) = r.headers().get("grpc-status") {
                    return Some(s.clone());
                }
                let mut body = r.into_body();
                while body.data().await.is_some() {}
                body.trailers().await.ok()??.get("grpc-status").cloned()
            })
        });
        let refused = futures_util::future::join_all(statuses)
            .await
            .into_iter()
            .filter(|status| matches!(status, Ok(Some(s)) if s == "8"))
            .count();
        (peak, refused)
    });
    let grown = peak.saturating_sub(before);
    eprintln!(
        "RSS {before} -> peak {peak} (+{} MiB); {refused} refused",
        grown >> 20
    );
    assert!(grown <= 256 << 20, "RSS grew by {} MiB", grown >> 20);
    assert!(refused >= 100, "{refused} of 128 streams refused");
}

/// Whether the daemon still holds `conn` open, whatever it sent first (a
/// TLS server's session tickets): what is waiting is read, then an EOF or
/// a reset means closed.
fn still_open(mut conn: &std::net::TcpStream) -> bool {
    use std::io::Read;
    conn.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let open = loop {
        match conn.read(&mut buf) {
            Ok(0) => break false,
            Ok(_) => continue,
            Err(e) => break e.kind() == std::io::ErrorKind::WouldBlock,
        }
    };
    conn.set_nonblocking(false).unwrap();
    open
}

/// A TLS client of the test CA: its handshake with the daemon completed
/// over `conn`, then nothing sent.
fn tls_handshake(conn: &mut std::net::TcpStream) {
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(pki("ca.pem")).unwrap())
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    while tls.is_handshaking() {
        tls.complete_io(conn).unwrap();
    }
}

/// Over TLS, connections that send nothing, before their handshake or
/// after it, are closed once the first-call timeout (3 s here) has passed,
/// as in plain text (the timeout runs beneath TLS: a client that never
/// says hello is cut by it too, not only by the 10 s handshake bound); and
/// a call open longer than that on a TLS connection is never cut (tonic
/// hands the connection's slot to its calls under TLS as well).
#[test]
fn silent_tls_connections_are_closed_and_open_calls_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (pki("server.pem"), pki("server.key"));
    let tls = [
        "--urlfrontier-tls-cert",
        &cert,
        "--urlfrontier-tls-key",
        &key,
        "--head-timeout-secs",
        "3",
    ];
    let (_d, addr) = frontier_daemon(&dir, &tls);
    let to: std::net::SocketAddr = addr.parse().unwrap();
    let no_hello: Vec<_> = (0..50)
        .map(|_| std::net::TcpStream::connect(to).unwrap())
        .collect();
    let after_handshake: Vec<_> = (0..10)
        .map(|_| {
            let mut conn = std::net::TcpStream::connect(to).unwrap();
            tls_handshake(&mut conn);
            conn
        })
        .collect();
    assert_eq!(count_open(&no_hello), 50);
    assert!(after_handshake.iter().all(still_open));

    // A put stream open for 5 s (one URL, then another 5 s later) on a
    // TLS connection with the token.
    let acks = runtime().block_on(async {
        let channel = tls_channel(&addr, None).await.unwrap();
        let auth: Auth = Box::new(|mut req: tonic::Request<()>| {
            let bearer = format!("Bearer {TOKEN}").parse().unwrap();
            req.metadata_mut().insert("authorization", bearer);
            Ok(req)
        });
        let mut c =
            sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient::with_interceptor(
                channel, auth,
            );
        let items = async_stream_of_two(
            discovered("https://a.example/1", ""),
            discovered("https://a.example/2", ""),
            Duration::from_secs(5),
        );
        let mut acks = c.put_ur_ls(items).await.unwrap().into_inner();
        let mut got = Vec::new();
        loop {
            match acks.message().await {
                Ok(Some(ack)) => got.push(Ok(ack.id)),
                Ok(None) => break,
                Err(e) => {
                    got.push(Err(format!("{e:?}")));
                    break;
                }
            }
        }
        got
    });
    assert_eq!(
        acks,
        [
            Ok("https://a.example/1".to_string()),
            Ok("https://a.example/2".to_string())
        ]
    );
    // By now (5 s on) the silent ones are closed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (count_open(&no_hello) > 0 || after_handshake.iter().any(still_open))
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(count_open(&no_hello), 0, "silent before the handshake");
    let open = after_handshake.iter().filter(|c| still_open(c)).count();
    assert_eq!(open, 0, "silent after the handshake");
}

/// A stream of `first`, then `second` after `gap`.
fn async_stream_of_two(
    first: proto::UrlItem,
    second: proto::UrlItem,
    gap: Duration,
) -> impl tokio_stream::Stream<Item = proto::UrlItem> {
    use tokio_stream::StreamExt;
    tokio_stream::iter([first]).chain(tokio_stream::once(second).then(move |item| async move {
        tokio::time::sleep(gap).await;
        item
    }))
}
