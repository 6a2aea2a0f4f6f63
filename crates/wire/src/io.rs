//! Frames over a byte stream (a socket, or anything that reads and writes): read whole frames
//! however the stream's reads split them, write one frame at a time.

use std::io::{ErrorKind, Read, Write};

use crate::codec::WireError;
use crate::frame::Frame;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The bytes are not a frame.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The peer declared a frame larger than this reader takes.
    #[error("the peer sent a frame of {len} bytes where at most {limit} are taken")]
    TooLarge {
        /// The declared length.
        len: usize,
        /// The reader's limit.
        limit: usize,
    },
    /// The peer closed the connection in the middle of a frame.
    #[error("the peer closed the connection in the middle of a frame ({0} bytes of it read)")]
    Truncated(usize),
}

/// Reads the frames of a byte stream.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    /// The largest body taken (at most the format's own limit).
    limit: usize,
}

/// How much is read at a time.
const READ_CHUNK: usize = 64 << 10;

impl<R: Read> FrameReader<R> {
    /// Reads frames from `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            start: 0,
            limit: crate::codec::MAX_BODY,
        }
    }

    /// Takes no frame whose body is larger than `limit` bytes (an unauthenticated peer's
    /// first words are small): a larger one is refused as soon as its header is read, before
    /// its body is.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(crate::codec::MAX_BODY);
    }

    /// What frames are read from (to set a socket's read timeout, say).
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The next frame; `None` when the peer closed the connection between two frames.
    pub fn read_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        loop {
            if let Some((frame, used)) = crate::codec::decode(&self.buf[self.start..])? {
                self.start += used;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                return Ok(Some(frame));
            }
            // A header that declares more than this reader takes: refused before the body.
            if let Some(h) = self.buf.get(self.start..self.start + 8) {
                let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
                if len > self.limit {
                    return Err(FrameError::TooLarge {
                        len,
                        limit: self.limit,
                    });
                }
            }
            // Not a whole frame yet: make room and read more.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let have = self.buf.len();
            self.buf.resize(have + READ_CHUNK, 0);
            let n = loop {
                match self.inner.read(&mut self.buf[have..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(have);
                        return Err(e.into());
                    }
                }
            };
            self.buf.truncate(have + n);
            if n == 0 {
                return if have == 0 {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated(have))
                };
            }
        }
    }
}

/// Writes `frame` (into the writer's buffer: flush to send).
pub fn write_frame(w: &mut impl Write, frame: &Frame) -> Result<(), FrameError> {
    let bytes = crate::codec::encode(frame)?;
    w.write_all(&bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes a few at a time, as a socket may.
    struct Dribble(Vec<u8>, usize);

    impl Read for Dribble {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn frames_split_across_reads_come_out_whole_and_in_order() {
        let mut bytes = Vec::new();
        for seq in 1..=50 {
            write_frame(
                &mut bytes,
                &Frame::Watermark {
                    seq,
                    ms: seq as i64,
                },
            )
            .expect("writes");
        }
        for chunk in [1, 3, 7, 1000] {
            let mut r = FrameReader::new(Dribble(bytes.clone(), chunk));
            for seq in 1..=50 {
                let f = r.read_frame().expect("reads").expect("a frame");
                assert_eq!(
                    f,
                    Frame::Watermark {
                        seq,
                        ms: seq as i64
                    }
                );
            }
            assert!(r.read_frame().expect("a clean end").is_none());
        }
    }

    #[test]
    fn a_connection_closed_inside_a_frame_is_an_error() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &Frame::End { seq: 9 }).expect("writes");
        bytes.pop();
        let mut r = FrameReader::new(Dribble(bytes, 4));
        assert!(matches!(r.read_frame(), Err(FrameError::Truncated(_))));
    }

    #[test]
    fn bytes_of_another_protocol_are_refused() {
        let mut r = FrameReader::new(Dribble(b"GET / HTTP/1.1\r\n\r\n".to_vec(), 64));
        let err = r.read_frame().expect_err("refused");
        assert!(matches!(err, FrameError::Wire(WireError::BadMagic(_))));
        // Said once, not once by the frame error and again by its source ("X: X" in a chain).
        let said = err.to_string();
        let mut chain = vec![said.clone()];
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            chain.push(s.to_string());
            source = s.source();
        }
        assert_eq!(chain.iter().filter(|m| **m == said).count(), 1, "{chain:?}");
    }
}
