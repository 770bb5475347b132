//! Connections for the MySQL codec: the handshake (`mysql_native_password`,
//! cleartext, `caching_sha2_password`'s fast path, with `mysql_common`'s
//! packets and scrambles) into database `bakeoff`, then the codec's
//! statements prepared and their ids checked, on a blocking socket bounded
//! in time; the network loop takes the socket from there.

use std::io::{Error, ErrorKind, Write};
use std::time::{Duration, Instant};

use bakeoff_core::driver::{Connected, Connector, Handles, Stream};
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;

use mysql_common::packets::{AuthPlugin, ErrPacket, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;

use super::server::{connect, create_kv, start_managed};
use super::server::{Dsn, ER_ACCESS_DENIED, ER_CON_COUNT};
use super::settings::MariaSettings;
use crate::admin::{read_handshake, Address};
use crate::async_target::block;
use crate::codec::mysql::STATEMENTS;
use bakeoff_core::error::TargetError;
use bakeoff_servers::{Limits, ManagedServer};

/// What bakeoff asks of the server; the first five it cannot do without.
const REQUIRED: CapabilityFlags = CapabilityFlags::CLIENT_PROTOCOL_41
    .union(CapabilityFlags::CLIENT_SECURE_CONNECTION)
    .union(CapabilityFlags::CLIENT_PLUGIN_AUTH)
    .union(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    .union(CapabilityFlags::CLIENT_CONNECT_WITH_DB);
const WANTED: CapabilityFlags = REQUIRED
    .union(CapabilityFlags::CLIENT_LONG_PASSWORD)
    .union(CapabilityFlags::CLIENT_LONG_FLAG)
    .union(CapabilityFlags::CLIENT_TRANSACTIONS)
    .union(CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA);

/// `COM_STMT_PREPARE`.
const COM_STMT_PREPARE: u8 = 0x16;

/// Opens connections for [`crate::codec::mysql::MysqlCodec`].
pub struct MariaConnector {
    /// Where to connect (the link relay's address, when there is one; the
    /// server's socket, when the URL names one).
    pub addr: Address,
    /// Who connects (and the password, if any).
    pub(super) dsn: Dsn,
    /// The codec's statements, in the order of its [`Handles`]: the
    /// first three take one each; the fourth's id is the last handle, and
    /// any after it must follow it one by one.
    pub(super) statements: Vec<String>,
    /// The table they run on, for errors.
    pub(super) table: &'static str,
}

/// One connection's handshake under way: the socket, what was read and
/// not yet used, and the deadline.
struct Wire<'a> {
    c: &'a MariaConnector,
    s: Stream,
    buf: Vec<u8>,
    deadline: Instant,
    caps: CapabilityFlags,
}

impl Wire<'_> {
    fn fail(&self, kind: ErrorKind, what: String) -> Error {
        Error::new(kind, format!("{}: {what}", self.c.dsn.describe()))
    }

    /// The next packet's sequence number and payload.
    fn read_packet(&mut self) -> std::io::Result<(u8, Vec<u8>)> {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], 0]) as usize;
                if self.buf.len() >= 4 + len {
                    let seq = self.buf[3];
                    let payload = self.buf[4..4 + len].to_vec();
                    self.buf.drain(..4 + len);
                    return Ok((seq, payload));
                }
            }
            let mut chunk = [0u8; 4096];
            let who = self.c.dsn.describe();
            let n = read_handshake(&mut self.s, self.deadline, &mut chunk, &who, "MySQL")?;
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn write_packet(&mut self, seq: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        self.s.write_all(&p)
    }

    /// The error an ERR packet stands for: a refusal for "too many
    /// connections" (so that it counts as one), a permission error for bad
    /// credentials, else the server's message.
    fn server_error(&self, payload: &[u8], during: &str) -> Error {
        let (code, message) = match ParseBuf(payload).parse::<ErrPacket>(self.caps) {
            Ok(ErrPacket::Error(e)) => (e.error_code(), e.message_str().into_owned()),
            _ => (0, String::from_utf8_lossy(payload).into_owned()),
        };
        let (kind, hint) = if ER_CON_COUNT.contains(&code) {
            (ErrorKind::ConnectionRefused, "")
        } else if code == ER_ACCESS_DENIED {
            (
                ErrorKind::PermissionDenied,
                "; check the user and password in the URL",
            )
        } else {
            (ErrorKind::Other, "")
        };
        self.fail(kind, format!("{during}: {message} (error {code}){hint}"))
    }

    /// The greeting, the answer to it, and authentication to its end.
    fn authenticate(&mut self) -> std::io::Result<()> {
        let (_, greeting) = self.read_packet()?;
        if greeting.first() == Some(&0xff) {
            return Err(self.server_error(&greeting, "refused the connection"));
        }
        let hello: HandshakePacket = ParseBuf(&greeting).parse(()).map_err(|e| {
            self.fail(
                ErrorKind::InvalidData,
                format!("not the MySQL protocol ({e}); is it a MariaDB or MySQL server?"),
            )
        })?;
        let offered = hello.capabilities();
        if !offered.contains(REQUIRED) {
            return Err(self.fail(
                ErrorKind::Unsupported,
                "the server is too old for bakeoff's prepared statements (it lacks CLIENT_DEPRECATE_EOF: MariaDB 10.2 or MySQL 5.7 have it)".into(),
            ));
        }
        self.caps = WANTED & offered;
        let password = self.c.dsn.password.as_deref();
        let plugin = hello
            .auth_plugin()
            .unwrap_or(AuthPlugin::MysqlNativePassword)
            .into_owned();
        let nonce = hello.nonce();
        let data = plugin.gen_data(password, &nonce).map(|d| d.to_vec());
        let version = hello
            .maria_db_server_version_parsed()
            .or_else(|| hello.server_version_parsed())
            .unwrap_or((5, 7, 0));
        let answer = HandshakeResponse::new(
            data,
            version,
            Some(self.c.dsn.user.as_bytes()),
            Some(&b"bakeoff"[..]),
            Some(plugin.clone()),
            self.caps,
            None,
            16 * 1024 * 1024,
        );
        let mut out = Vec::new();
        answer.serialize(&mut out);
        self.write_packet(1, &out)?;
        loop {
            let (seq, p) = self.read_packet()?;
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(self.server_error(&p, "refused the connection")),
                // AuthSwitchRequest: the plugin the account uses, a nonce.
                Some(0xfe) => {
                    let rest = &p[1..];
                    let name_end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                    let plugin = AuthPlugin::from_bytes(&rest[..name_end]).into_owned();
                    let nonce = rest.get(name_end + 1..).unwrap_or_default();
                    let nonce = nonce.strip_suffix(&[0]).unwrap_or(nonce);
                    if let AuthPlugin::Other(name) = &plugin {
                        return Err(self.fail(
                            ErrorKind::Unsupported,
                            format!(
                                "the account authenticates with {}, which bakeoff's wire client does not speak (mysql_native_password, mysql_clear_password and caching_sha2_password do)",
                                String::from_utf8_lossy(name)
                            ),
                        ));
                    }
                    let data = plugin.gen_data(password, nonce).map(|d| d.to_vec());
                    self.write_packet(seq.wrapping_add(1), &data.unwrap_or_default())?;
                }
                // caching_sha2_password: 3 is the fast path's success (an OK
                // follows); 4 asks for the password in full, over TLS or
                // RSA, which this client does not do.
                Some(0x01) if p.get(1) == Some(&3) => {}
                Some(0x01) => {
                    return Err(self.fail(
                        ErrorKind::Unsupported,
                        "caching_sha2_password asks for full authentication (TLS or RSA), which bakeoff's wire client does not do; connect once with the mysql client to fill the server's cache, or use mysql_native_password".into(),
                    ))
                }
                _ => {
                    return Err(self.fail(
                        ErrorKind::InvalidData,
                        "answered the handshake with something unknown".into(),
                    ))
                }
            }
        }
    }

    /// Prepares the codec's statements; returns their ids.
    fn prepare(&mut self) -> std::io::Result<Handles> {
        let mut ids = Handles::default();
        let c = self.c;
        for (i, sql) in c.statements.iter().enumerate() {
            let mut command = vec![COM_STMT_PREPARE];
            command.extend_from_slice(sql.as_bytes());
            self.write_packet(0, &command)?;
            let (_, p) = self.read_packet()?;
            match p.first() {
                Some(0x00) if p.len() >= 9 => {
                    let given = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
                    let columns = u16::from_le_bytes([p[5], p[6]]);
                    let params = u16::from_le_bytes([p[7], p[8]]);
                    // Their definitions follow (no EOF packets).
                    for _ in 0..u32::from(columns) + u32::from(params) {
                        self.read_packet()?;
                    }
                    if i < ids.len() {
                        ids[i] = given;
                    } else if given != ids[3] + (i - 3) as u32 {
                        return Err(self.fail(
                            ErrorKind::InvalidData,
                            format!(
                                "numbered the statements it prepared out of order ({given} after {}); bakeoff needs a connection's statement ids to follow one another, as MariaDB and MySQL give them",
                                ids[3] + (i - 4) as u32
                            ),
                        ));
                    }
                }
                Some(0xff) => {
                    let during =
                        format!("cannot prepare the statements on bakeoff.{}", self.c.table);
                    return Err(self.server_error(&p, &during));
                }
                _ => {
                    return Err(self.fail(
                        ErrorKind::InvalidData,
                        "answered COM_STMT_PREPARE with something unknown".into(),
                    ))
                }
            }
        }
        Ok(ids)
    }
}

