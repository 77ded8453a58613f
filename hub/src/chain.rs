//! Which of a subject's messages are the log's. Anyone allowed to publish to a
//! log's subject can add a message to it; the hub cannot refuse one that claims
//! the next seq. Records are linked by the hash chain, so a reader recomputes it:
//! a message that does not continue the chain from some record before it is not
//! the log's, and where two messages claim one seq the longest chain wins (an
//! honest log that goes on pushing outgrows a forged record). What is left out is
//! reported as foreign — forged, or written by another machine with the log's id.
//! Signatures make this certain (docs/verifiable.md); this is what the chain alone
//! can tell.

use cmdlog_store::ChainHash;
use std::collections::HashMap;

/// A message that is not part of the log's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Its stream sequence.
    pub stream_seq: u64,
    /// The seq it claims.
    pub seq: u64,
    /// Why it is left out.
    pub why: &'static str,
}

#[derive(Debug, Clone)]
struct Candidate {
    seq: u64,
    stream_seq: u64,
    hash: ChainHash,
    parent: Option<usize>,
    depth: u64,
}

/// The messages of one log's subject, surveyed in stream order.
#[derive(Debug, Default)]
pub struct Survey {
    candidates: Vec<Candidate>,
    by_seq: HashMap<u64, Vec<usize>>,
    broken: Vec<Foreign>,
}

fn hex32(text: &str) -> Option<ChainHash> {
    ChainHash::from_hex(text)
}

impl Survey {
    /// Adds the message at `stream_seq` claiming `seq`, with its bytes and the
    /// chain hash its header states.
    pub fn add(&mut self, stream_seq: u64, seq: u64, bytes: &[u8], stated: &str) {
        let Some(stated) = hex32(stated) else {
            self.broken.push(Foreign {
                stream_seq,
                seq,
                why: "its chain hash header is malformed",
            });
            return;
        };
        let parents: Vec<Option<usize>> = if seq == 1 {
            vec![None]
        } else {
            self.by_seq
                .get(&(seq - 1))
                .map(|v| v.iter().map(|&i| Some(i)).collect())
                .unwrap_or_default()
        };
        let found = parents.into_iter().find(|parent| {
            let prev = parent.map_or(ChainHash::ZERO, |i| self.candidates[i].hash);
            cmdlog_store::chain_hash(&prev, seq, bytes) == stated
        });
        match found {
            Some(parent) => {
                let depth = parent.map_or(1, |i| self.candidates[i].depth + 1);
                self.candidates.push(Candidate {
                    seq,
                    stream_seq,
                    hash: stated,
                    parent,
                    depth,
                });
                self.by_seq
                    .entry(seq)
                    .or_default()
                    .push(self.candidates.len() - 1);
            }
            None => self.broken.push(Foreign {
                stream_seq,
                seq,
                why: "it does not continue the hash chain",
            }),
        }
    }

    /// The log's chain: the stream sequences of its records, in seq order (the
    /// longest chain; the first one published where two are as long).
    pub fn chain(&self) -> Vec<u64> {
        let Some(tip) = self
            .candidates
            .iter()
            .enumerate()
            .max_by(|(ia, a), (ib, b)| a.depth.cmp(&b.depth).then(ib.cmp(ia)))
            .map(|(i, _)| i)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut at = Some(tip);
        while let Some(i) = at {
            out.push(self.candidates[i].stream_seq);
            at = self.candidates[i].parent;
        }
        out.reverse();
        out
    }

    /// Messages surveyed, in the chain or not.
    pub fn messages(&self) -> usize {
        self.candidates.len() + self.broken.len()
    }

    /// The chain's last record: (seq, chain hash hex, stream sequence).
    pub fn head(&self) -> Option<(u64, String, u64)> {
        let chain = self.chain();
        let last = *chain.last()?;
        let c = self.candidates.iter().find(|c| c.stream_seq == last)?;
        Some((c.seq, c.hash.to_hex(), c.stream_seq))
    }

