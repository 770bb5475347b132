//! Blocking request/reply helpers for the few administrative requests
//! bakeoff makes outside the measured loop: PING, AUTH, INFO, DBSIZE,
//! memcached `version` and `stats`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bakeoff_core::driver::{Codec, Decoded, Reply, Stream};
use bakeoff_core::error::TargetError;
use bakeoff_core::readings::ClockReading;
use bakeoff_core::workload::OpKind;

use crate::codec::resp::RespCodec;

/// Resolves `host:port` to one address, with a message naming both.
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, TargetError> {
    (host, port)
        .to_socket_addrs()
        .map_err(TargetError::during(format!("cannot resolve {host}:{port}")))?
        .next()
        .ok_or_else(|| TargetError::Server(format!("{host}:{port} resolves to no address")))
}

/// Reads what the server sent of a handshake into `chunk` by `deadline`;
/// returns how much. Nothing in time is a `TimedOut` error saying the
/// server accepted the connection but did not finish `protocol`'s
/// handshake; a close is an `UnexpectedEof` error. Each names `who`.
pub fn read_handshake(
    s: &mut Stream,
    deadline: std::time::Instant,
    chunk: &mut [u8],
    who: &str,
    protocol: &str,
) -> std::io::Result<usize> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    match std::io::Read::read(s, chunk) {
        Ok(0) => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{who}: closed the connection during the handshake"),
        )),
        Ok(n) => Ok(n),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{who}: accepted the connection but did not finish the {protocol} handshake in time: is it stalled, or is it not a {protocol} server?"),
            ))
        }
        Err(e) => Err(e),
    }
}

/// How long a connection for an admin call or a probe may take to open,
/// its handshake included.
pub const ADMIN_CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// Connects with a timeout and TCP_NODELAY; explains refusals.
pub fn connect(addr: SocketAddr, what: &str) -> std::io::Result<Stream> {
    let s = connect_within(addr, what, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    Ok(s.into())
}

/// Connects within `within`, with TCP_NODELAY, reads and writes bounded by
/// `within` too (for a handshake); explains refusals.
pub fn connect_within(
    addr: SocketAddr,
    what: &str,
    within: Duration,
) -> std::io::Result<TcpStream> {
    let within = within.max(Duration::from_millis(1));
    let s = TcpStream::connect_timeout(&addr, within).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot connect to {what} at {addr}: {e}; is the server running, and are host and port right?"),
        )
    })?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(within))?;
    s.set_write_timeout(Some(within))?;
    Ok(s)
}

/// Where a server is reached: a TCP address, or the path of a Unix domain
/// socket on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix domain socket's path.
    Unix(std::path::PathBuf),
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(a) => write!(f, "{a}"),
            Address::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// [`connect_within`] for either kind of [`Address`].
pub fn connect_address_within(
    addr: &Address,
    what: &str,
    within: Duration,
) -> std::io::Result<Stream> {
    match addr {
        Address::Tcp(a) => connect_within(*a, what, within).map(Stream::from),
        Address::Unix(path) => {
            // A local connect does not wait on the server's accept: it
            // either finds the listening socket or fails at once.
            let s = std::os::unix::net::UnixStream::connect(path).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot connect to {what} at {}: {e}; is the server running, and is this its socket?",
                        path.display()
                    ),
                )
            })?;
            let within = within.max(Duration::from_millis(1));
            s.set_read_timeout(Some(within))?;
            s.set_write_timeout(Some(within))?;
            Ok(s.into())
        }
    }
}

