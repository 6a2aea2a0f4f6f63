//! Frames to bytes and back (the layout is in the crate's documentation).

use anduin_types::{Barrier, BarrierKind, ControlUpdate, Epoch};

use crate::frame::Frame;
use crate::hello::Hello;

/// The largest body a frame may declare (a data frame's IPC message included): 64 MiB.
pub const MAX_BODY: usize = 64 << 20;

const MAGIC: [u8; 2] = *b"AN";
/// Magic, kind, flags, body length.
const HEADER: usize = 8;
const TRAILER: usize = 4;

/// Why bytes are not a frame, or a frame cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes do not start with the magic: the peer does not speak anduin's protocol.
    #[error("the peer does not speak anduin's wire protocol (the frame starts with {0:02x?}, not \"AN\")")]
    BadMagic([u8; 2]),
    /// A kind byte this build does not know.
    #[error("unknown frame kind {0}: the peer runs another version of anduin")]
    UnknownKind(u8),
    /// Flags this build does not know.
    #[error("a {kind} frame with flags {flags:#04x}: the peer runs another version of anduin")]
    UnknownFlags {
        /// The frame's kind.
        kind: &'static str,
        /// The flags.
        flags: u8,
    },
    /// A frame larger than [`MAX_BODY`].
    #[error("a {kind} frame of {len} bytes is larger than the limit of {MAX_BODY} bytes")]
    TooLarge {
        /// The frame's kind.
        kind: &'static str,
        /// Its declared length.
        len: usize,
    },
    /// The body does not match its checksum: damaged on the way.
    #[error("a {kind} frame is damaged: its checksum does not match")]
    Checksum {
        /// The frame's kind.
        kind: &'static str,
    },
    /// The body is not what its kind says.
    #[error("a malformed {kind} frame: {why}")]
    Malformed {
        /// The frame's kind.
        kind: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A frame that cannot be encoded (a barrier of a kind the protocol does not carry).
    #[error("cannot send {0}")]
    Unencodable(String),
}

/// The bytes of `frame`.
pub fn encode(frame: &Frame) -> Result<Vec<u8>, WireError> {
    let mut body = Vec::new();
    match frame {
        Frame::Hello(h) => {
            put_u16(&mut body, h.version);
            put_str(&mut body, &h.query);
            put_u32(&mut body, h.edge);
            put_u32(&mut body, h.from_instance);
            put_u32(&mut body, h.to_instance);
            put_u64(&mut body, h.attempt);
            put_u64(&mut body, h.from_epoch);
            put_u64(&mut body, h.incarnation);
        }
        Frame::Data { seq, ipc } => {
            put_u64(&mut body, *seq);
            body.extend_from_slice(ipc);
        }
        Frame::Watermark { seq, ms } => {
            put_u64(&mut body, *seq);
            body.extend_from_slice(&ms.to_le_bytes());
        }
        Frame::Idle { seq, idle } => {
            put_u64(&mut body, *seq);
            body.push(u8::from(*idle));
        }
        Frame::Barrier { seq, barrier } => {
            put_u64(&mut body, *seq);
            put_barrier(&mut body, barrier)?;
        }
        Frame::End { seq } | Frame::Exhausted { seq } | Frame::GaveUp { seq } => {
            put_u64(&mut body, *seq)
        }
        Frame::Credit { messages } => put_u32(&mut body, *messages),
        Frame::Refused { reason } => put_str(&mut body, reason),
        Frame::Message { body: m } => body.extend_from_slice(m),
        Frame::KeyGroups { last, chunk } => {
            body.push(u8::from(*last));
            body.extend_from_slice(chunk);
        }
        Frame::KeyGroupsTaken => {}
    }
    if body.len() > MAX_BODY {
        return Err(WireError::TooLarge {
            kind: Frame::kind_name(frame.kind()),
            len: body.len(),
        });
    }
    let mut out = Vec::with_capacity(HEADER + body.len() + TRAILER);
    out.extend_from_slice(&MAGIC);
    out.push(frame.kind());
    out.push(0);
    put_u32(
        &mut out,
        u32::try_from(body.len()).expect("bounded by MAX_BODY"),
    );
    out.extend_from_slice(&body);
    let crc = checksum(&out[2..HEADER], &body);
    put_u32(&mut out, crc);
    Ok(out)
}

/// The first frame of `buf` and how many bytes it took; `None` while `buf` holds only part of
/// it (read more and call again).
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, WireError> {
    let Some(header) = buf.get(..HEADER) else {
        // Refuse a wrong magic as soon as it is there.
        if let [a, b, ..] = buf {
            if [*a, *b] != MAGIC {
                return Err(WireError::BadMagic([*a, *b]));
            }
        }
        return Ok(None);
    };
    let magic = [header[0], header[1]];
    if magic != MAGIC {
        return Err(WireError::BadMagic(magic));
    }
    let kind = header[2];
    let name = Frame::kind_name(kind);
    if name == "unknown" {
        return Err(WireError::UnknownKind(kind));
    }
    if header[3] != 0 {
        return Err(WireError::UnknownFlags {
            kind: name,
            flags: header[3],
        });
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len > MAX_BODY {
        return Err(WireError::TooLarge { kind: name, len });
    }
    let total = HEADER + len + TRAILER;
    let Some(whole) = buf.get(..total) else {
        return Ok(None);
    };
    let body = &whole[HEADER..HEADER + len];
    let crc = &whole[HEADER + len..];
    if u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) != checksum(&header[2..], body) {
        return Err(WireError::Checksum { kind: name });
    }
    let malformed = |why: String| WireError::Malformed { kind: name, why };
    let mut r = Reader(body);
    let frame = read_body(kind, &mut r).map_err(|s| malformed(s.0))?;
    if !r.0.is_empty() {
        return Err(malformed(format!("{} bytes after its end", r.0.len())));
    }
    Ok(Some((frame, total)))
}

