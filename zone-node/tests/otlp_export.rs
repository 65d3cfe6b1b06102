//! The trace pipeline end to end: what `Tracing::start` builds from the `OTEL_*`
//! configuration delivers spans to an OTLP/gRPC collector (fake-opentelemetry-collector)
//! and POSTs OTLP/HTTP protobuf to `/v1/traces`, with the zone node's resource
//! (`service.name`, `service.instance.id`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::time::Duration;

use fake_opentelemetry_collector::FakeCollectorServer;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tracing_subscriber::layer::SubscriberExt as _;
use zone_node::telemetry::{self, TraceConfig, Tracing};

fn config(vars: &[(&str, String)]) -> TraceConfig {
    let m: HashMap<&str, String> = vars.iter().cloned().collect();
    TraceConfig::from_lookup(|k| m.get(k).cloned(), "zone-node", Some("n7"))
        .unwrap()
        .expect("an endpoint is set")
}

/// A handoff-like pair of spans recorded through `t`'s layer.
fn record(t: &Tracing) {
    let sub = tracing_subscriber::registry().with(telemetry::layer(t.tracer()));
    tracing::subscriber::with_default(sub, || {
        let root = tracing::info_span!("handoff.source", node = "n7");
        let _g = root.enter();
        let _c = tracing::info_span!("internal.recv", msg = "TransferAck").entered();
        // Not exported: a log-context span.
        let _z = tracing::info_span!("zone", zone = "Plains").entered();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_export_reaches_the_collector() {
    let mut collector = FakeCollectorServer::start().await.unwrap();
    let cfg = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())]);
    let t = Tracing::start(&cfg).unwrap();
    record(&t);
    // Shutdown flushes the batch (on a thread outside this runtime, as the binaries do).
    tokio::task::spawn_blocking(move || t.shutdown())
        .await
        .unwrap();
    let spans = collector.exported_spans(2, Duration::from_secs(10)).await;
    let mut names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["handoff.source", "internal.recv"]);
    let root = spans.iter().find(|s| s.name == "handoff.source").unwrap();
    let child = spans.iter().find(|s| s.name == "internal.recv").unwrap();
    assert_eq!(child.trace_id, root.trace_id);
    assert_eq!(child.parent_span_id, root.span_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_protobuf_posts_to_v1_traces_with_the_resource() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        // Headers, then a body of content-length bytes.
        let (head_len, body_len) = loop {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed before the request ended");
            req.extend_from_slice(&buf[..n]);
            if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&req[..i]).to_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                break (i + 4, len);
            }
        };
        while req.len() < head_len + body_len {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0);
            req.extend_from_slice(&buf[..n]);
        }
        s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )
        .await
        .unwrap();
        let head = String::from_utf8_lossy(&req[..head_len]).into_owned();
        (head, req[head_len..].to_vec())
    });
    let cfg = config(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}")),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".into()),
    ]);
    assert_eq!(cfg.endpoint, format!("http://{addr}/v1/traces"));
    // The blocking HTTP client is built and used off the async runtime.
    tokio::task::spawn_blocking(move || {
        let t = Tracing::start(&cfg).unwrap();
        record(&t);
        t.shutdown();
    })
    .await
    .unwrap();
    let (head, body) = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the exporter posted")
        .unwrap();
    assert!(head.starts_with("POST /v1/traces "), "{head}");
    assert!(
        head.to_lowercase()
            .contains("content-type: application/x-protobuf"),
        "{head}"
    );
    let has = |s: &str| body.windows(s.len()).any(|w| w == s.as_bytes());
    for s in [
        "service.name",
        "zone-node",
        "service.instance.id",
        "n7",
        "handoff.source",
        "internal.recv",
    ] {
        assert!(has(s), "{s:?} not in the exported request");
    }
    assert!(!has("Plains"), "the log-context span is not exported");
}