/// Encodes a RESP command from its words.
pub fn resp_command(words: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// What a RESP command returned.
#[derive(Debug, PartialEq, Eq)]
pub enum RespReply {
    /// `+…`, `:…`, or an array (raw bytes of the whole reply).
    Simple(String),
    /// `-…`.
    Error(String),
    /// `$…` payload.
    Bulk(Vec<u8>),
    /// Null.
    Null,
}

/// How long a whole administrative reply may take to arrive.
pub const REPLY_WITHIN: Duration = Duration::from_secs(5);
/// Largest RESP reply read (a value of the largest size bakeoff writes,
/// 64 MiB, and room to spare).
const RESP_REPLY_MAX: usize = 80 << 20;
/// Largest memcache text reply read (`stats` is a few KiB).
const MEMCACHE_REPLY_MAX: usize = 1 << 20;

/// Reads more of a reply into `buf`: within [`REPLY_WITHIN`] of `since`
/// and up to `max` bytes in all, so that a server that stalls or speaks
/// something else (random bytes, another protocol) ends in an error
/// rather than a hang or a buffer without bound.
fn read_more(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    since: Instant,
    max: usize,
    protocol: &str,
) -> std::io::Result<()> {
    read_more_within(stream, buf, since, REPLY_WITHIN, max, protocol)
}

/// [`read_more`] within `within` of `since` rather than [`REPLY_WITHIN`].
fn read_more_within(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    since: Instant,
    within: Duration,
    max: usize,
    protocol: &str,
) -> std::io::Result<()> {
    let left = within.saturating_sub(since.elapsed());
    if left.is_zero() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no whole {protocol} reply within {:.1} s ({} bytes came): is the server stalled, or not a {protocol} server?",
                within.as_secs_f64(),
                buf.len()
            ),
        ));
    }
    if buf.len() >= max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the reply grew past {} MiB without ending as {protocol} does: is this a {protocol} server?",
                max >> 20
            ),
        ));
    }
    stream.set_read_timeout(Some(left))?;
    let mut chunk = [0u8; 65536];
    let n = match stream.read(&mut chunk) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no {protocol} reply within {:.1} s: is the server stalled?",
                    within.as_secs_f64()
                ),
            ))
        }
        r => r?,
    };
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// Sends one RESP command and reads its whole reply.
pub fn resp_call(stream: &mut Stream, words: &[&[u8]]) -> std::io::Result<RespReply> {
    resp_call_within(stream, words, REPLY_WITHIN)
}

/// [`resp_call`], its reply awaited at most `within` (a connection's
/// handshake: within the time the loop gives the connection).
pub fn resp_call_within(
    stream: &mut Stream,
    words: &[&[u8]],
    within: Duration,
) -> std::io::Result<RespReply> {
    stream.write_all(&resp_command(words))?;
    let since = Instant::now();
    let mut buf = Vec::with_capacity(4096);
    loop {
        match RespCodec.decode(&buf, OpKind::Get) {
            Decoded::Complete { len, reply } => {
                let line = String::from_utf8_lossy(&buf[1..len.saturating_sub(2)]).into_owned();
                return Ok(match reply {
                    // RESP never asks for a follow-up.
                    Reply::ServerError | Reply::Redirect(_) | Reply::FollowUp => {
                        RespReply::Error(line)
                    }
                    Reply::Miss => RespReply::Null,
                    Reply::Value { start, end } => RespReply::Bulk(buf[start..end].to_vec()),
                    Reply::Ok => RespReply::Simple(line),
                });
            }
            Decoded::Invalid => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the server's reply is not RESP",
                ))
            }
            Decoded::Incomplete => {}
        }
        read_more_within(stream, &mut buf, since, within, RESP_REPLY_MAX, "RESP")?;
    }
}

/// The server's clock by RESP `TIME` (seconds and microseconds, an array
/// of two bulk strings), between two readings of this machine's.
pub fn resp_time(stream: &mut Stream) -> std::io::Result<ClockReading> {
    let command = resp_command(&[b"TIME"]);
    let mut buf = Vec::with_capacity(64);
    let since = Instant::now();
    let sent = std::time::SystemTime::now();
    stream.write_all(&command)?;
    loop {
        if let Some(server) = parse_resp_time(&buf)? {
            return Ok(ClockReading {
                sent,
                server,
                received: std::time::SystemTime::now(),
            });
        }
        read_more(stream, &mut buf, since, 1024, "RESP")?;
    }
}

/// A whole `TIME` reply in `buf` (`None`: not all of it yet).
fn parse_resp_time(buf: &[u8]) -> std::io::Result<Option<std::time::SystemTime>> {
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the reply to TIME is not two numbers: {:?}",
                String::from_utf8_lossy(&buf[..buf.len().min(80)])
            ),
        )
    };
    let text = std::str::from_utf8(buf).map_err(|_| bad())?;
    let lines: Vec<&str> = text.split("\r\n").collect();
    // `*2`, `$N`, seconds, `$N`, microseconds, and the empty rest.
    if lines.len() < 6 {
        if !text.is_empty() && !text.starts_with('*') {
            return Err(bad());
        }
        return Ok(None);
    }
    if lines[0] != "*2" {
        return Err(bad());
    }
    let secs: u64 = lines[2].parse().map_err(|_| bad())?;
    let micros: u64 = lines[4].parse().map_err(|_| bad())?;
    if micros >= 1_000_000 {
        return Err(bad());
    }
    Ok(Some(
        std::time::UNIX_EPOCH
            + std::time::Duration::from_secs(secs)
            + std::time::Duration::from_micros(micros),
    ))
}

