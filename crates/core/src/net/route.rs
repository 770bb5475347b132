//! Which connection a request goes on when a target has several nodes:
//! by consistent hashing (shards), by operation (a primary and its
//! replica), or by hash slot (Redis Cluster, whose `MOVED` and `ASK`
//! replies send a request again elsewhere).

#[allow(unused_imports)]
use super::*;

/// Which node a request goes to, when a target has several.
#[derive(Clone, Debug)]
pub enum Route {
    /// Keys spread by consistent hashing (shards).
    Ring(Ketama),
    /// Writes to node 0 (a primary), reads to node `reads` (the primary
    /// itself, or a replica).
    ReadWrite {
        /// The node reads go to.
        reads: usize,
    },
    /// Redis Cluster: each key to the node serving its hash slot, as the
    /// map says at the start and `MOVED` replies teach.
    Slots(SlotMap),
}

/// Redis Cluster's `ASKING`, sent before a request an `ASK` redirected.
pub(super) const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// Redirections of one request before it counts as failed.
pub(super) const MAX_REDIRECTS: u8 = 5;

impl<'a, C: Codec, const MULTI: bool> Loop<'a, C, MULTI> {
    /// The connection of client `ci` that request `req` goes on, counted
    /// there as sent; leaves its key in `key_buf`.
    #[inline]
    pub(super) fn conn_for(&mut self, ci: usize, req: &Request) -> usize {
        self.name_key(req.key);
        let k = match self.route {
            _ if !MULTI => ci,
            None => ci * self.nodes,
            Some(route) => {
                let node = match route {
                    Route::Ring(ring) => ring.node_of(&self.key_buf[..self.key_len]),
                    Route::ReadWrite { .. } if req.kind.writes() => 0,
                    Route::ReadWrite { reads } => *reads,
                    Route::Slots(_) => {
                        self.slot_owner[key_slot(&self.key_buf[..self.key_len]) as usize] as usize
                    }
                };
                self.node_sent[node][req.kind as usize] += 1;
                ci * self.nodes + node
            }
        };
        if MULTI {
            self.client_inflight[ci] += 1;
        }
        k
    }

    /// Redis Cluster: the node on connection `ci` sent `req` to the node
    /// at `to` (an index, if the address is one of the cluster's); it goes
    /// there now. Out of line: redirections are rare.
    #[inline(never)]
    pub(super) fn redirect(
        &mut self,
        ci: usize,
        mut req: Request,
        r: Redirect,
        to: Option<usize>,
        now: u64,
    ) {
        let from = ci % self.nodes;
        let client = self.client_of(ci);
        self.node_sent[from][req.kind as usize] -= 1;
        self.node_redirects[from][r.ask as usize] += 1;
        let Some(to) = to.filter(|_| req.redirects < MAX_REDIRECTS) else {
            // An address outside the cluster, or a request passed round:
            // the cluster is not serving it.
            self.client_inflight[client] -= 1;
            return self
                .harness
                .complete(&req, Outcome::Failed(ErrorKind::ServerError), now);
        };
        if !r.ask {
            self.slot_owner[r.slot as usize] = to as u16;
        }
        req.redirects += 1;
        req.leg = if r.ask {
            Leg::Asking
        } else {
            self.harness.first_leg(req.kind)
        };
        self.node_sent[to][req.kind as usize] += 1;
        self.name_key(req.key);
        self.encode_on(client * self.nodes + to, req);
    }
}
