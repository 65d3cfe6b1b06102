//! Admin endpoint tests over a real loopback socket: status codes, content types and
//! bodies of `/healthz`, `/metrics` and `/cluster`, 404, 405, and graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gateway::admin::{
    AdminSource, ClusterView, InstanceView, MetricsText, NodeView, SessionCounts, UnplacedInstance,
    serve,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Default)]
struct Fake {
    unhealthy: Mutex<Option<String>>,
    scraped: AtomicBool,
}

impl AdminSource for Fake {
    fn health(&self) -> Result<(), String> {
        match self.unhealthy.lock().unwrap().clone() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn metrics(&self) -> String {
        self.scraped.store(true, Ordering::SeqCst);
        let mut m = MetricsText::new();
        m.counter("gw_logins_total", "Successful logins.", 5);
        m.gauge_with(
            "gw_players",
            "Players per area.",
            &[("area", "Plains")],
            2.0,
        );
        m.gauge_with(
            "gw_players",
            "Players per area.",
            &[("area", "Dark \"Wood\"")],
            1.0,
        );
        m.render()
    }

    fn cluster(&self) -> ClusterView {
        ClusterView {
            gateway_id: "gw-test".into(),
            sessions: SessionCounts {
                connected: 4,
                in_menu: 1,
                in_game: 3,
            },
            nodes: vec![NodeView {
                id: "node-a".into(),
                address: "127.0.0.1:4433".into(),
                capacity: 8,
                load: NodeView::load_of(2, 8),
                players: 3,
                draining: true,
                last_heartbeat_ms_ago: 250,
                instances: vec![
                    InstanceView {
                        area: "Plains".into(),
                        instance: 0,
                        generation: 3,
                        players: 2,
                        npcs: 12,
                        tick_p99_ms: 0.75,
                        ..InstanceView::default()
                    },
                    InstanceView {
                        area: "Dark Wood".into(),
                        instance: 1,
                        generation: 1,
                        players: 1,
                        npcs: 0,
                        tick_p99_ms: 0.5,
                        ..InstanceView::default()
                    },
                ],
            }],
            unplaced: vec![UnplacedInstance {
                area: "Shrine".into(),
                instance: 0,
            }],
            ..ClusterView::default()
        }
    }
}

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start(source: Arc<Fake>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, source, axum::Router::new(), async {
        let _ = stopped.await;
    }));
    Server {
        addr,
        stop: Some(stop),
        task,
    }
}

impl Server {
    async fn shutdown(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        let res = tokio::time::timeout(std::time::Duration::from_secs(10), self.task)
            .await
            .expect("serve returns after shutdown")
            .unwrap();
        res.unwrap();
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to the end.
async fn request(addr: SocketAddr, method: &str, path: &str) -> Reply {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut raw))
        .await
        .expect("the server answers and closes")
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
    let status = parts.next().unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let reply = Reply {
        status,
        headers,
        body: body.to_owned(),
    };
    if let Some(len) = reply.header("content-length").filter(|_| method != "HEAD") {
        assert_eq!(len.parse::<usize>().unwrap(), reply.body.len());
    }
    reply
}

#[tokio::test]
async fn healthz_is_ok_then_503_with_the_reason() {
    let fake = Arc::new(Fake::default());
    let server = start(fake.clone()).await;

    let r = request(server.addr, "GET", "/healthz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.body, "ok");

    *fake.unhealthy.lock().unwrap() = Some("no zone node registered".into());
    let r = request(server.addr, "GET", "/healthz").await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.body, "no zone node registered");
    // Readiness is the same; liveness only says the process serves.
    let r = request(server.addr, "GET", "/readyz").await;
    assert_eq!(
        (r.status, r.body.as_str()),
        (503, "no zone node registered")
    );
    let r = request(server.addr, "GET", "/livez").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));

    server.shutdown().await;
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let fake = Arc::new(Fake::default());
    let server = start(fake.clone()).await;

    let r = request(server.addr, "GET", "/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4"));
    assert_eq!(
        r.body,
        "# HELP gw_logins_total Successful logins.\n\
         # TYPE gw_logins_total counter\n\
         gw_logins_total 5\n\
         # HELP gw_players Players per area.\n\
         # TYPE gw_players gauge\n\
         gw_players{area=\"Plains\"} 2\n\
         gw_players{area=\"Dark \\\"Wood\\\"\"} 1\n"
    );
    assert!(fake.scraped.load(Ordering::SeqCst));

    server.shutdown().await;
}

#[tokio::test]
async fn cluster_is_json() {
    let fake = Arc::new(Fake::default());
    let server = start(fake.clone()).await;

    let r = request(server.addr, "GET", "/cluster").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["gateway_id"], "gw-test");
    assert_eq!(v["sessions"]["in_game"], 3);
    assert_eq!(v["nodes"][0]["id"], "node-a");
    assert_eq!(v["nodes"][0]["load"], 0.25);
    assert_eq!(v["nodes"][0]["draining"], true);
    assert_eq!(v["nodes"][0]["last_heartbeat_ms_ago"], 250);
    assert_eq!(v["nodes"][0]["instances"][1]["area"], "Dark Wood");
    assert_eq!(v["nodes"][0]["instances"][0]["tick_p99_ms"], 0.75);
    assert_eq!(v["unplaced"][0]["area"], "Shrine");
    let back: ClusterView = serde_json::from_value(v).unwrap();
    assert_eq!(back, fake.cluster());

    server.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_are_404_and_other_methods_405() {
    let server = start(Arc::new(Fake::default())).await;

    for path in ["/", "/nope", "/healthz/extra", "/metrics.txt"] {
        let r = request(server.addr, "GET", path).await;
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.body, "not found");
    }
    for (method, path) in [
        ("POST", "/healthz"),
        ("PUT", "/metrics"),
        ("DELETE", "/cluster"),
    ] {
        let r = request(server.addr, method, path).await;
        assert_eq!(r.status, 405, "{method} {path}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        assert_eq!(r.body, "method not allowed");
    }
    // HEAD is answered like GET, without a body.
    let r = request(server.addr, "HEAD", "/healthz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "");

    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_does_not_wait_for_idle_connections() {
    let server = start(Arc::new(Fake::default())).await;
    // One connection that never sends a request, one kept alive after a request.
    let _idle = TcpStream::connect(server.addr).await.unwrap();
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    let req = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    kept.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 512];
    let n = kept.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // `shutdown` fails the test if `serve` has not returned within 10 s.
    server.shutdown().await;
}
