//! `quic-ceiling`: how many QUIC datagram round trips per second this machine does
//! between two quinn endpoints on loopback, with the cluster's TLS and transport settings
//! and `P_StandardUpdate`-sized datagrams: the limit the cluster's forwarded updates are
//! compared against (`docs/benchmarks.md`). Prints one JSON object.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result};
use client::{Connection, Verify};
use gateway::tls;

/// A `P_StandardUpdate` frame: 3 bytes of framing and 22 of payload.
const DATAGRAM: usize = 25;

struct Args {
    connections: usize,
    window: usize,
    seconds: u64,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        connections: 4,
        window: 32,
        seconds: 10,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> Result<usize> {
            it.next()
                .with_context(|| format!("{flag} needs a value"))?
                .parse::<usize>()
                .with_context(|| format!("{flag} needs a whole number"))
        };
        match flag.as_str() {
            "--connections" => a.connections = value()?.clamp(1, 1024),
            "--window" => a.window = value()?.clamp(1, 4096),
            "--seconds" => a.seconds = u64::try_from(value()?.clamp(1, 600)).unwrap_or(10),
            "--help" | "-h" => {
                println!(
                    "quic-ceiling [--connections N (4)] [--window DATAGRAMS_IN_FLIGHT (32)] [--seconds S (10)]"
                );
                std::process::exit(0);
            }
            other => anyhow::bail!("unknown flag {other} (try --help)"),
        }
    }
    Ok(a)
}

/// The echo side: every datagram goes straight back.
async fn serve(endpoint: quinn::Endpoint) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            let Ok(conn) = incoming.await else { return };
            // The client opens its stream; hold it so the connection looks like a session.
            let c2 = conn.clone();
            tokio::spawn(async move {
                let _ = c2.accept_bi().await;
                c2.closed().await;
            });
            while let Ok(d) = conn.read_datagram().await {
                let _ = conn.send_datagram(d);
            }
        });
    }
}

/// One client keeping `window` datagrams in flight; counts round trips.
async fn ping(
    conn: quinn::Connection,
    window: usize,
    done: Arc<AtomicU64>,
    end: tokio::time::Instant,
) {
    let payload = bytes::Bytes::from(vec![0u8; DATAGRAM]);
    for _ in 0..window {
        let _ = conn.send_datagram(payload.clone());
    }
    let mut quiet = tokio::time::interval(Duration::from_millis(20));
    let mut since = 0u64;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end) => return,
            d = conn.read_datagram() => {
                if d.is_err() {
                    return;
                }
                done.fetch_add(1, Ordering::Relaxed);
                since += 1;
                let _ = conn.send_datagram(payload.clone());
            }
            _ = quiet.tick() => {
                // Datagrams are unreliable: refill the window when nothing came back.
                if since == 0 {
                    for _ in 0..window {
                        let _ = conn.send_datagram(payload.clone());
                    }
                }
                since = 0;
            }
        }
    }
}

async fn run(args: Args) -> Result<serde_json::Value> {
    let identity = tls::ephemeral().context("a certificate")?;
    let cfg = tls::server_config(
        &identity,
        &[client::ALPN],
        tls::Limits {
            idle: Duration::from_secs(30),
            bidi_streams: 1,
            datagram_buffer: 1 << 20,
            peer_acks: Some(tls::PeerAcks::CLIENTS),
        },
    )?;
    let server = quinn::Endpoint::server(cfg, SocketAddr::from(([127, 0, 0, 1], 0)))
        .context("binding the server")?;
    let addr = server.local_addr()?;
    tokio::spawn(serve(server));
    let mut conns = Vec::new();
    for _ in 0..args.connections {
        conns.push(Connection::connect(addr, "gateway", Verify::Insecure).await?);
    }
    let done = Arc::new(AtomicU64::new(0));
    let start = tokio::time::Instant::now();
    let end = start + Duration::from_secs(args.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for c in &conns {
        let Some(q) = c.quic() else { continue };
        tasks.spawn(ping(q.clone(), args.window, done.clone(), end));
    }
    while tasks.join_next().await.is_some() {}
    let secs = start.elapsed().as_secs_f64();
    let rt = done.load(Ordering::Relaxed) as f64 / secs;
    Ok(serde_json::json!({
        "connections": args.connections,
        "window": args.window,
        "seconds": (secs * 100.0).round() / 100.0,
        "datagram_bytes": DATAGRAM,
        "round_trips_per_s": rt.round(),
        "datagrams_per_s": (rt * 2.0).round(),
    }))
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let out = rt.block_on(run(args))?;
    println!("{out}");
    Ok(())
}
