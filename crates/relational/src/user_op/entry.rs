//! The bytes of one key's entry in the state backend: a flags byte (bit 0: a timer follows,
//! 8 bytes little-endian), then the user's state as its engine wrote it.

/// What the operator keeps of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The user's state.
    pub state: Vec<u8>,
    /// When the key's timer is due, if it has one.
    pub timer: Option<i64>,
}

const TIMER: u8 = 1;

/// The entry of `k`.
pub(crate) fn encode(k: &Kept) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + k.state.len());
    match k.timer {
        Some(t) => {
            out.push(TIMER);
            out.extend_from_slice(&t.to_le_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(&k.state);
    out
}

/// What an entry holds; `None` if the bytes are not one.
pub(crate) fn decode(bytes: &[u8]) -> Option<Kept> {
    let (&flags, rest) = bytes.split_first()?;
    let (timer, state) = match flags {
        0 => (None, rest),
        TIMER => {
            let (t, state) = rest.split_first_chunk::<8>()?;
            (Some(i64::from_le_bytes(*t)), state)
        }
        _ => return None,
    };
    Some(Kept {
        state: state.to_vec(),
        timer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_round_trips_with_or_without_its_timer_and_a_bad_entry_is_caught() {
        for k in [
            Kept {
                state: b"{\"n\":1}".to_vec(),
                timer: Some(-7),
            },
            Kept {
                state: vec![0, 1, 2],
                timer: None,
            },
        ] {
            assert_eq!(decode(&encode(&k)), Some(k));
        }
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[TIMER, 1, 2]), None, "a timer cut short");
        assert_eq!(decode(&[9, 1]), None, "unknown flags");
    }
}