impl Connector for MariaConnector {
    fn connect(&self, within: Duration) -> std::io::Result<Connected> {
        let deadline = Instant::now() + within;
        let s = crate::admin::connect_address_within(&self.addr, "mariadb", within)?;
        let mut w = Wire {
            c: self,
            s,
            buf: Vec::with_capacity(4096),
            deadline,
            caps: CapabilityFlags::empty(),
        };
        w.authenticate()?;
        let handles = w.prepare()?;
        if !w.buf.is_empty() {
            return Err(w.fail(
                ErrorKind::InvalidData,
                "sent more than was asked during the handshake".into(),
            ));
        }
        w.s.set_read_timeout(None)?;
        w.s.set_write_timeout(None)?;
        Ok(Connected {
            stream: w.s,
            handles,
        })
    }
}

/// Starts a MariaDB server with the table `bakeoff.kv` and returns it
/// with a connector of the wire codec ([`MysqlCodec`]) to it, for tests of
/// the network loop.
pub fn start_with_kv(
    table: Option<&toml::Table>,
) -> Result<(ManagedServer, Box<dyn Connector>), TargetError> {
    let settings = MariaSettings::parse(table)?;
    let (server, dsn) = start_managed(
        &settings,
        &|_| Vec::new(),
        &|_| true,
        Limits::default(),
        false,
    )?;
    let sql = dsn.clone();
    block(async move {
        let mut c = connect(&sql, None).await?;
        create_kv(&mut c).await
    })?;
    let connector = MariaConnector {
        addr: Address::Tcp(server.addr),
        dsn,
        statements: STATEMENTS.map(String::from).to_vec(),
        table: "kv",
    };
    Ok((server, Box::new(connector)))
}
