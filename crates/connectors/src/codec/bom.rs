//! Skipping a UTF-8 byte-order mark at the start of a file, even when the file's first bytes
//! arrive in several tiny chunks.

use std::borrow::Cow;

const BOM: &[u8; 3] = b"\xef\xbb\xbf";

/// Strips a leading UTF-8 BOM from a byte stream fed in chunks.
#[derive(Debug, Default)]
pub(crate) struct BomSkipper {
    /// Bytes held back because they are a proper prefix of the BOM.
    held: Vec<u8>,
    /// Whether the start of the file has been decided.
    done: bool,
}

/// What to do with a chunk after BOM handling.
pub(crate) enum BomStep<'a> {
    /// Not enough bytes yet to tell whether the file starts with a BOM; nothing to decode.
    Wait,
    /// Decode these bytes; `skipped` BOM bytes precede them in the file.
    Pass {
        /// The bytes to decode.
        bytes: Cow<'a, [u8]>,
        /// Number of file bytes dropped before `bytes` (3 for a BOM, else 0).
        skipped: u64,
    },
}

impl BomSkipper {
    /// Processes the next chunk of the file.
    pub(crate) fn feed<'a>(&mut self, chunk: &'a [u8]) -> BomStep<'a> {
        if self.done {
            return BomStep::Pass {
                bytes: Cow::Borrowed(chunk),
                skipped: 0,
            };
        }
        let rest_of_bom = &BOM[self.held.len()..];
        if chunk.len() < rest_of_bom.len() {
            if rest_of_bom.starts_with(chunk) {
                self.held.extend_from_slice(chunk);
                return BomStep::Wait;
            }
        } else if chunk.starts_with(rest_of_bom) {
            self.done = true;
            self.held.clear();
            return BomStep::Pass {
                bytes: Cow::Borrowed(&chunk[rest_of_bom.len()..]),
                skipped: BOM.len() as u64,
            };
        }
        self.done = true;
        if self.held.is_empty() {
            BomStep::Pass {
                bytes: Cow::Borrowed(chunk),
                skipped: 0,
            }
        } else {
            let mut bytes = std::mem::take(&mut self.held);
            bytes.extend_from_slice(chunk);
            BomStep::Pass {
                bytes: Cow::Owned(bytes),
                skipped: 0,
            }
        }
    }

    /// End of file: bytes held back as a possible BOM prefix turn out to be data.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.done = true;
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> (Vec<u8>, u64) {
        let mut s = BomSkipper::default();
        let (mut out, mut skipped) = (Vec::new(), 0);
        for c in chunks {
            if let BomStep::Pass { bytes, skipped: k } = s.feed(c) {
                out.extend_from_slice(&bytes);
                skipped += k;
            }
        }
        out.extend(s.finish());
        (out, skipped)
    }

    #[test]
    fn a_bom_split_over_chunks_is_skipped() {
        assert_eq!(run(&[b"\xef", b"\xbb", b"\xbfab"]), (b"ab".to_vec(), 3));
        assert_eq!(run(&[b"\xef\xbb\xbfab"]), (b"ab".to_vec(), 3));
    }

    #[test]
    fn bytes_that_only_start_like_a_bom_are_kept() {
        assert_eq!(run(&[b"\xef", b"\xbbx"]), (b"\xef\xbbx".to_vec(), 0));
        assert_eq!(run(&[b"\xef"]), (b"\xef".to_vec(), 0));
        assert_eq!(
            run(&[b"ab", b"\xef\xbb\xbf"]),
            (b"ab\xef\xbb\xbf".to_vec(), 0)
        );
    }
}
