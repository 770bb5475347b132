//! Blocking request/reply helpers for the few administrative requests
//! bakeoff makes outside the measured loop: PING, AUTH, INFO, DBSIZE,
//! memcached `version` and `stats`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use bakeoff_core::driver::{Codec, Decoded, Reply};
use bakeoff_core::error::TargetError;
use bakeoff_core::workload::OpKind;

use crate::codec::resp::RespCodec;

/// Resolves `host:port` to one address, with a message naming both.
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, TargetError> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| TargetError::Server(format!("cannot resolve {host}:{port}: {e}")))?
        .next()
        .ok_or_else(|| TargetError::Server(format!("{host}:{port} resolves to no address")))
}

/// Connects with a timeout and TCP_NODELAY; explains refusals.
pub fn connect(addr: SocketAddr, what: &str) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot connect to {what} at {addr}: {e}; is the server running, and are host and port right?"),
        )
    })?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    Ok(s)
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

/// Sends one RESP command and reads its whole reply.
pub fn resp_call(stream: &mut TcpStream, words: &[&[u8]]) -> std::io::Result<RespReply> {
    stream.write_all(&resp_command(words))?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 65536];
    loop {
        match RespCodec.decode(&buf, OpKind::Get) {
            Decoded::Complete { len, reply } => {
                let line = String::from_utf8_lossy(&buf[1..len.saturating_sub(2)]).into_owned();
                return Ok(match reply {
                    Reply::ServerError | Reply::Redirect(_) => RespReply::Error(line),
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
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
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
    stream: &mut TcpStream,
    command: &str,
    ends: &[&str],
) -> std::io::Result<Vec<String>> {
    stream.write_all(command.as_bytes())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
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
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines() {
        let v = parse_info("# Server\r\nredis_version:7.0.15\r\ncmdstat_get:calls=3,usec=1\r\n");
        assert_eq!(v[0], ("redis_version".into(), "7.0.15".into()));
        assert_eq!(v[1].0, "cmdstat_get");
    }

    #[test]
    fn commands_encode() {
        assert_eq!(resp_command(&[b"PING"]), b"*1\r\n$4\r\nPING\r\n");
    }
}
