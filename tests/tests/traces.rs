//! Traces across the cluster (issue 8): a SetArea handoff from one zone-node process to
//! another is ONE trace with spans from the source node, the gateway and the destination
//! node, exported over OTLP/gRPC (the nodes configured only by `OTEL_*` variables) to a
//! collector in this test; a node loss is one trace with the re-placement and the
//! gateway's recovery handoff. The gateway runs in this process with the same pipeline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::CloseCode;
use cluster_tests::{Cluster, WAIT, area_of, login_again, new_player, next_change_area};
use fake_opentelemetry_collector::{ExportedSpan, FakeCollectorServer};
use tokio::time::Instant;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use zone_node::telemetry::{Protocol, SamplerChoice, TraceConfig, Tracing};

fn named<'a>(spans: &'a [ExportedSpan], name: &str) -> Vec<&'a ExportedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// An attribute's value (the collector keeps `Some(AnyValue { value: Some(StringValue("n1")) })`).
fn attr<'a>(s: &'a ExportedSpan, key: &str) -> &'a str {
    let v = s.attributes.get(key).map_or("", String::as_str);
    let inner = v
        .split_once("Value(")
        .and_then(|(_, r)| r.split_once(')'))
        .map_or(v, |(i, _)| i);
    inner.trim_matches('"')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_node_handoff_is_one_trace_over_three_processes() {
    let mut collector = FakeCollectorServer::start().await.unwrap();
    let endpoint = collector.endpoint();
    // Drain the collector all the time: it holds 64 spans at most, and a full one blocks
    // the exporters' calls until they time out and drop their batch.
    let exported: Arc<Mutex<Vec<ExportedSpan>>> = Arc::default();
    let sink = exported.clone();
    let drain = tokio::spawn(async move {
        loop {
            let got = collector
                .exported_spans(1, Duration::from_millis(100))
                .await;
            sink.lock().unwrap().extend(got);
        }
    });
    // The in-process gateway exports like `gateway` would with OTEL_EXPORTER_OTLP_ENDPOINT.
    let cfg = TraceConfig {
        endpoint: endpoint.clone(),
        protocol: Protocol::Grpc,
        service_name: "gateway".into(),
        instance_id: None,
        sampler: SamplerChoice::ParentBasedAlwaysOn,
    };
    let gw_traces = Tracing::start(&cfg).unwrap();
    tracing_subscriber::registry()
        .with(zone_node::telemetry::layer(gw_traces.tracer()))
        .init();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        // Export within 200 ms instead of the SDK's 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];
    let c = Cluster::start_with_env("traces", &[("n1", 64), ("n2", 64)], &env).await;

    // A DM logs in (its zone is an instance 0, all on n1) and warps to a new instance,
    // which is placed on the least loaded node, n2.
    let (conn, _) = new_player(c.gw.client_addr, "tracer").await;
    conn.close(CloseCode::Normal).await;
    c.make_dm("tracer");
    let (mut conn, _) = login_again(c.gw.client_addr, "tracer").await;
    conn.send_frame(16, b"/warp Darkwood,7").await.unwrap();
    let (i, _) = next_change_area(&mut conn, WAIT)
        .await
        .expect("P_ChangeArea after /warp");
    assert_eq!(area_of(&i.packet).as_deref(), Some("Darkwood"));
    c.wait_placed("Darkwood", 7).await;
    let (dest_node, _) = c.owner("Darkwood", 7).unwrap();
    assert_eq!(dest_node, "n2", "the new instance went to the other node");

    // Collect until the handoff's three parts arrived (the nodes flush every 200 ms).
    let gw_provider = gw_traces.provider().clone();
    let mut spans: Vec<ExportedSpan> = Vec::new();
    let deadline = Instant::now() + WAIT;
    let (trace, source) = loop {
        let p = gw_provider.clone();
        let _ = tokio::task::spawn_blocking(move || p.force_flush()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        spans.clone_from(&exported.lock().unwrap());
        let found = named(&spans, "handoff.source").into_iter().find_map(|s| {
            let t = &s.trace_id;
            let has = |name: &str| spans.iter().any(|x| &x.trace_id == t && x.name == name);
            (has("handoff.gateway") && has("handoff.destination")).then(|| (t.clone(), s.clone()))
        });
        if let Some(f) = found {
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "no complete handoff trace; spans: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    };
    let in_trace: Vec<&ExportedSpan> = spans.iter().filter(|s| s.trace_id == trace).collect();
    let by_id: BTreeMap<&str, &ExportedSpan> =
        in_trace.iter().map(|s| (s.span_id.as_str(), *s)).collect();
    println!("the handoff's trace {trace}:");
    for s in &in_trace {
        println!(
            "  {:<20} node={:<4} msg={:<16} parent={}",
            s.name,
            attr(s, "node"),
            attr(s, "msg"),
            by_id
                .get(s.parent_span_id.as_str())
                .map_or("-", |p| p.name.as_str())
        );
    }

    // The root is the source node's SetArea, on n1.
    assert!(source.parent_span_id.is_empty() || source.parent_span_id == "0000000000000000");
    assert_eq!(attr(&source, "node"), "n1");
    assert_eq!(attr(&source, "to_zone"), "Darkwood");
    assert_eq!(attr(&source, "outcome"), "committed");
    // The gateway's part hangs under the Transfer the source sent.
    let gw = named(&spans, "handoff.gateway")
        .into_iter()
        .find(|s| s.trace_id == trace)
        .unwrap();
    let recv = by_id[gw.parent_span_id.as_str()];
    assert_eq!(
        (recv.name.as_str(), attr(recv, "msg")),
        ("internal.recv", "Transfer")
    );
    assert_eq!(recv.parent_span_id, source.span_id);
    assert_eq!(attr(gw, "dest"), "n2");
    assert_eq!(attr(gw, "outcome"), "committed");
    // The destination's part, on n2, under the Transfer the gateway forwarded to it.
    let dest = named(&spans, "handoff.destination")
        .into_iter()
        .find(|s| s.trace_id == trace)
        .unwrap();
    assert_eq!(attr(dest, "node"), "n2");
    assert_eq!(attr(dest, "outcome"), "committed");
    let recv = by_id[dest.parent_span_id.as_str()];
    assert_eq!(
        (recv.name.as_str(), attr(recv, "msg"), attr(recv, "node")),
        ("internal.recv", "Transfer", "n2")
    );
    assert_eq!(recv.parent_span_id, gw.span_id);
    // Every message of the handoff was received inside the trace: the ack (at the gateway
    // and at the source), the source's commit (at the gateway) and the gateway's commit.
    let received: Vec<(&str, &str)> = in_trace
        .iter()
        .filter(|s| s.name == "internal.recv")
        .map(|s| (attr(s, "msg"), attr(s, "node")))
        .collect();
    for want in [
        ("Transfer", "n1"),
        ("Transfer", "n2"),
        ("TransferAck", "n2"),
        ("TransferAck", "n1"),
        ("TransferCommit", "n1"),
        ("TransferCommit", "n2"),
    ] {
        assert!(received.contains(&want), "{want:?} not in {received:?}");
    }

    // The login was one trace too, ending with the attach on a node.
    let login = named(&spans, "session.login");
    let login = login
        .iter()
        .find(|s| attr(s, "account") == "tracer" && attr(s, "outcome") == "entered the world")
        .expect("a session.login span");
    assert!(
        spans.iter().any(|s| s.trace_id == login.trace_id
            && s.name == "internal.recv"
            && attr(s, "msg") == "AttachPlayer"),
        "the node's AttachPlayer is in the login's trace"
    );
    // Registration: each node's `node.register` has the gateway's under it.
    for n in ["n1", "n2"] {
        let reg = named(&spans, "node.register")
            .into_iter()
            .find(|s| attr(s, "node") == n && s.parent_span_id.chars().all(|c| c == '0'))
            .unwrap_or_else(|| panic!("{n}'s node.register"));
        assert!(
            spans
                .iter()
                .any(|s| s.parent_span_id == reg.span_id && s.name == "node.register"),
            "the gateway's node.register under {n}'s"
        );
    }

    // Node loss: n2 dies with the player; the gateway puts it back from its last save on
    // n1. That recovery is a gateway-originated handoff under the `node.lost` trace.
    let mut c = c;
    c.kill("n2");
    c.wait_for("Darkwood #7 re-placed on n1", |v| {
        v.nodes.iter().any(|n| {
            n.id == "n1"
                && n.instances
                    .iter()
                    .any(|i| i.area == "Darkwood" && i.instance == 7 && i.players == 1)
        })
    })
    .await;
    let deadline = Instant::now() + WAIT;
    let lost = loop {
        let p = gw_provider.clone();
        let _ = tokio::task::spawn_blocking(move || p.force_flush()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        spans.clone_from(&exported.lock().unwrap());
        let found = named(&spans, "node.lost").into_iter().find(|l| {
            attr(l, "node") == "n2"
                && spans.iter().any(|s| {
                    s.trace_id == l.trace_id
                        && s.name == "handoff.destination"
                        && attr(s, "node") == "n1"
                        && attr(s, "outcome") == "committed"
                })
        });
        if let Some(l) = found {
            break l.clone();
        }
        if Instant::now() >= deadline {
            for l in named(&spans, "node.lost") {
                println!("node.lost {:?}", l.attributes);
                for s in spans.iter().filter(|s| s.trace_id == l.trace_id) {
                    println!("  {} {:?}", s.name, s.attributes);
                }
            }
            panic!("no node.lost trace with the recovery");
        }
    };
    let recovery = spans
        .iter()
        .find(|s| s.trace_id == lost.trace_id && s.name == "handoff.gateway")
        .expect("the recovery's handoff.gateway");
    assert_eq!(attr(recovery, "recovery"), "true");
    assert_eq!(attr(recovery, "dest"), "n1");
    assert_eq!(attr(recovery, "outcome"), "committed");
    assert!(
        spans.iter().any(|s| s.trace_id == lost.trace_id
            && s.name == "instance.place"
            && attr(s, "node") == "n1"),
        "the re-placement is in the node loss's trace"
    );

    // `/warpother` starts at the gateway: its chat.warp is the root, and the node's
    // SetArea (now on n1, Darkwood #7 to Meadow #0, both local) hangs under it.
    conn.send_frame(16, b"/warpother tracer,Meadow,0")
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let (i, _) = next_change_area(&mut conn, WAIT)
            .await
            .expect("P_ChangeArea after /warpother");
        if area_of(&i.packet).as_deref() == Some("Meadow") {
            break;
        }
        assert!(Instant::now() < deadline, "no P_ChangeArea into Meadow");
    }
    let spans = loop {
        let p = gw_provider.clone();
        let _ = tokio::task::spawn_blocking(move || p.force_flush()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let spans = exported.lock().unwrap().clone();
        let linked = named(&spans, "chat.warp").into_iter().any(|w| {
            attr(w, "to_zone") == "Meadow"
                && spans.iter().any(|s| {
                    s.trace_id == w.trace_id
                        && s.name == "handoff.source"
                        && attr(s, "node") == "n1"
                        && attr(s, "outcome") == "committed"
                })
        });
        if linked {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "no chat.warp trace holding n1's handoff.source"
        );
    };

    // The nodes' ticks are sampled too (tick 0 of every instance, then one in 300).
    assert!(
        spans.iter().any(|s| s.name == "zone.tick"
            && attr(s, "node") == "n1"
            && !attr(s, "zone").is_empty()),
        "a sampled zone.tick from n1"
    );

    let _ = tokio::task::spawn_blocking(move || gw_traces.shutdown()).await;
    drain.abort();
    drop(c);
}