/// The CRC32 of a frame's kind, flags, length and body: a frame changed anywhere after its
/// magic is refused, not taken for another one.
fn checksum(header: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(body);
    h.finalize()
}

/// The frame of kind `kind` (a known one) in a body.
fn read_body(kind: u8, r: &mut Reader<'_>) -> Result<Frame, Short> {
    Ok(match kind {
        1 => Frame::Hello(Hello {
            version: r.u16()?,
            query: r.str()?,
            edge: r.u32()?,
            from_instance: r.u32()?,
            to_instance: r.u32()?,
            attempt: r.u64()?,
            from_epoch: r.u64()?,
            incarnation: r.u64()?,
        }),
        2 => Frame::Data {
            seq: r.u64()?,
            ipc: r.rest().to_vec(),
        },
        3 => Frame::Watermark {
            seq: r.u64()?,
            ms: i64::from_le_bytes(r.u64()?.to_le_bytes()),
        },
        4 => Frame::Idle {
            seq: r.u64()?,
            idle: match r.u8()? {
                0 => false,
                1 => true,
                b => return Err(Short(format!("idle is {b}, not 0 or 1"))),
            },
        },
        5 => Frame::Barrier {
            seq: r.u64()?,
            barrier: r.barrier()?,
        },
        6 => Frame::End { seq: r.u64()? },
        7 => Frame::Credit { messages: r.u32()? },
        8 => Frame::Refused { reason: r.str()? },
        10 => Frame::KeyGroups {
            last: match r.u8()? {
                0 => false,
                1 => true,
                b => return Err(Short(format!("last is {b}, not 0 or 1"))),
            },
            chunk: r.rest().to_vec(),
        },
        11 => Frame::KeyGroupsTaken,
        12 => Frame::Exhausted { seq: r.u64()? },
        13 => Frame::GaveUp { seq: r.u64()? },
        _ => Frame::Message {
            body: r.rest().to_vec(),
        },
    })
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // A string longer than a frame makes the frame too large, refused by `encode`.
    put_u32(out, u32::try_from(s.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(s.as_bytes());
}

fn put_barrier(out: &mut Vec<u8>, b: &Barrier) -> Result<(), WireError> {
    put_u64(out, b.epoch.0);
    match &b.kind {
        BarrierKind::Checkpoint { full } => out.extend_from_slice(&[0, u8::from(*full)]),
        BarrierKind::Stop => out.extend_from_slice(&[1, 0]),
        BarrierKind::Control => out.extend_from_slice(&[2, 0]),
        other => {
            return Err(WireError::Unencodable(format!(
                "a barrier of kind {other:?}"
            )))
        }
    }
    put_u32(out, u32::try_from(b.control.len()).unwrap_or(u32::MAX));
    for u in &b.control {
        put_u64(out, u.seq);
        put_str(out, &u.operator);
        put_str(out, &u.param);
        put_str(out, &u.value);
        put_u32(out, u32::try_from(u.onto.len()).unwrap_or(u32::MAX));
        for w in &u.onto {
            put_u32(out, *w);
        }
    }
    Ok(())
}

/// Reads a body; every read checks that the bytes are there.
struct Reader<'a>(&'a [u8]);

/// Why a body is not what its kind says, for [`WireError::Malformed`].
struct Short(String);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Short> {
        if self.0.len() < n {
            return Err(Short(format!(
                "it ends inside its {what} ({} of {n} bytes)",
                self.0.len()
            )));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1, "byte")?[0])
    }

    fn u16(&mut self) -> Result<u16, Short> {
        let b = self.take(2, "number")?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, Short> {
        let b = self.take(4, "number")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, Short> {
        let b = self.take(8, "number")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<String, Short> {
        let len = self.u32()? as usize;
        let b = self.take(len, "text")?;
        String::from_utf8(b.to_vec()).map_err(|_| Short("a text that is not UTF-8".into()))
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn barrier(&mut self) -> Result<Barrier, Short> {
        let epoch = Epoch(self.u64()?);
        let (kind, full) = (self.u8()?, self.u8()?);
        let kind = match (kind, full) {
            (0, 0 | 1) => BarrierKind::Checkpoint { full: full == 1 },
            (1, 0) => BarrierKind::Stop,
            (2, 0) => BarrierKind::Control,
            _ => return Err(Short(format!("barrier kind {kind}/{full}"))),
        };
        let n = self.u32()? as usize;
        // Each update takes at least 24 bytes: a count beyond that is a lie, not an
        // allocation.
        let mut control = Vec::with_capacity(n.min(self.0.len() / 24));
        for _ in 0..n {
            let (seq, operator, param, value) =
                (self.u64()?, self.str()?, self.str()?, self.str()?);
            let workers = self.u32()? as usize;
            // Four bytes each, as above.
            let mut onto = Vec::with_capacity(workers.min(self.0.len() / 4));
            for _ in 0..workers {
                onto.push(self.u32()?);
            }
            control.push(ControlUpdate {
                seq,
                operator,
                param,
                value,
                onto,
            });
        }
        Ok(Barrier {
            epoch,
            kind,
            control,
        })
    }
}