    /// The chain's record at `seq`: (chain hash hex, stream sequence).
    pub fn at(&self, seq: u64) -> Option<(String, u64)> {
        let chain: std::collections::HashSet<u64> = self.chain().into_iter().collect();
        self.by_seq.get(&seq)?.iter().find_map(|&i| {
            let c = &self.candidates[i];
            chain
                .contains(&c.stream_seq)
                .then(|| (c.hash.to_hex(), c.stream_seq))
        })
    }

    /// The stream sequence of a message (in the chain or not) that claims `seq`
    /// with chain hash `hash` (hex) and continues the chain.
    pub fn holds(&self, seq: u64, hash: &str) -> Option<u64> {
        let hash = hex32(hash)?;
        self.by_seq.get(&seq)?.iter().find_map(|&i| {
            let c = &self.candidates[i];
            (c.hash == hash).then_some(c.stream_seq)
        })
    }

    /// Every message after stream sequence `after`: (stream sequence, the seq it
    /// claims, its chain hash hex when it continues the chain).
    pub fn after(&self, after: u64) -> Vec<(u64, u64, Option<String>)> {
        let mut out: Vec<(u64, u64, Option<String>)> = self
            .candidates
            .iter()
            .filter(|c| c.stream_seq > after)
            .map(|c| (c.stream_seq, c.seq, Some(c.hash.to_hex())))
            .chain(
                self.broken
                    .iter()
                    .filter(|f| f.stream_seq > after)
                    .map(|f| (f.stream_seq, f.seq, None)),
            )
            .collect();
        out.sort_by_key(|m| m.0);
        out
    }

    /// The last stream sequence surveyed (0 for none).
    pub fn last_stream_seq(&self) -> u64 {
        self.candidates
            .iter()
            .map(|c| c.stream_seq)
            .chain(self.broken.iter().map(|f| f.stream_seq))
            .max()
            .unwrap_or(0)
    }

    /// Every message left out of the chain, in stream order.
    pub fn foreign(&self) -> Vec<Foreign> {
        let chain: std::collections::HashSet<u64> = self.chain().into_iter().collect();
        let mut out: Vec<Foreign> = self
            .candidates
            .iter()
            .filter(|c| !chain.contains(&c.stream_seq))
            .map(|c| Foreign {
                stream_seq: c.stream_seq,
                seq: c.seq,
                why: "another record claims its seq in a longer chain",
            })
            .chain(self.broken.iter().cloned())
            .collect();
        out.sort_by_key(|f| f.stream_seq);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linked(records: &[&[u8]]) -> Vec<(u64, Vec<u8>, String)> {
        let mut prev = ChainHash::ZERO;
        records
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let seq = i as u64 + 1;
                prev = cmdlog_store::chain_hash(&prev, seq, b);
                (seq, b.to_vec(), prev.to_hex())
            })
            .collect()
    }

    #[test]
    fn a_forged_record_is_left_out_once_the_log_goes_on() {
        let honest = linked(&[b"a", b"b", b"c", b"d"]);
        let forged = linked(&[b"a", b"b", b"FORGED"]);
        let mut s = Survey::default();
        let mut stream = 0;
        let mut add = |s: &mut Survey, (seq, bytes, hash): &(u64, Vec<u8>, String)| {
            stream += 1;
            s.add(stream, *seq, bytes, hash);
        };
        add(&mut s, &honest[0]);
        add(&mut s, &honest[1]);
        add(&mut s, &forged[2]); // stream 3: someone else's seq 3
        // Until the log goes on, the forged record is as long a chain as any.
        assert_eq!(s.chain(), [1, 2, 3]);
        add(&mut s, &honest[2]); // stream 4
        add(&mut s, &honest[3]); // stream 5
        assert_eq!(s.chain(), [1, 2, 4, 5]);
        assert_eq!(
            s.foreign().iter().map(|f| f.stream_seq).collect::<Vec<_>>(),
            [3]
        );
        s.add(6, 5, b"junk", &"00".repeat(32));
        assert_eq!(
            s.foreign().len(),
            2,
            "a record that does not link is foreign"
        );
        assert_eq!(s.head().unwrap().0, 4);
        assert_eq!(s.at(3).unwrap().1, 4);
    }
}