/// Whether a RESP server answers PING on `addr` with PONG (the readiness
/// check of redis-server and of bakeoff's engine host).
pub fn resp_pings(addr: std::net::SocketAddr, what: &str) -> bool {
    connect(addr, what)
        .and_then(|mut s| resp_call(&mut s, &[b"PING"]))
        .map(|r| r == RespReply::Simple("PONG".into()))
        .unwrap_or(false)
}

/// Parses `key:value` lines (Redis INFO) into pairs.
pub fn parse_info(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Sends a memcache text command and reads until a line equal to one of
/// `ends` (e.g. `END`), returning the lines before it.
pub fn memcache_lines(
    stream: &mut Stream,
    command: &str,
    ends: &[&str],
) -> std::io::Result<Vec<String>> {
    memcache_lines_within(stream, command, ends, REPLY_WITHIN)
}

/// [`memcache_lines`], the whole reply awaited at most `within` (a look
/// during a run, which must not hold the run for long).
pub fn memcache_lines_within(
    stream: &mut Stream,
    command: &str,
    ends: &[&str],
    within: Duration,
) -> std::io::Result<Vec<String>> {
    stream.write_all(command.as_bytes())?;
    let since = Instant::now();
    let mut buf = Vec::new();
    loop {
        let text = String::from_utf8_lossy(&buf);
        let lines: Vec<&str> = text.split("\r\n").collect();
        if let Some(pos) = lines.iter().position(|l| {
            ends.contains(l) || l.starts_with("ERROR") || l.starts_with("SERVER_ERROR")
        }) {
            if pos < lines.len() - 1 {
                return Ok(lines[..=pos].iter().map(|s| s.to_string()).collect());
            }
        }
        read_more_within(
            stream,
            &mut buf,
            since,
            within,
            MEMCACHE_REPLY_MAX,
            "memcache",
        )?;
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_time_reply_is_read_whole_or_refused() {
        let whole = b"*2\r\n$10\r\n1764151200\r\n$6\r\n250000\r\n";
        let t = parse_resp_time(whole).unwrap().unwrap();
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_micros(),
            1_764_151_200_250_000
        );
        for cut in 0..whole.len() {
            assert_eq!(parse_resp_time(&whole[..cut]).unwrap(), None, "{cut}");
        }
        assert!(parse_resp_time(b"-ERR unknown command\r\n").is_err());
        assert!(parse_resp_time(b"*2\r\n$1\r\nx\r\n$1\r\n1\r\n").is_err());
    }

    use super::*;

    #[test]
    fn info_lines() {
        let v = parse_info("# Server\r\nredis_version:7.0.15\r\ncmdstat_get:calls=3,usec=1\r\n");
        assert_eq!(v[0], ("redis_version".into(), "7.0.15".into()));
        assert_eq!(v[1].0, "cmdstat_get");
    }

    /// A server that sends random bytes, or nothing, ends an admin call
    /// with an error naming the protocol, within the deadline and without
    /// an unbounded buffer.
    #[test]
    fn garbage_or_silence_ends_in_an_error_not_a_hang() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            // First connection: endless bytes that never end a reply.
            let (mut garbage, _) = listener.accept().unwrap();
            let noise: Vec<u8> = (0..65536u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 | 1)
                .collect();
            let noise: Vec<u8> = noise
                .into_iter()
                .map(|b| if b == b'\r' || b == b'\n' { b'x' } else { b })
                .collect();
            std::thread::spawn(move || while garbage.write_all(&noise).is_ok() {});
            // Second: silence, held open.
            let (silent, _) = listener.accept().unwrap();
            std::thread::sleep(REPLY_WITHIN + Duration::from_secs(2));
            drop(silent);
        });
        let t = Instant::now();
        let mut s = connect(addr, "memcached").unwrap();
        let e = memcache_lines(&mut s, "stats\r\n", &["END"]).unwrap_err();
        assert!(e.to_string().contains("memcache"), "{e}");
        assert!(t.elapsed() < REPLY_WITHIN + Duration::from_secs(1));
        let t = Instant::now();
        let mut s = connect(addr, "redis").unwrap();
        let e = resp_call(&mut s, &[b"PING"]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(t.elapsed() < REPLY_WITHIN + Duration::from_secs(1));
        drop(s);
        server.join().unwrap();
    }

    #[test]
    fn commands_encode() {
        assert_eq!(resp_command(&[b"PING"]), b"*1\r\n$4\r\nPING\r\n");
    }
}
