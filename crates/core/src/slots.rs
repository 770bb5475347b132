//! Redis Cluster's hash slots: a key belongs to slot CRC16(key) mod 16384
//! (CRC-16/XMODEM, as the cluster specification gives it), hashing only
//! the part between the first `{` and the next `}` when that part is not
//! empty (a hash tag), so that keys sharing a tag share a slot. The client
//! keeps which node serves each slot and learns from `MOVED` replies.

/// Slots of a Redis Cluster.
pub const SLOTS: usize = 16384;

/// How keys are spread, as the result file records it.
pub const DESCRIPTION: &str = "Redis Cluster hash slots (CRC-16/XMODEM of the key, or of its {hash tag}, mod 16384), each slot served by one master; the client follows MOVED (and remembers) and ASK (ASKING first, once)";

/// CRC-16/XMODEM (polynomial 0x1021, initial 0, no reflection), bit by
/// bit: a key is a few bytes, and this runs once per request.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) % SLOTS as u16
}

/// Which node serves each slot, and the nodes by the address a redirection
/// names them with.
#[derive(Clone, Debug)]
pub struct SlotMap {
    /// Node index of each slot.
    owner: Vec<u16>,
    /// `ip:port` of each node, as `MOVED` and `ASK` name it.
    addrs: Vec<String>,
}

impl SlotMap {
    /// The first `masters` of `addrs` (each node's `ip:port`) sharing the
    /// slots in equal ranges, in order: master `i` serves
    /// [`SlotMap::even_range`]`(i, masters)`, as bakeoff assigns them when it
    /// makes a cluster. The other nodes (replicas) serve no slot until a
    /// redirection names them.
    pub fn even(addrs: Vec<String>, masters: usize) -> Self {
        let n = masters.clamp(1, addrs.len().max(1));
        let owner = (0..SLOTS).map(|s| (s * n / SLOTS) as u16).collect();
        SlotMap { owner, addrs }
    }

    /// The first slot of node `i` of `n` in [`SlotMap::even`], and one past
    /// its last.
    pub fn even_range(i: usize, n: usize) -> (usize, usize) {
        let first = |i: usize| (i * SLOTS).div_ceil(n);
        (first(i), first(i + 1))
    }

    /// The node serving `slot`.
    #[inline]
    pub fn owner(&self, slot: u16) -> usize {
        self.owner[slot as usize] as usize
    }

    /// Every slot's node, to copy and update.
    pub fn owners(&self) -> Vec<u16> {
        self.owner.clone()
    }

    /// The node named `addr` (`ip:port`) in a redirection.
    pub fn node_named(&self, addr: &[u8]) -> Option<usize> {
        self.addrs.iter().position(|a| a.as_bytes() == addr)
    }
}

/// A redirection a Redis Cluster node answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// `ASK` (this request only, after `ASKING`), not `MOVED` (for good).
    pub ask: bool,
    /// The key's slot.
    pub slot: u16,
    /// Where the node's `ip:port` starts in the reply, and ends.
    pub start: usize,
    /// One past its end.
    pub end: usize,
}

/// Reads `MOVED <slot> <ip:port>` or `ASK <slot> <ip:port>` from an error
/// reply's text (`line`, without the `-` and the CRLF), which starts at
/// `offset` in the reply.
pub fn parse_redirect(line: &[u8], offset: usize) -> Option<Redirect> {
    let (ask, rest, skip) = if let Some(r) = line.strip_prefix(b"MOVED ") {
        (false, r, 6)
    } else if let Some(r) = line.strip_prefix(b"ASK ") {
        (true, r, 4)
    } else {
        return None;
    };
    let space = rest.iter().position(|&b| b == b' ')?;
    let slot: u16 = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
    if slot as usize >= SLOTS || space + 1 >= rest.len() {
        return None;
    }
    let start = offset + skip + space + 1;
    Some(Redirect {
        ask,
        slot,
        start,
        end: offset + line.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's check value and slots that redis-cli's
    /// `CLUSTER KEYSLOT` gives for the same keys.
    #[test]
    fn slots_are_the_clusters() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    #[test]
    fn even_ranges_cover_every_slot_once() {
        let m = SlotMap::even(
            vec!["a:1".into(), "b:2".into(), "c:3".into(), "r:4".into()],
            3,
        );
        for i in 0..3 {
            let (a, b) = SlotMap::even_range(i, 3);
            assert!((a..b).all(|s| m.owner(s as u16) == i), "node {i}");
        }
        assert_eq!(SlotMap::even_range(0, 3).0, 0);
        assert_eq!(SlotMap::even_range(2, 3).1, SLOTS);
        assert_eq!(m.node_named(b"b:2"), Some(1));
        assert_eq!(m.node_named(b"d:4"), None);
        // A replica serves no slot, but a redirection may name it.
        assert!((0..SLOTS).all(|s| m.owner(s as u16) < 3));
        assert_eq!(m.node_named(b"r:4"), Some(3));
    }

    #[test]
    fn redirections_are_read() {
        let line = b"MOVED 3999 127.0.0.1:6381";
        let r = parse_redirect(line, 1).unwrap();
        assert_eq!((r.ask, r.slot), (false, 3999));
        let reply = b"-MOVED 3999 127.0.0.1:6381\r\n";
        assert_eq!(&reply[r.start..r.end], b"127.0.0.1:6381");
        let r = parse_redirect(b"ASK 1 127.0.0.1:7000", 1).unwrap();
        assert!(r.ask);
        assert_eq!(parse_redirect(b"ERR wrong", 1), None);
        assert_eq!(parse_redirect(b"MOVED 99999 x:1", 1), None);
        assert_eq!(parse_redirect(b"MOVED 5", 1), None);
    }
}
