//! anduin's wire format: the frames that two of its processes exchange on one network edge
//! (a channel between a task instance on one worker and one on another), their encoding, and
//! the check of the handshake that opens an edge.
//!
//! Every frame is `magic "AN" · kind (u8) · flags (u8, 0) · body length (u32 LE) · body ·
//! CRC32 of everything after the magic (u32 LE)`; numbers in bodies are little-endian, strings a u32 length and
//! UTF-8 bytes. The decoder is sans-I/O ([`decode`] takes what has been read so far and says
//! whether a whole frame is there): whatever the bytes, it answers a frame, "not yet", or a
//! [`WireError`] naming what is wrong — it never panics and never allocates more than the
//! frame's declared, bounded size.
//!
//! [`FrameReader`] and [`write_frame`] carry frames over any byte stream. This crate is not the
//! network: no sockets, no flow control, no Arrow (a data frame carries an Arrow IPC message as
//! opaque bytes, encoded and decoded by the runtime).

pub mod auth;
mod codec;
mod frame;
mod hello;
mod io;

pub use codec::{decode, encode, WireError, MAX_BODY};
pub use frame::Frame;
pub use hello::{check_hello, Expected, Hello, Refusal, PROTOCOL_VERSION};
pub use io::{write_frame, FrameError, FrameReader};
