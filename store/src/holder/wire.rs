//! The frames a reader and the holder exchange: a little-endian length, then
//! an operation (or a status) and its fields. Records travel as their bytes,
//! never re-encoded.

use std::io::{self, Read, Write};

use crate::record::{BlobHash, ChainHash, Head, NewRecord, Record, Seq};

/// The largest frame either side accepts: a page of records is cut well below,
/// and an append of records as large as one commit takes fits.
pub(crate) const FRAME_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Records a page of a scan holds at most, and the bytes it stops after.
pub(crate) const PAGE_RECORDS: u32 = 4096;
pub(crate) const PAGE_BYTES: usize = 8 * 1024 * 1024;

/// What a reader asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    Head = 1,
    Get = 2,
    Scan = 3,
    StreamSeqs = 4,
    HasStream = 5,
    RecordsAt = 6,
    Streams = 7,
    WaitFor = 8,
    HasBlob = 9,
    GetBlob = 10,
    ListBlobs = 11,
    LatestSnapshot = 12,
    VerifyTree = 13,
    HasStoredTree = 14,
    Append = 15,
    AppendAt = 16,
    PutBlob = 17,
    RemoveBlobs = 18,
    ScanStream = 19,
}

impl Op {
    pub(crate) fn of(byte: u8) -> Option<Op> {
        use Op::*;
        [
            Head,
            Get,
            Scan,
            StreamSeqs,
            HasStream,
            RecordsAt,
            Streams,
            WaitFor,
            HasBlob,
            GetBlob,
            ListBlobs,
            LatestSnapshot,
            VerifyTree,
            HasStoredTree,
            Append,
            AppendAt,
            PutBlob,
            RemoveBlobs,
            ScanStream,
        ]
        .into_iter()
        .find(|op| *op as u8 == byte)
    }
}

/// A frame being written.
#[derive(Default)]
pub(crate) struct Out(pub(crate) Vec<u8>);

impl Out {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.0.extend_from_slice(v);
        self
    }
    pub(crate) fn hash(&mut self, v: &[u8; 32]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    pub(crate) fn head(&mut self, head: Head) -> &mut Self {
        self.u64(head.seq).hash(&head.hash.0)
    }
    pub(crate) fn record(&mut self, r: &Record) -> &mut Self {
        self.u64(r.seq).hash(&r.hash.0);
        match &r.stream {
            Some(s) => self.u8(1).bytes(s.as_bytes()),
            None => self.u8(0),
        };
        self.bytes(&r.bytes)
    }
    pub(crate) fn new_records(&mut self, records: &[NewRecord]) -> &mut Self {
        self.u64(records.len() as u64);
        for r in records {
            match &r.stream {
                Some(s) => self.u8(1).bytes(s.as_bytes()),
                None => self.u8(0),
            };
            self.bytes(&r.bytes);
        }
        self
    }
    /// Sends it, length first.
    pub(crate) fn send(&self, to: &mut impl Write) -> io::Result<()> {
        to.write_all(&(self.0.len() as u32).to_le_bytes())?;
        to.write_all(&self.0)?;
        to.flush()
    }
}

/// Reads one frame; `None` at a clean end of the stream.
pub(crate) fn receive(from: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match from.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > FRAME_BYTES_MAX {
        return Err(malformed("a frame over the size limit"));
    }
    let mut frame = vec![0u8; len];
    from.read_exact(&mut frame)?;
    Ok(Some(frame))
}

pub(crate) fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the holder's channel: {what}"),
    )
}

/// A frame being read.
pub(crate) struct In<'a>(pub(crate) &'a [u8]);

impl In<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(malformed("a frame cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub(crate) fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub(crate) fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        Ok(self.take(len)?.to_vec())
    }
    pub(crate) fn text(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|_| malformed("text that is not UTF-8"))
    }
    pub(crate) fn hash(&mut self) -> io::Result<[u8; 32]> {
        Ok(self.take(32)?.try_into().expect("32 bytes"))
    }
    pub(crate) fn head(&mut self) -> io::Result<Head> {
        Ok(Head {
            seq: self.u64()?,
            hash: ChainHash(self.hash()?),
        })
    }
    pub(crate) fn record(&mut self) -> io::Result<Record> {
        let seq = self.u64()?;
        let hash = ChainHash(self.hash()?);
        let stream = match self.u8()? {
            0 => None,
            _ => Some(self.text()?),
        };
        Ok(Record {
            seq,
            hash,
            stream,
            bytes: self.bytes()?,
        })
    }
    pub(crate) fn records(&mut self) -> io::Result<Vec<Record>> {
        let n = self.u64()?;
        (0..n).map(|_| self.record()).collect()
    }
    pub(crate) fn seqs(&mut self) -> io::Result<Vec<Seq>> {
        let n = self.u64()?;
        (0..n).map(|_| self.u64()).collect()
    }
    pub(crate) fn new_records(&mut self) -> io::Result<Vec<NewRecord>> {
        let n = self.u64()?;
        (0..n)
            .map(|_| {
                let stream = match self.u8()? {
                    0 => None,
                    _ => Some(self.text()?),
                };
                Ok(NewRecord {
                    stream,
                    bytes: self.bytes()?,
                })
            })
            .collect()
    }
    pub(crate) fn blob_hash(&mut self) -> io::Result<BlobHash> {
        Ok(BlobHash(self.hash()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_goes_through_as_it_is() {
        let r = Record {
            seq: 7,
            hash: ChainHash([3; 32]),
            stream: Some("s-1".into()),
            bytes: b"{\"type\":\"x\"}".to_vec(),
        };
        let mut out = Out::default();
        out.u64(1).record(&r);
        let mut wire = Vec::new();
        out.send(&mut wire).unwrap();
        let frame = receive(&mut wire.as_slice()).unwrap().unwrap();
        let mut input = In(&frame);
        assert_eq!(input.records().unwrap(), vec![r]);
        assert!(input.u8().is_err(), "nothing after it");
    }
}
