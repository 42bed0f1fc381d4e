//! TLS: an `https://` fetch from a loopback server whose certificate chains
//! to a test CA the fetcher trusts ([`FetchConfig::test_roots`], a setting
//! for tests only), and the certificates the fetcher must refuse: one
//! nobody vouches for (self-signed), and one of the trusted CA for another
//! name. The certificates are checked in under `fixtures/tls/`, made by its
//! `make.sh`.
//!
//! The server is a rustls acceptor on 127.0.0.1; the fetcher reaches it by
//! the name `tls.test` (its `resolve` table, like `--resolve`), with the
//! address guard on and only 127.0.0.1 let through.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sitemapd_discovery::{FetchConfig, FetchError, Fetcher, Validators};
use sitemapd_parser::NormUrl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BODY: &str = "https://tls.test/page\n";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../fixtures/tls/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The test CA, as the fetcher is given it (DER).
fn test_ca() -> Vec<u8> {
    CertificateDer::from_pem_slice(&fixture("ca.pem"))
        .unwrap()
        .to_vec()
}

/// An HTTPS server on 127.0.0.1 presenting `cert` (PEM, leaf first) with
/// `key`: what it saw.
struct TlsSite {
    addr: SocketAddr,
    /// Requests answered (after a completed handshake).
    requests: Arc<AtomicUsize>,
    /// Why handshakes failed, as the server saw it.
    failed: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tls_site(cert: &str, key: &str) -> TlsSite {
    let chain = CertificateDer::pem_slice_iter(&fixture(cert))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(&fixture(key)).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(Mutex::new(Vec::new()));
    let (seen, why) = (requests.clone(), failed.clone());
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen, why) = (acceptor.clone(), seen.clone(), why.clone());
            tokio::spawn(async move {
                let mut tls = match acceptor.accept(tcp).await {
                    Ok(tls) => tls,
                    Err(e) => {
                        why.lock().unwrap().push(e.to_string());
                        return;
                    }
                };
                // The request head, then one response and close.
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                    BODY.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    TlsSite {
        addr,
        requests,
        failed,
        task,
    }
}

/// A fetcher with the guard on, `tls.test` and `other.test` resolving to
/// 127.0.0.1 (the one address let through), trusting `roots` besides the
/// system's.
fn fetcher(roots: Vec<Vec<u8>>) -> Fetcher {
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    Fetcher::new(FetchConfig {
        allow_private: false,
        allow_addresses: vec![loopback],
        resolve: HashMap::from([
            ("tls.test".to_string(), vec![loopback]),
            ("other.test".to_string(), vec![loopback]),
        ]),
        min_delay: Duration::ZERO,
        backoff: Duration::from_millis(10),
        deadline: Duration::from_secs(60),
        test_roots: roots,
        ..FetchConfig::default()
    })
    .unwrap()
}

async fn get(fetcher: &Fetcher, url: &str) -> Result<(u16, String), FetchError> {
    let fetched = fetcher
        .get(&NormUrl::parse(url).unwrap(), &Validators::default())
        .await?;
    let status = fetched.status;
    let mut body = String::new();
    fetched
        .into_body()
        .read_to_string(&mut body)
        .await
        .expect("the body");
    Ok((status, body))
}

/// The error of a fetch that must fail in the handshake: a connection
/// failure that says the TLS handshake failed.
#[track_caller]
fn handshake_failure(result: Result<(u16, String), FetchError>) -> String {
    match result {
        Err(FetchError::Connect(message)) => {
            assert!(
                sitemapd_discovery::fetch::is_tls_failure(&message),
                "{message}"
            );
            assert!(
                message.starts_with(sitemapd_discovery::fetch::TLS_FAILED),
                "{message}"
            );
            message
        }
        other => panic!("the handshake should have failed: {other:?}"),
    }
}

#[tokio::test]
async fn an_https_fetch_from_a_server_of_a_trusted_ca() {
    let site = tls_site("server.pem", "server.key").await;
    let url = format!("https://tls.test:{}/sitemap.txt", site.addr.port());
    let (status, body) = get(&fetcher(vec![test_ca()]), &url).await.unwrap();
    assert_eq!((status, body.as_str()), (200, BODY));
    assert_eq!(site.requests.load(Ordering::SeqCst), 1);
    assert!(site.failed.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_certificate_nobody_vouches_for_is_refused() {
    // Self-signed, for the right name: not a root the fetcher trusts (the
    // test CA is given, and does not help).
    let site = tls_site("self-signed.pem", "self-signed.key").await;
    let url = format!("https://tls.test:{}/sitemap.txt", site.addr.port());
    let message = handshake_failure(get(&fetcher(vec![test_ca()]), &url).await);
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    // The same server's certificate chains to the test CA: without it
    // given, refused the same way.
    let trusted = tls_site("server.pem", "server.key").await;
    let url = format!("https://tls.test:{}/sitemap.txt", trusted.addr.port());
    let message = handshake_failure(get(&fetcher(Vec::new()), &url).await);
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    // Nothing was asked of either: no request crossed a failed handshake;
    // and a refused certificate is not tried again (one handshake each).
    // (The server notes a failed handshake on its own task: waited for.)
    for s in [&site, &trusted] {
        let start = std::time::Instant::now();
        while s.failed.lock().unwrap().is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no failed handshake seen"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(s.requests.load(Ordering::SeqCst), 0);
        assert_eq!(s.failed.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_trusted_certificate_for_another_name_is_refused() {
    let site = tls_site("server.pem", "server.key").await;
    let url = format!("https://other.test:{}/sitemap.txt", site.addr.port());
    let message = handshake_failure(get(&fetcher(vec![test_ca()]), &url).await);
    assert!(
        message
            .contains(r#"invalid peer certificate: certificate not valid for name "other.test""#),
        "{message}"
    );
    assert_eq!(site.requests.load(Ordering::SeqCst), 0);
}
