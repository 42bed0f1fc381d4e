//! The generated protocol is the reference's on the wire: field numbers and
//! types (checked on encoded bytes), and the rpc paths, in the generated
//! code and as the generated client sends them to a server on loopback.

use std::sync::{Arc, Mutex};

use prost::Message;
use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
use sitemapd_urlfrontier::proto::{
    AckMessage, AnyCrawlId, BatchAck, GetParams, KnownUrlItem, ListUrlParams, Local,
    LogLevelParams, Stats, StringList, UrlInfo, UrlItem, ack_message, get_params, log_level_params,
    url_item,
};

/// A field's tag byte: number << 3 | wire type (0 varint, 2 length-delimited).
fn tag(number: u8, wire: u8) -> u8 {
    number << 3 | wire
}

#[test]
fn messages_carry_the_reference_field_numbers() {
    let stats = Stats {
        size: 1,
        in_process: 2,
        counts: [("completed".to_string(), 3)].into(),
        number_of_queues: 4,
        crawl_id: "c".into(),
    };
    let bytes = stats.encode_to_vec();
    assert_eq!(&bytes[..4], &[tag(1, 0), 1, tag(2, 0), 2]);
    assert_eq!(bytes[4], tag(3, 2), "counts is field 3, a map");
    assert!(bytes.ends_with(&[tag(4, 0), 4, tag(5, 2), 1, b'c']));

    // GetParams: the crawl is a oneof of anyCrawlID (5) and crawlID (6).
    let any = GetParams {
        max_urls_per_queue: 1,
        max_queues: 2,
        key: "k".into(),
        delay_requestable: 3,
        item: Some(get_params::Item::AnyCrawlId(AnyCrawlId {})),
    };
    assert_eq!(
        any.encode_to_vec(),
        [
            tag(1, 0),
            1,
            tag(2, 0),
            2,
            tag(3, 2),
            1,
            b'k',
            tag(4, 0),
            3,
            tag(5, 2),
            0
        ]
    );
    let one = GetParams {
        item: Some(get_params::Item::CrawlId("x".into())),
        ..Default::default()
    };
    assert_eq!(one.encode_to_vec(), [tag(6, 2), 1, b'x']);

    // URLItem: known (2) holding info (1) and refetchable_from_date (2); ID 3; creation_date 4.
    let item = UrlItem {
        item: Some(url_item::Item::Known(KnownUrlItem {
            info: Some(UrlInfo {
                url: "u".into(),
                key: "q".into(),
                metadata: Default::default(),
                crawl_id: "c".into(),
            }),
            refetchable_from_date: 5,
        })),
        id: "i".into(),
        creation_date: 6,
    };
    let info = [tag(1, 2), 1, b'u', tag(2, 2), 1, b'q', tag(4, 2), 1, b'c'];
    let mut known = vec![tag(1, 2), info.len() as u8];
    known.extend(info);
    known.extend([tag(2, 0), 5]);
    let mut want = vec![tag(2, 2), known.len() as u8];
    want.extend(known);
    want.extend([tag(3, 2), 1, b'i', tag(4, 0), 6]);
    assert_eq!(item.encode_to_vec(), want);

    // Enums: AckMessage.Status and LogLevelParams.Level keep their numbers.
    let ack = AckMessage {
        id: "i".into(),
        status: ack_message::Status::Fail as i32,
    };
    assert_eq!(ack.encode_to_vec(), [tag(1, 2), 1, b'i', tag(2, 0), 2]);
    let batch = BatchAck {
        id: String::new(),
        statuses: vec![
            ack_message::Status::Ok as i32,
            ack_message::Status::Skipped as i32,
        ],
    };
    assert_eq!(
        batch.encode_to_vec(),
        [tag(2, 2), 2, 0, 1],
        "packed repeated enum"
    );
    let level = LogLevelParams {
        package: "p".into(),
        level: log_level_params::Level::Error as i32,
        local: true,
    };
    assert_eq!(
        level.encode_to_vec(),
        [tag(1, 2), 1, b'p', tag(2, 0), 4, tag(3, 0), 1]
    );

    // proto3 `optional`: an explicit false is sent (presence), unlike a plain bool.
    let list = ListUrlParams {
        ignore_case: Some(false),
        ..Default::default()
    };
    assert_eq!(list.encode_to_vec(), [tag(7, 0), 0]);
    let values = StringList {
        values: vec!["a".into()],
    };
    assert_eq!(values.encode_to_vec(), [tag(1, 2), 1, b'a']);
}

#[test]
fn every_rpc_has_the_reference_path() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/urlfrontier.rs"));
    for rpc in sitemapd_urlfrontier::RPCS {
        let path = format!("\"/urlfrontier.URLFrontier/{rpc}\"");
        // Once in the client, once in the server's router.
        assert_eq!(generated.matches(&path).count(), 2, "{path}");
        assert_eq!(
            sitemapd_urlfrontier::rpc_of(&path[1..path.len() - 1]),
            Some(rpc)
        );
    }
    // And RPCS has them all: the generated code names no other path.
    assert_eq!(
        generated.matches("\"/urlfrontier.URLFrontier/").count(),
        2 * sitemapd_urlfrontier::RPCS.len()
    );
    assert_eq!(
        sitemapd_urlfrontier::rpc_of("/urlfrontier.URLFrontier/Nope"),
        None
    );
    assert_eq!(sitemapd_urlfrontier::rpc_of("/other.Service/GetURLs"), None);
}

#[tokio::test]
async fn the_generated_client_calls_the_reference_paths_on_loopback() {
    // A gRPC endpoint that records each request's path and answers
    // UNIMPLEMENTED (trailers-only): what the generated client puts on the
    // wire, unary and streaming, read back by a real HTTP/2 server.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let router = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push(uri.path().to_string());
            [("content-type", "application/grpc"), ("grpc-status", "12")]
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_routes(tonic::service::Routes::from(router))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
    });
    let mut client = UrlFrontierClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let unary = client.get_active(Local { local: false }).await.unwrap_err();
    assert_eq!(unary.code(), tonic::Code::Unimplemented, "{unary:?}");
    let streaming = client.get_ur_ls(GetParams::default()).await.unwrap_err();
    assert_eq!(
        streaming.code(),
        tonic::Code::Unimplemented,
        "{streaming:?}"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "/urlfrontier.URLFrontier/GetActive",
            "/urlfrontier.URLFrontier/GetURLs"
        ]
    );
    server.abort();
}
