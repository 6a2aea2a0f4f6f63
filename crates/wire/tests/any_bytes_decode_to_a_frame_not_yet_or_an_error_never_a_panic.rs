//! The frame decoder against what a network can bring: every frame encodes and decodes to
//! itself, in one piece or split anywhere; random bytes, a valid frame with any byte changed,
//! and any prefix of one decode to a frame, "not yet", or an error — never a panic, and never
//! a frame that was not sent when the checksum covers the change.

use anduin_types::{Barrier, BarrierKind, ControlUpdate, Epoch};
use anduin_wire::{decode, encode, Frame, Hello, WireError, MAX_BODY};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "\\PC{0,4}"]
}

fn barrier() -> impl Strategy<Value = Barrier> {
    (
        any::<u64>(),
        prop_oneof![
            any::<bool>().prop_map(|full| BarrierKind::Checkpoint { full }),
            Just(BarrierKind::Stop),
            Just(BarrierKind::Control),
        ],
        prop::collection::vec(
            (
                any::<u64>(),
                text(),
                text(),
                text(),
                prop::collection::vec(any::<u32>(), 0..3),
            )
                .prop_map(|(seq, operator, param, value, onto)| ControlUpdate {
                    seq,
                    operator,
                    param,
                    value,
                    onto,
                }),
            0..3,
        ),
    )
        .prop_map(|(epoch, kind, control)| Barrier {
            epoch: Epoch(epoch),
            kind,
            control,
        })
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (
            any::<u16>(),
            text(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(
                    version,
                    query,
                    edge,
                    from_instance,
                    to_instance,
                    attempt,
                    from_epoch,
                    incarnation,
                )| {
                    Frame::Hello(Hello {
                        version,
                        query,
                        edge,
                        from_instance,
                        to_instance,
                        attempt,
                        from_epoch,
                        incarnation,
                    })
                }
            ),
        (any::<u64>(), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(seq, ipc)| Frame::Data { seq, ipc }),
        (any::<u64>(), any::<i64>()).prop_map(|(seq, ms)| Frame::Watermark { seq, ms }),
        (any::<u64>(), any::<bool>()).prop_map(|(seq, idle)| Frame::Idle { seq, idle }),
        (any::<u64>(), barrier()).prop_map(|(seq, barrier)| Frame::Barrier { seq, barrier }),
        any::<u64>().prop_map(|seq| Frame::End { seq }),
        any::<u64>().prop_map(|seq| Frame::Exhausted { seq }),
        any::<u64>().prop_map(|seq| Frame::GaveUp { seq }),
        any::<u32>().prop_map(|messages| Frame::Credit { messages }),
        text().prop_map(|reason| Frame::Refused { reason }),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|body| Frame::Message { body }),
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(last, chunk)| Frame::KeyGroups { last, chunk }),
        Just(Frame::KeyGroupsTaken),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_frame_comes_back_whole_and_in_any_split(f in frame(), g in frame(), cut in any::<prop::sample::Index>()) {
        let mut bytes = encode(&f).expect("encodes");
        let first = bytes.len();
        bytes.extend(encode(&g).expect("encodes"));
        let (back, used) = decode(&bytes).expect("decodes").expect("whole");
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(used, first);
        let (next, _) = decode(&bytes[used..]).expect("decodes").expect("whole");
        prop_assert_eq!(next, g);
        // Any prefix of the first frame is "not yet".
        let at = cut.index(first);
        prop_assert_eq!(decode(&bytes[..at]), Ok(None));
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode(&bytes);
        // With the magic and a known kind in front, the rest is still only a frame or an error.
        let mut framed = b"AN".to_vec();
        framed.extend(&bytes);
        let _ = decode(&framed);
    }

    #[test]
    fn a_changed_byte_is_an_error_or_not_yet_never_another_frame(
        f in frame(),
        at in any::<prop::sample::Index>(),
        xor in 1u8..=255,
    ) {
        let mut bytes = encode(&f).expect("encodes");
        let i = at.index(bytes.len());
        bytes[i] ^= xor;
        match decode(&bytes) {
            // A changed length can make it wait for more bytes.
            Ok(None) | Err(_) => {}
            Ok(Some((other, _))) => prop_assert!(false, "byte {} changed, yet decoded {:?}", i, other),
        }
    }
}

#[test]
fn errors_name_what_is_wrong() {
    let e = decode(b"GET / HTTP/1.1\r\n").expect_err("not anduin");
    assert!(matches!(e, WireError::BadMagic(_)), "{e}");
    assert!(e
        .to_string()
        .contains("does not speak anduin's wire protocol"));
    assert_eq!(decode(b"G"), Ok(None), "one byte: not yet");
    let unknown = [b'A', b'N', 99, 0, 0, 0, 0, 0];
    assert_eq!(decode(&unknown), Err(WireError::UnknownKind(99)));
    let flags = [b'A', b'N', 6, 1, 0, 0, 0, 0];
    assert!(matches!(
        decode(&flags),
        Err(WireError::UnknownFlags { .. })
    ));
    let huge = [b'A', b'N', 2, 0, 0xff, 0xff, 0xff, 0x7f];
    let e = decode(&huge).expect_err("too large");
    assert!(e.to_string().contains("larger than the limit"), "{e}");
    // A frame whose body is shorter than its kind needs, with a right checksum.
    let mut end = encode(&Frame::End { seq: 7 }).expect("encodes");
    end[4] = 4;
    end.truncate(8 + 4);
    let crc = crc_of(&end[2..12]);
    end.extend(crc);
    let e = decode(&end).expect_err("short body");
    assert!(
        e.to_string()
            .contains("malformed end frame: it ends inside its number"),
        "{e}"
    );
    let big = Frame::Data {
        seq: 1,
        ipc: vec![0; MAX_BODY],
    };
    assert!(matches!(encode(&big), Err(WireError::TooLarge { .. })));
}

/// The CRC32 of `bytes` (a frame's kind, flags, length and body), as the frame's trailer.
fn crc_of(bytes: &[u8]) -> [u8; 4] {
    // The IEEE CRC-32, bit by bit (the crate's test does not lean on the codec's own).
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    (!crc).to_le_bytes()
}
