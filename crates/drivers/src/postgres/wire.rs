//! Connections for the PostgreSQL codec: the start-up handshake (trust,
//! cleartext, MD5 or SCRAM-SHA-256, with `postgres-protocol`'s messages and
//! SCRAM), then the codec's statements prepared, on a blocking socket
//! bounded in time; the network loop takes the socket from there.

use std::io::{Error, ErrorKind, Write};
use std::time::{Duration, Instant};

use bakeoff_core::driver::{Connector, Stream};
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;

use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;

use super::server::Dsn;
use super::server::{connect, start, KV_TABLE};
use crate::admin::{read_handshake, Address};
use crate::async_target::block;
use crate::codec::postgres::PostgresCodec;
use bakeoff_core::error::TargetError;
use bakeoff_servers::ManagedServer;

/// SQLSTATE of "too many connections": the server turning a client away.
const TOO_MANY_CONNECTIONS: &str = "53300";

/// Opens connections for [`crate::codec::postgres::PostgresCodec`].
pub struct PgConnector {
    /// Where to connect (the link relay's address, when there is one; the
    /// server's socket file, when the URL's host is its directory).
    pub addr: Address,
    /// Who connects, to which database (and the password, if any).
    pub(super) dsn: Dsn,
    /// The codec's statements, as (name, SQL, parameter types).
    pub(super) statements: Vec<(String, String, Vec<u32>)>,
    /// The table they run on, for errors.
    pub(super) table: &'static str,
}

impl PgConnector {
    fn fail(&self, kind: ErrorKind, what: String) -> Error {
        Error::new(kind, format!("{}: {what}", self.dsn.describe()))
    }

    /// The error a server's `ErrorResponse` stands for: a refusal when it
    /// has too many clients (so it counts as one), a permission error for
    /// bad credentials, else a plain error with the server's message.
    fn server_error(&self, body: &ErrorResponseBody, during: &str) -> Error {
        let (mut code, mut message) = (String::new(), String::new());
        let mut fields = body.fields();
        while let Ok(Some(f)) = fields.next() {
            match f.type_() {
                b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
                b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
                _ => {}
            }
        }
        let kind = match code.as_str() {
            TOO_MANY_CONNECTIONS => ErrorKind::ConnectionRefused,
            // invalid_password, invalid_authorization_specification.
            "28P01" | "28000" => ErrorKind::PermissionDenied,
            _ => ErrorKind::Other,
        };
        let hint = if kind == ErrorKind::PermissionDenied {
            "; check the user and password in the URL"
        } else {
            ""
        };
        self.fail(kind, format!("{during}: {message} ({code}){hint}"))
    }

