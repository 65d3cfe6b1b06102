//! `gateway healthcheck`, the binary, against tiny HTTP servers: 200 is healthy (exit 0),
//! 503 is not (exit 1, the reason on one line), silence and a closed port fail within the
//! timeout; the address comes from `GATEWAY_ADMIN_LISTEN` like the server's, or `--addr`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Answers one connection with `reply`, or with nothing (holding it open) for `None`.
fn serve_once(reply: Option<&'static str>) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut req = [0u8; 512];
        let n = s.read(&mut req).unwrap();
        assert!(req[..n].starts_with(b"GET /healthz HTTP/1.0\r\n"));
        match reply {
            Some(r) => s.write_all(r.as_bytes()).unwrap(),
            None => std::thread::sleep(Duration::from_millis(1500)),
        }
    });
    (addr, h)
}

fn healthcheck(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gateway"));
    c.arg("healthcheck").args(args);
    // Only what the test sets: no GATEWAY_* from the environment running the tests.
    for (k, _) in std::env::vars() {
        if k.starts_with("GATEWAY_") {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().map(|(k, v)| (k, v)));
    c.output().unwrap()
}

#[test]
fn healthy_on_200_from_the_configured_admin_address() {
    let (addr, h) = serve_once(Some("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    let out = healthcheck(&[], &[("GATEWAY_ADMIN_LISTEN", addr.to_string())]);
    h.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("answered 200"));
}

#[test]
fn unhealthy_on_503_with_the_reason_on_one_line() {
    let (addr, h) = serve_once(Some(
        "HTTP/1.1 503 Service Unavailable\r\n\r\nno zone node registered\n",
    ));
    let out = healthcheck(&["--addr", &addr.to_string()], &[]);
    h.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("gateway: healthcheck: ")
            && err.contains("503")
            && err.contains("no zone node registered"),
        "{err}"
    );
}

#[test]
fn silence_and_a_closed_port_fail_within_the_timeout() {
    let (addr, h) = serve_once(None);
    let t = Instant::now();
    let out = healthcheck(&["--addr", &addr.to_string(), "--timeout-ms", "300"], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(t.elapsed() < Duration::from_secs(5));
    h.join().unwrap();
    let out = healthcheck(
        &["--timeout-ms", "300"],
        &[("GATEWAY_ADMIN_LISTEN", addr.to_string())],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}
