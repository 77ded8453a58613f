//! Reading newline-delimited messages from a peer that may send anything: a line
//! over the limit is not kept (its size and BLAKE3 hash are) and the stream goes
//! on after it; bytes that are not UTF-8 are read lossily. Nothing the other side
//! sends stops the reading but the end of its output.

use memchr::memchr;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One line read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line within the limit, without its newline (lossy where not UTF-8).
    Text(String),
    /// A line over the limit: not kept.
    Oversized {
        /// Its length in bytes.
        bytes: u64,
        /// BLAKE3 of its bytes, hex.
        blake3: String,
    },
}

/// Reads [`Line`]s of at most `max` bytes from `R`.
pub struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of at most `max` bytes from `reader`.
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, reader),
            max,
        }
    }

    /// The next line; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<std::io::Result<Line>> {
        let mut line: Vec<u8> = Vec::new();
        let mut over: Option<(blake3::Hasher, u64)> = None;
        let mut any = false;
        loop {
            let buf = match self.inner.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => return Some(Err(e)),
            };
            if buf.is_empty() {
                if !any {
                    return None;
                }
                break;
            }
            any = true;
            let (chunk, used, done) = match memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            match &mut over {
                Some((hasher, n)) => {
                    hasher.update(chunk);
                    *n += chunk.len() as u64;
                }
                None if line.len() + chunk.len() > self.max => {
                    let mut hasher = blake3::Hasher::new();
                    hasher.update(&line);
                    hasher.update(chunk);
                    over = Some((hasher, (line.len() + chunk.len()) as u64));
                    line = Vec::new();
                }
                None => line.extend_from_slice(chunk),
            }
            self.inner.consume(used);
            if done {
                break;
            }
        }
        Some(Ok(match over {
            Some((hasher, bytes)) => Line::Oversized {
                bytes,
                blake3: hasher.finalize().to_hex().to_string(),
            },
            None => Line::Text(match String::from_utf8(line) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_oversized_line_is_measured_and_the_stream_goes_on() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(vec![b'x'; 100]);
        input.extend(b"\nnext\n\xffbad\nlast");
        let mut lines = LineReader::new(&input[..], 50);
        assert_eq!(
            lines.next().await.unwrap().unwrap(),
            Line::Text("{\"a\":1}".into())
        );
        match lines.next().await.unwrap().unwrap() {
            Line::Oversized { bytes, blake3 } => {
                assert_eq!(bytes, 100);
                assert_eq!(blake3, blake3::hash(&[b'x'; 100]).to_hex().to_string());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            lines.next().await.unwrap().unwrap(),
            Line::Text("next".into())
        );
        assert_eq!(
            lines.next().await.unwrap().unwrap(),
            Line::Text("\u{fffd}bad".into())
        );
        assert_eq!(
            lines.next().await.unwrap().unwrap(),
            Line::Text("last".into())
        );
        assert!(lines.next().await.is_none());
    }
}
