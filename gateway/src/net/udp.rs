//! Batched UDP for the RCEnet host tasks: a socket the runtime does not watch, read and
//! written on the host's own clock, the datagrams of one flush handed to the kernel in
//! `sendmmsg` calls (Linux) rather than one system call each.
//!
//! Why (docs/benchmarks.md, "RCEnet: one wake-up per tick"): a profile of the gateway at
//! 1,000 RCEnet players put about a fifth of its time in waking and parking threads, one
//! wake-up per datagram in. A host task that reads what arrived once per flush window
//! wakes 200 times a second whatever the load, and its input waits at most one window
//! (the same bound its output already had).

use std::io;
use std::net::{SocketAddr, UdpSocket};

use rcenet::Transmit;

/// Most datagrams handed to the kernel in one `sendmmsg`.
pub const SEND_BATCH: usize = 64;
/// Most datagrams waiting for room in the socket's send buffer; past it the oldest are
/// dropped (ENet resends what was reliable).
pub const PENDING_MAX: usize = 16_384;

/// What one flush did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// Datagrams sent.
    pub datagrams: usize,
    /// Their bytes.
    pub bytes: usize,
    /// Datagrams the kernel refused (a bad address, a network down): dropped.
    pub failed: usize,
    /// Datagrams dropped because too many waited for a full send buffer.
    pub dropped: usize,
}

/// Datagrams on their way out of one socket: what a flush could not send (the send
/// buffer full) waits for the next one, in order.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: std::collections::VecDeque<Transmit>,
}

impl Outbox {
    /// Queues one datagram; at [`PENDING_MAX`] the oldest is dropped (returns whether).
    pub fn push(&mut self, t: Transmit) -> bool {
        let dropped = self.queue.len() >= PENDING_MAX;
        if dropped {
            self.queue.pop_front();
        }
        self.queue.push_back(t);
        dropped
    }

    /// Datagrams waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Takes the datagrams `host` has due at `now` and sends what the socket takes (the
    /// rest waits for the next call).
    pub fn send_from(&mut self, host: &mut rcenet::Host, socket: &UdpSocket, now: u64) -> Flushed {
        let mut dropped = 0;
        while let Some(t) = host.poll_transmit(now) {
            if self.push(t) {
                dropped += 1;
            }
        }
        let mut f = self.flush(socket);
        f.dropped += dropped;
        f
    }

    /// Sends what waits until the socket's buffer is full or nothing is left. `socket`
    /// is non-blocking.
    pub fn flush(&mut self, socket: &UdpSocket) -> Flushed {
        let mut f = Flushed::default();
        while !self.queue.is_empty() {
            let batch = self.queue.make_contiguous();
            let batch = batch.get(..batch.len().min(SEND_BATCH)).unwrap_or(&[]);
            match send_some(socket, batch) {
                Ok(0) => break,
                Ok(n) => {
                    f.datagrams += n;
                    f.bytes += batch.iter().take(n).map(|t| t.data.len()).sum::<usize>();
                    self.queue.drain(..n.min(self.queue.len()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The first datagram is the one refused: dropped, the rest go on.
                    if let Some(t) = self.queue.pop_front() {
                        tracing::debug!(error = %e, dest = %t.dest, "RCEnet datagram not sent");
                    }
                    f.failed += 1;
                }
            }
        }
        f
    }
}

/// Sends the first datagrams of `batch` (at least one unless the buffer is full):
/// how many went.
#[cfg(target_os = "linux")]
fn send_some(socket: &UdpSocket, batch: &[Transmit]) -> io::Result<usize> {
    use rustix::net::{
        MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny, addr::SocketAddrArg as _, sendmmsg,
    };
    use std::io::IoSlice;
    if batch.is_empty() {
        return Ok(0);
    }
    let addrs: Vec<SocketAddrAny> = batch.iter().map(|t| t.dest.as_any()).collect();
    let iovs: Vec<[IoSlice<'_>; 1]> = batch.iter().map(|t| [IoSlice::new(&t.data)]).collect();
    let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> = batch
        .iter()
        .map(|_| SendAncillaryBuffer::default())
        .collect();
    let mut msgs: Vec<MMsgHdr<'_>> = addrs
        .iter()
        .zip(&iovs)
        .zip(controls.iter_mut())
        .map(|((addr, iov), control)| MMsgHdr::new_with_addr(addr, iov, control))
        .collect();
    Ok(sendmmsg(socket, &mut msgs, SendFlags::empty())?)
}

/// Elsewhere: one `send_to` per datagram.
#[cfg(not(target_os = "linux"))]
fn send_some(socket: &UdpSocket, batch: &[Transmit]) -> io::Result<usize> {
    let mut sent = 0;
    for t in batch {
        match socket.send_to(&t.data, t.dest) {
            Ok(_) => sent += 1,
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

/// Hands each datagram that arrived (at most `limit`) to `on`, in order.
pub fn read(
    socket: &UdpSocket,
    buf: &mut [u8],
    limit: usize,
    mut on: impl FnMut(SocketAddr, &[u8]),
) {
    for _ in 0..limit {
        let Some((n, from)) = recv(socket, buf) else {
            break;
        };
        on(from, buf.get(..n).unwrap_or(&[]));
    }
}

/// Reads one datagram that arrived, if any (`socket` is non-blocking). Errors other than
/// "nothing there" (an ICMP error reported on the socket) are skipped.
fn recv(socket: &UdpSocket, buf: &mut [u8]) -> Option<(usize, SocketAddr)> {
    // A few tries: an ICMP error queued on the socket is reported once, then the
    // datagrams behind it are read.
    for _ in 0..4 {
        match socket.recv_from(buf) {
            Ok(r) => return Some(r),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    #[test]
    fn a_flush_sends_every_datagram_in_order_in_batches() {
        let (a, b) = pair();
        let dest = b.local_addr().unwrap();
        let mut out = Outbox::default();
        for i in 0..150u32 {
            out.push(Transmit {
                dest,
                data: i.to_le_bytes().to_vec(),
            });
        }
        let f = out.flush(&a);
        assert_eq!((f.datagrams, f.bytes, f.failed), (150, 600, 0));
        assert!(out.is_empty());
        let mut buf = [0u8; 64];
        for i in 0..150u32 {
            let mut got = None;
            for _ in 0..1000 {
                got = recv(&b, &mut buf);
                if got.is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let (n, from) = got.unwrap();
            assert_eq!(from, a.local_addr().unwrap());
            assert_eq!(&buf[..n], &i.to_le_bytes());
        }
        assert!(recv(&b, &mut buf).is_none());
    }

    #[test]
    fn a_refused_datagram_is_dropped_and_the_rest_go() {
        let (a, b) = pair();
        let mut out = Outbox::default();
        // Port 0 cannot be sent to.
        out.push(Transmit {
            dest: "127.0.0.1:0".parse().unwrap(),
            data: vec![1],
        });
        out.push(Transmit {
            dest: b.local_addr().unwrap(),
            data: vec![2],
        });
        let f = out.flush(&a);
        assert_eq!((f.datagrams, f.failed), (1, 1));
        assert!(out.is_empty());
    }

    #[test]
    fn the_outbox_is_bounded() {
        let mut out = Outbox::default();
        let dest: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut dropped = 0;
        for _ in 0..PENDING_MAX + 10 {
            if out.push(Transmit {
                dest,
                data: vec![0],
            }) {
                dropped += 1;
            }
        }
        assert_eq!((out.len(), dropped), (PENDING_MAX, 10));
    }
}