    /// Reads the next backend message into `buf`'s front, by `deadline`.
    fn next(
        &self,
        s: &mut Stream,
        buf: &mut BytesMut,
        deadline: Instant,
    ) -> std::io::Result<Message> {
        loop {
            match Message::parse(buf) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => {
                    return Err(self.fail(
                        ErrorKind::InvalidData,
                        format!("not the PostgreSQL protocol ({e}); is it a PostgreSQL server?"),
                    ))
                }
            }
            let mut chunk = [0u8; 4096];
            let who = self.dsn.describe();
            let n = read_handshake(s, deadline, &mut chunk, &who, "PostgreSQL")?;
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn password(&self) -> std::io::Result<&[u8]> {
        self.dsn.password.as_deref().map(str::as_bytes).ok_or_else(|| {
            self.fail(
                ErrorKind::PermissionDenied,
                "the server asks for a password; give it in the URL (postgres://user:password@host:port/db)".into(),
            )
        })
    }

    /// Start-up and authentication, up to the first `ReadyForQuery`.
    fn start_up(
        &self,
        s: &mut Stream,
        buf: &mut BytesMut,
        deadline: Instant,
    ) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        frontend::startup_message(
            [
                ("user", self.dsn.user.as_str()),
                ("database", self.dsn.dbname.as_str()),
                ("application_name", "bakeoff"),
                ("client_encoding", "UTF8"),
            ],
            &mut out,
        )?;
        s.write_all(&out)?;
        let mut scram = None;
        loop {
            out.clear();
            match self.next(s, buf, deadline)? {
                Message::AuthenticationOk
                | Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => continue,
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(body) => {
                    return Err(self.server_error(&body, "refused the connection"))
                }
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(self.password()?, &mut out)?
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(self.dsn.user.as_bytes(), self.password()?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut out)?
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut scram_offered = false;
                    while let Ok(Some(m)) = mechanisms.next() {
                        scram_offered |= m == sasl::SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(self.fail(
                            ErrorKind::Unsupported,
                            "asks for a SASL mechanism other than SCRAM-SHA-256".into(),
                        ));
                    }
                    let s = sasl::ScramSha256::new(self.password()?, sasl::ChannelBinding::unsupported());
                    frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut out)?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = self.scram_started(&mut scram)?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut out)?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    self.scram_started(&mut scram)?.finish(body.data())?;
                    continue;
                }
                _ => {
                    return Err(self.fail(
                        ErrorKind::Unsupported,
                        "asks for an authentication bakeoff does not speak (trust, password, md5 and scram-sha-256 work)".into(),
                    ))
                }
            }
            s.write_all(&out)?;
        }
    }

    /// The SCRAM exchange the server continues: an error when it never
    /// asked for one.
    fn scram_started<'s>(
        &self,
        scram: &'s mut Option<sasl::ScramSha256>,
    ) -> std::io::Result<&'s mut sasl::ScramSha256> {
        scram
            .as_mut()
            .ok_or_else(|| self.fail(ErrorKind::InvalidData, "SASL out of order".into()))
    }

    /// Prepares the codec's statements.
    fn prepare(
        &self,
        s: &mut Stream,
        buf: &mut BytesMut,
        deadline: Instant,
    ) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        for (name, sql, types) in &self.statements {
            frontend::parse(name, sql, types.iter().copied(), &mut out)?;
        }
        frontend::sync(&mut out);
        s.write_all(&out)?;
        let mut error = None;
        loop {
            match self.next(s, buf, deadline)? {
                Message::ReadyForQuery(_) => break,
                Message::ErrorResponse(body) => {
                    error.get_or_insert_with(|| {
                        let during =
                            format!("cannot prepare the statements on table {}", self.table);
                        self.server_error(&body, &during)
                    });
                }
                _ => {}
            }
        }
        error.map_or(Ok(()), Err)
    }
}

impl Connector for PgConnector {
    fn connect(&self, within: Duration) -> std::io::Result<bakeoff_core::driver::Connected> {
        let deadline = Instant::now() + within;
        let mut s = crate::admin::connect_address_within(&self.addr, "postgres", within)?;
        let mut buf = BytesMut::with_capacity(4096);
        self.start_up(&mut s, &mut buf, deadline)?;
        self.prepare(&mut s, &mut buf, deadline)?;
        if !buf.is_empty() {
            return Err(self.fail(
                ErrorKind::InvalidData,
                "sent more than was asked during the handshake".into(),
            ));
        }
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        Ok(s.into())
    }
}

/// Starts a PostgreSQL server with the table `kv` and returns it with a
/// connector of the wire codec ([`PostgresCodec`]) to it, for tests of
/// the network loop.
pub fn start_with_kv(
    table: Option<&toml::Table>,
) -> Result<(ManagedServer, Box<dyn Connector>), TargetError> {
    let server = start(table, None)?;
    let dsn = Dsn::managed(server.addr.port());
    let sql = dsn.clone();
    block(async move {
        connect(&sql)
            .await?
            .simple_query(KV_TABLE)
            .await
            .map_err(TargetError::cause)
    })?;
    let connector = PgConnector {
        addr: Address::Tcp(server.addr),
        dsn,
        statements: PostgresCodec::statements(),
        table: "kv",
    };
    Ok((server, Box::new(connector)))
}
