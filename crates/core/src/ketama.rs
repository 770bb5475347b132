//! Ketama consistent hashing, as libmemcached does it with
//! `MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED` (libketama's ring, shared by
//! spymemcached and PHP's memcached extension): the client of a sharded
//! memcached or Redis picks the node of each key with it.
//!
//! Each node puts 160 points on a ring of 32-bit values: for `i` in 0..40,
//! the MD5 of `host:port-i` (`host-i` on memcached's default port 11211)
//! gives four points, one per 4 bytes of the digest, little-endian. A key's
//! hash is the first 4 bytes of its MD5, little-endian; its node owns the
//! first point at or after that value, wrapping round.

use md5::{Digest, Md5};

/// Points each node puts on the ring (libmemcached's
/// `MEMCACHED_POINTS_PER_SERVER_KETAMA`), in groups of four per MD5.
const POINTS_PER_NODE: usize = 160;

/// memcached's default port, left out of a node's name on the ring.
const DEFAULT_PORT: u16 = 11211;

/// How keys are spread, as the result file records it.
pub const DESCRIPTION: &str = "ketama consistent hashing as libmemcached's KETAMA_WEIGHTED (MD5; 160 points per node named host:port-i, host-i on port 11211; a key goes to the first point at or after the first 4 bytes of its MD5)";

/// A ring of nodes.
#[derive(Clone, Debug)]
pub struct Ketama {
    /// (point, node index), sorted by point.
    points: Vec<(u32, u32)>,
    nodes: usize,
}

impl Ketama {
    /// The ring of `nodes`, each given as (host, port), with equal weights.
    pub fn new(nodes: &[(String, u16)]) -> Self {
        let mut points = Vec::with_capacity(nodes.len() * POINTS_PER_NODE);
        for (index, (host, port)) in nodes.iter().enumerate() {
            for i in 0..POINTS_PER_NODE / 4 {
                let name = if *port == DEFAULT_PORT {
                    format!("{host}-{i}")
                } else {
                    format!("{host}:{port}-{i}")
                };
                let digest = Md5::digest(name.as_bytes());
                for quarter in digest.chunks_exact(4) {
                    let value = u32::from_le_bytes(quarter.try_into().expect("4 bytes"));
                    points.push((value, index as u32));
                }
            }
        }
        points.sort_by_key(|&(value, _)| value);
        Ketama {
            points,
            nodes: nodes.len(),
        }
    }

    /// Number of nodes on the ring.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The node that holds `key`.
    #[inline]
    pub fn node_of(&self, key: &[u8]) -> usize {
        if self.nodes <= 1 {
            return 0;
        }
        let digest = Md5::digest(key);
        let hash = u32::from_le_bytes(digest[..4].try_into().expect("4 bytes"));
        let at = self.points.partition_point(|&(value, _)| value < hash);
        let (_, node) = self.points[if at == self.points.len() { 0 } else { at }];
        node as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node of fixed keys on rings of 1 to 5 nodes is the one
    /// libmemcached picks (tests/fixtures/ketama.txt, written by
    /// tests/fixtures/ketama-gen.c against Debian's libmemcached 1.1).
    #[test]
    fn keys_go_where_libmemcached_sends_them() {
        let text = include_str!("../tests/fixtures/ketama.txt");
        let mut ring = None;
        let (mut checked, mut rings) = (0, 0);
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("servers") => {
                    let nodes: Vec<(String, u16)> = words
                        .map(|w| {
                            let (h, p) = w.rsplit_once(':').unwrap();
                            (h.to_string(), p.parse().unwrap())
                        })
                        .collect();
                    ring = Some(Ketama::new(&nodes));
                    rings += 1;
                }
                Some(key) => {
                    let want: usize = words.next().unwrap().parse().unwrap();
                    let ring = ring.as_ref().unwrap();
                    assert_eq!(ring.node_of(key.as_bytes()), want, "{key} on ring {rings}");
                    checked += 1;
                }
                None => {}
            }
        }
        assert_eq!(rings, 5);
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn four_nodes_share_keys_roughly_evenly() {
        let nodes: Vec<(String, u16)> = (0..4)
            .map(|i| ("127.0.0.1".to_string(), 20000 + i))
            .collect();
        let ring = Ketama::new(&nodes);
        let mut counts = [0u32; 4];
        for id in 0..100_000u64 {
            counts[ring.node_of(&crate::keys::key_of(id))] += 1;
        }
        for c in counts {
            assert!((15_000..=35_000).contains(&c), "{counts:?}");
        }
    }
}
