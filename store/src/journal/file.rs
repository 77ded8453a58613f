//! The file under the write-ahead log: the operations it needs, the file and the
//! memory that provide them, and a read-ahead buffer for scans.

use std::io;

use crate::limits::WAL_READ_AHEAD_BYTES as READ_AHEAD_BYTES;

/// The file operations the write-ahead log needs. `std::fs::File` has them; tests
/// wrap one to inject faults (see [`crate::FaultyFile`]).
pub trait JournalIo: Send + Sync {
    /// The file's length.
    fn file_len(&self) -> io::Result<u64>;
    /// Fills `out` from `offset`.
    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()>;
    /// Writes all of `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Sets the file's length.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes the written data durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// Waits for the lock that short-lived appenders of one log take around a frame
    /// (`flock`): exclusive to append, shared to read. Files no other process can
    /// reach need none.
    fn lock(&self, _exclusive: bool) -> io::Result<()> {
        Ok(())
    }
    /// Releases [`JournalIo::lock`].
    fn unlock(&self) -> io::Result<()> {
        Ok(())
    }
}

impl JournalIo for std::fs::File {
    fn file_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, out, offset)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, data, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        std::fs::File::set_len(self, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        std::fs::File::sync_data(self)
    }

    fn lock(&self, exclusive: bool) -> io::Result<()> {
        if exclusive {
            std::fs::File::lock(self)
        } else {
            std::fs::File::lock_shared(self)
        }
    }

    fn unlock(&self) -> io::Result<()> {
        std::fs::File::unlock(self)
    }
}

/// A write-ahead log held in memory: the copy a log recovered in memory works on.
pub(crate) struct MemoryJournal(std::sync::Mutex<Vec<u8>>);

impl MemoryJournal {
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        MemoryJournal(std::sync::Mutex::new(bytes))
    }

    fn bytes(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl JournalIo for MemoryJournal {
    fn file_len(&self) -> io::Result<u64> {
        Ok(self.bytes().len() as u64)
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let bytes = self.bytes();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let source = bytes
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        out.copy_from_slice(source);
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut bytes = self.bytes();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        if bytes.len() < start + data.len() {
            bytes.resize(start + data.len(), 0);
        }
        bytes[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.bytes()
            .resize(usize::try_from(len).map_err(io::Error::other)?, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads through a buffer of [`READ_AHEAD_BYTES`]: a scan reads frame headers and
/// payloads of a few hundred bytes each, one system call apiece without it.
pub(super) struct Buffered<'a> {
    io: &'a dyn JournalIo,
    len: u64,
    /// Where the buffer starts in the file, and its bytes.
    buffer: std::sync::Mutex<(u64, Vec<u8>)>,
}

impl<'a> Buffered<'a> {
    pub(super) fn new(io: &'a dyn JournalIo, len: u64) -> Self {
        Buffered {
            io,
            len,
            buffer: std::sync::Mutex::new((0, Vec::new())),
        }
    }
}

impl JournalIo for Buffered<'_> {
    fn file_len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        if out.len() >= READ_AHEAD_BYTES {
            return self.io.read_at(offset, out);
        }
        let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        let (start, bytes) = &mut *buffer;
        let end = offset + out.len() as u64;
        if offset < *start || end > *start + bytes.len() as u64 {
            let n = (self.len.saturating_sub(offset)).min(READ_AHEAD_BYTES as u64) as usize;
            if n < out.len() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            bytes.resize(n, 0);
            self.io.read_at(offset, bytes)?;
            *start = offset;
        }
        let from = (offset - *start) as usize;
        out.copy_from_slice(&bytes[from..from + out.len()]);
        Ok(())
    }

    fn write_at(&self, _offset: u64, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::other("a scan does not write"))
    }

    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::other("a scan does not write"))
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}
