//! Reading records: by seq, by range, by stream, tailing, and the chain check.

use std::time::{Duration, Instant};

use redb::ReadableTable;
use tokio::sync::watch;

use crate::error::{ReadError, read_err};
use crate::record::ChainHash;
use crate::record::{Record, Seq};
use crate::schema::{self, RECORDS, STREAMS};

use super::{ChainBreak, Head, Log, PendingStreams};

impl Log {
    /// Reads one record.
    pub fn get(&self, seq: Seq) -> Result<Option<Record>, ReadError> {
        if let Some(answer) = self.read_through(|r| r.get(seq), |log| log.get(seq)) {
            return answer;
        }
        if let Some(value) = self.overlay().records.get(&seq) {
            return decode(seq, value).map(Some);
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let Some(value) = records.get(seq).map_err(read_err)? else {
            return Ok(None);
        };
        decode(seq, value.value()).map(Some)
    }

    /// Calls `f` with every record in `from..=until`, in seq order, until it returns false.
    pub fn scan(
        &self,
        from: Seq,
        until: Seq,
        mut f: impl FnMut(Record) -> bool,
    ) -> Result<(), ReadError> {
        if from > until {
            return Ok(());
        }
        if let Some(remote) = self.remote() {
            // The first page on the open's channel: most reads end there.
            let page = self.read_through(|r| r.page(from, until).map(Some), |_| Ok(None));
            let Some(page) = page.expect("read through a holder")? else {
                // The holder stopped: the log itself answers.
                let log = self.after_holder.get().expect("opened after the holder");
                return log.scan(from, until, f);
            };
            let Some(last) = page.last().map(|r| r.seq) else {
                return Ok(());
            };
            for record in page {
                if !f(record) {
                    return Ok(());
                }
            }
            if last >= until {
                return Ok(());
            }
            // The rest streamed on a channel of its own.
            let mut next = last + 1;
            let streamed = remote.scan_stream(next, until, |page| {
                for record in page {
                    next = record.seq + 1;
                    if !f(record) {
                        return false;
                    }
                }
                true
            });
            return match streamed {
                Err(e) if remote.is_lost() && !remote.writable => match self.open_after_holder() {
                    Some(log) => log.scan(next, until, f),
                    None => Err(e),
                },
                other => other,
            };
        }
        // The overlay's records all follow redb's: redb's first, then the overlay's.
        let overlay_from = self.overlay().records.keys().next().copied();
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let redb_until = overlay_from.map_or(until, |o| until.min(o.saturating_sub(1)));
        if from <= redb_until {
            for entry in records.range(from..=redb_until).map_err(read_err)? {
                let (k, v) = entry.map_err(read_err)?;
                if !f(decode(k.value(), v.value())?) {
                    return Ok(());
                }
            }
        }
        if overlay_from.is_some() {
            // Copied out first: `f` may read the log again.
            let tail: Vec<(Seq, Vec<u8>)> = self
                .overlay()
                .records
                .range(from..=until)
                .map(|(k, v)| (*k, v.clone()))
                .collect();
            for (seq, value) in tail {
                if !f(decode(seq, &value)?) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The records in `from..=until`.
    pub fn range(&self, from: Seq, until: Seq) -> Result<Vec<Record>, ReadError> {
        let mut out = Vec::new();
        self.scan(from, until, |r| {
            out.push(r);
            true
        })?;
        Ok(out)
    }

    /// A read transaction and what `f` takes from the pending stream entries, both
    /// under the pending lock: a batch of entries moving to the `streams` table is
    /// then seen in one place or in both, never in neither.
    fn read_with_pending<T>(
        &self,
        f: impl FnOnce(&PendingStreams) -> T,
    ) -> Result<(redb::ReadTransaction, T), ReadError> {
        let pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let read = self.shared.db.begin_read().map_err(read_err)?;
        Ok((read, f(&pending)))
    }

    /// The seqs of the records under stream key `key` after seq `after`, in order.
    pub fn stream_seqs(&self, key: &str, after: Seq) -> Result<Vec<Seq>, ReadError> {
        if let Some(answer) = self.read_through(
            |r| r.stream_seqs(key, after),
            |log| log.stream_seqs(key, after),
        ) {
            return answer;
        }
        let (read, pending) = self.read_with_pending(|pending| {
            pending
                .seqs
                .get(key)
                .map(|s| {
                    s.iter()
                        .copied()
                        .filter(|&seq| seq > after)
                        .collect::<Vec<Seq>>()
                })
                .unwrap_or_default()
        })?;
        let streams = read.open_table(STREAMS).map_err(read_err)?;
        let mut seqs = Vec::new();
        let start = after.saturating_add(1);
        for entry in streams
            .range((key, start)..=(key, u64::MAX))
            .map_err(read_err)?
        {
            let (k, _) = entry.map_err(read_err)?;
            seqs.push(k.value().1);
        }
        let last = seqs.last().copied().unwrap_or(0);
        seqs.extend(pending.into_iter().filter(|&seq| seq > last));
        Ok(seqs)
    }

    /// Whether any record is under stream key `key`.
    pub fn has_stream(&self, key: &str) -> Result<bool, ReadError> {
        if let Some(answer) = self.read_through(|r| r.has_stream(key), |log| log.has_stream(key)) {
            return answer;
        }
        let (read, pending) =
            self.read_with_pending(|pending| pending.seqs.get(key).is_some_and(|s| !s.is_empty()))?;
        if pending {
            return Ok(true);
        }
        let streams = read.open_table(STREAMS).map_err(read_err)?;
        let mut range = streams
            .range((key, 0)..=(key, u64::MAX))
            .map_err(read_err)?;
        Ok(range.next().is_some())
    }

    /// The records under stream key `key` after seq `after`, in order.
    pub fn stream(&self, key: &str, after: Seq) -> Result<Vec<Record>, ReadError> {
        let seqs = self.stream_seqs(key, after)?;
        self.records_at(&seqs)
    }

    /// The records at `seqs` (of a stream, from [`Log::stream_seqs`]), in that
    /// order: a caller that pages through a long stream holds one page at a time.
    pub fn records_at(&self, seqs: &[Seq]) -> Result<Vec<Record>, ReadError> {
        if let Some(answer) = self.read_through(|r| r.records_at(seqs), |log| log.records_at(seqs))
        {
            return answer;
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let mut out = Vec::with_capacity(seqs.len());
        let overlay = self.overlay();
        for &seq in seqs {
            if let Some(value) = overlay.records.get(&seq) {
                out.push(decode(seq, value)?);
                continue;
            }
            let value = records
                .get(seq)
                .map_err(read_err)?
                .ok_or(ReadError::Corrupt {
                    seq,
                    message: "indexed under its stream but missing from the log".into(),
                })?;
            out.push(decode(seq, value.value())?);
        }
        Ok(out)
    }

    /// The distinct stream keys, sorted.
    pub fn streams(&self) -> Result<Vec<String>, ReadError> {
        if let Some(answer) = self.read_through(|r| r.streams(), |log| log.streams()) {
            return answer;
        }
        let (read, mut keys) =
            self.read_with_pending(|pending| pending.seqs.keys().cloned().collect::<Vec<_>>())?;
        let streams = read.open_table(STREAMS).map_err(read_err)?;
        let mut iter = streams.iter().map_err(read_err)?;
        // Jump from one key straight past its entries (no seq reaches u64::MAX).
        while let Some(entry) = iter.next() {
            let (k, _) = entry.map_err(read_err)?;
            let key = k.value().0.to_string();
            iter = streams
                .range((key.as_str(), u64::MAX)..)
                .map_err(read_err)?;
            keys.push(key);
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// Blocks until a record after `after` is committed or `timeout` passes;
    /// returns the head seq then.
    pub fn wait_for(&self, after: Seq, timeout: Duration) -> Seq {
        if self.remote().is_some() {
            return self
                .wait_for_holder(after, timeout)
                .unwrap_or_else(|_| self.head().seq);
        }
        let deadline = Instant::now() + timeout;
        let mut head = self.shared.head.lock().unwrap_or_else(|p| p.into_inner());
        while head.seq <= after {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            head = self
                .shared
                .committed
                .wait_timeout(head, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        head.seq
    }

    /// [`Log::wait_for`], saying when the process this open reads through
    /// stopped (open the log again to go on); the same as `wait_for` for
    /// another open.
    pub fn wait_for_holder(&self, after: Seq, timeout: Duration) -> Result<Seq, ReadError> {
        let Some(remote) = self.remote() else {
            return Ok(self.wait_for(after, timeout));
        };
        // The holder waits; its head becomes this open's.
        let head = remote.wait_for(after, timeout)?;
        *self.shared.head.lock().unwrap_or_else(|p| p.into_inner()) = head;
        self.shared.watch.send_replace(head.seq);
        Ok(head.seq)
    }

    /// A receiver of the head seq, updated after every commit (for async tails).
    pub fn subscribe(&self) -> watch::Receiver<Seq> {
        self.shared.watch.subscribe()
    }

    /// Recomputes the hash chain over the whole log. `Ok(Err(break))` names the
    /// first broken seq; `progress` is called with each seq checked.
    pub fn verify_chain(
        &self,
        mut progress: impl FnMut(Seq),
    ) -> Result<Result<Head, ChainBreak>, ReadError> {
        if self.remote().is_some() {
            return self.verify_chain_read(progress);
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let mut prev = Head {
            seq: 0,
            hash: ChainHash::ZERO,
        };
        let mut link = |seq: Seq, value: &[u8]| -> Option<ChainBreak> {
            if seq != prev.seq + 1 {
                return Some(ChainBreak::Gap {
                    previous: prev.seq,
                    found: seq,
                });
            }
            let Some((stored, _, bytes)) = schema::decode_record(value) else {
                return Some(ChainBreak::Undecodable { seq });
            };
            let expected = schema::chain(&prev.hash, seq, bytes);
            if stored != expected {
                return Some(ChainBreak::HashMismatch { seq });
            }
            prev = Head {
                seq,
                hash: expected,
            };
            progress(seq);
            None
        };
        for entry in records.iter().map_err(read_err)? {
            let (k, v) = entry.map_err(read_err)?;
            if let Some(broken) = link(k.value(), v.value()) {
                return Ok(Err(broken));
            }
        }
        for (seq, value) in &self.overlay().records {
            if let Some(broken) = link(*seq, value) {
                return Ok(Err(broken));
            }
        }
        Ok(Ok(prev))
    }
}

impl Log {
    /// [`Log::verify_chain`] over the records as read (through the holder),
    /// up to this open's head.
    fn verify_chain_read(
        &self,
        mut progress: impl FnMut(Seq),
    ) -> Result<Result<Head, ChainBreak>, ReadError> {
        let mut prev = Head {
            seq: 0,
            hash: ChainHash::ZERO,
        };
        let mut broken = None;
        self.scan(1, self.head().seq, |r| {
            let expected = schema::chain(&prev.hash, r.seq, &r.bytes);
            broken = if r.seq != prev.seq + 1 {
                Some(ChainBreak::Gap {
                    previous: prev.seq,
                    found: r.seq,
                })
            } else if r.hash != expected {
                Some(ChainBreak::HashMismatch { seq: r.seq })
            } else {
                None
            };
            prev = Head {
                seq: r.seq,
                hash: expected,
            };
            progress(r.seq);
            broken.is_none()
        })?;
        Ok(broken.map_or(Ok(prev), Err))
    }
}

fn decode(seq: Seq, value: &[u8]) -> Result<Record, ReadError> {
    let (hash, stream, bytes) = schema::decode_record(value).ok_or(ReadError::Corrupt {
        seq,
        message: "the stored value is truncated or malformed".into(),
    })?;
    Ok(Record {
        seq,
        hash,
        stream: stream.map(str::to_string),
        bytes: bytes.to_vec(),
    })
}
