//! `probe`: a plain HTTP/1.0 `GET /healthz` of a process's own admin endpoint, for
//! container health checks that need no tool in the image (`gateway healthcheck`,
//! `zone-node healthcheck`).
//!
//! Blocking `std::net` with short timeouts: it runs as its own short-lived process. An
//! unspecified listen address (`0.0.0.0`, `::`) is probed on loopback.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Default bound on the connect, the write and each read.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Most response bytes read: the status line and a short reason are all that matter.
const MAX_RESPONSE: usize = 4096;

/// Why the probe did not find the process healthy.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Nothing accepted the connection in time.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The probed address.
        addr: SocketAddr,
        /// The socket error.
        source: std::io::Error,
    },
    /// The exchange failed or timed out after connecting.
    #[error("no answer from {addr}: {source}")]
    Io {
        /// The probed address.
        addr: SocketAddr,
        /// The socket error.
        source: std::io::Error,
    },
    /// The answer was not HTTP.
    #[error("not an HTTP answer from {addr}: {line:?}")]
    BadResponse {
        /// The probed address.
        addr: SocketAddr,
        /// The first line received (shortened).
        line: String,
    },
    /// The endpoint answered, but not with 200.
    #[error("{addr} answered {status}: {reason}")]
    Unhealthy {
        /// The probed address.
        addr: SocketAddr,
        /// The HTTP status code.
        status: u16,
        /// The first line of the body (the process's reason), shortened.
        reason: String,
    },
}

/// The address to connect to for a listen address: loopback for an unspecified one.
pub fn probe_addr(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv4Addr::LOCALHOST, listen.port()))
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv6Addr::LOCALHOST, listen.port()))
        }
        _ => listen,
    }
}

/// `GET /healthz` on `listen` (see [`probe_addr`]); `Ok` on a 200 answer.
pub fn probe(listen: SocketAddr, timeout: Duration) -> Result<(), ProbeError> {
    probe_path(listen, "/healthz", timeout)
}

/// [`probe`] of another path (`/livez`: alive, as a standby gateway is; `/readyz`).
pub fn probe_path(listen: SocketAddr, path: &str, timeout: Duration) -> Result<(), ProbeError> {
    let addr = probe_addr(listen);
    let mut s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|source| ProbeError::Connect { addr, source })?;
    let io = |source| ProbeError::Io { addr, source };
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    s.write_all(
        format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(io)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while buf.len() < MAX_RESPONSE {
        let n = s.read(&mut chunk).map_err(io)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
    let text = String::from_utf8_lossy(&buf);
    let first = text.lines().next().unwrap_or_default();
    let short = |s: &str| s.trim().chars().take(200).collect::<String>();
    // "HTTP/1.1 200 OK"
    let mut parts = first.split_whitespace();
    let status = match (parts.next(), parts.next().map(str::parse::<u16>)) {
        (Some(v), Some(Ok(code))) if v.starts_with("HTTP/") => code,
        _ => {
            return Err(ProbeError::BadResponse {
                addr,
                line: short(first),
            });
        }
    };
    if status == 200 {
        return Ok(());
    }
    let reason = text
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| body.lines().map(str::trim).find(|l| !l.is_empty()))
        .map_or_else(|| short(first), short);
    Err(ProbeError::Unhealthy {
        addr,
        status,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-connection server that reads the request and answers `reply` (or, with
    /// `None`, holds the connection open without answering until the probe gives up).
    fn serve_once(reply: Option<&'static str>) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = [0u8; 512];
            let n = s.read(&mut req).unwrap();
            match reply {
                Some(r) => s.write_all(r.as_bytes()).unwrap(),
                None => std::thread::sleep(Duration::from_millis(600)),
            }
            String::from_utf8_lossy(&req[..n]).into_owned()
        });
        (addr, h)
    }

    #[test]
    fn a_200_is_healthy_and_the_request_is_http_1_0() {
        let (addr, h) = serve_once(Some("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
        probe(addr, Duration::from_secs(2)).unwrap();
        let req = h.join().unwrap();
        assert!(req.starts_with("GET /healthz HTTP/1.0\r\n"), "{req}");
        // Another path: a standby gateway is alive (`/livez`) but never healthy.
        let (addr, h) = serve_once(Some("HTTP/1.1 200 OK\r\n\r\nok: standing by\n"));
        probe_path(addr, "/livez", Duration::from_secs(2)).unwrap();
        let req = h.join().unwrap();
        assert!(req.starts_with("GET /livez HTTP/1.0\r\n"), "{req}");
    }

    #[test]
    fn a_503_is_unhealthy_with_its_reason() {
        let (addr, h) = serve_once(Some(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\nno zone node registered\n",
        ));
        let e = probe(addr, Duration::from_secs(2)).unwrap_err();
        h.join().unwrap();
        assert!(
            matches!(&e, ProbeError::Unhealthy { status: 503, reason, .. } if reason == "no zone node registered"),
            "{e}"
        );
    }

    #[test]
    fn silence_times_out_and_a_closed_port_fails() {
        let (addr, h) = serve_once(None);
        let t = std::time::Instant::now();
        let e = probe(addr, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, ProbeError::Io { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
        h.join().unwrap();
        // The listener is gone now: nothing accepts.
        let e = probe(addr, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, ProbeError::Connect { .. }), "{e}");
    }

    #[test]
    fn garbage_is_not_http_and_unspecified_means_loopback() {
        let (addr, h) = serve_once(Some("SSH-2.0-OpenSSH\r\n"));
        let e = probe(addr, Duration::from_secs(2)).unwrap_err();
        h.join().unwrap();
        assert!(matches!(e, ProbeError::BadResponse { .. }), "{e}");
        assert_eq!(
            probe_addr("0.0.0.0:9181".parse().unwrap()),
            "127.0.0.1:9181".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            probe_addr("[::]:9181".parse().unwrap()),
            "[::1]:9181".parse::<SocketAddr>().unwrap()
        );
    }
}
