//! Random values of the generator: a small seeded RNG per event, strings of random letters,
//! the `extra` padding and prices.

/// A splitmix64 generator. Each event gets its own, seeded from the run's seed and the event
/// id, so that any instance can generate any event without the ones before it.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of event `id` under `seed`.
    pub fn for_event(seed: u64, id: u64) -> Self {
        Self {
            state: mix(seed.wrapping_mul(GOLDEN) ^ mix(id.wrapping_add(GOLDEN))),
        }
    }

    /// The generator of a value that depends on `seed` and `key` only (a channel's url).
    pub fn for_key(seed: u64, domain: u64, key: u64) -> Self {
        Self::for_event(seed ^ mix(domain), key)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// A number in `[0, n)` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A double in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One of `items`, at random.
pub fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    let i = rng.below(items.len() as u64) as usize;
    items.get(i).copied().unwrap_or_default()
}

/// A string of 1 to `max_len - 1` characters: lowercase letters, and `special` one time in 13.
pub fn next_string(rng: &mut Rng, max_len: usize, special: char) -> String {
    let len = 1 + rng.below(max_len.saturating_sub(1).max(1) as u64) as usize;
    exact_string(rng, len, special)
}

/// A string of exactly `len` characters, as [`next_string`].
pub fn exact_string(rng: &mut Rng, len: usize, special: char) -> String {
    let mut out = String::with_capacity(len);
    push_string(rng, len, special, &mut out);
    out
}

/// Characters drawn from one 64-bit random number (169^6 < 2^45).
const CHARS_PER_DRAW: u32 = 6;

/// Appends `len` characters to `out`: each `special` with probability 1/13, else a lowercase
/// letter, uniformly (one draw from 169 values: 13 for `special`, 6 per letter). Several
/// characters come from one random number, each from the high part of its product with 169.
pub fn push_string(rng: &mut Rng, len: usize, special: char, out: &mut String) {
    let mut bits = 0u64;
    let mut left = 0;
    for _ in 0..len {
        if left == 0 {
            bits = rng.next_u64();
            left = CHARS_PER_DRAW;
        }
        let m = u128::from(bits) * 169;
        let v = (m >> 64) as u8;
        bits = m as u64;
        left -= 1;
        out.push(if v < 13 {
            special
        } else {
            char::from(b'a' + (v - 13) / 6)
        });
    }
}

/// The `extra` field of an event whose other fields count `current` bytes: on average it
/// brings the event to `average` bytes (uniform within ±20 % of the missing size).
pub fn next_extra(rng: &mut Rng, current: usize, average: usize) -> String {
    let mut out = String::new();
    push_extra(rng, current, average, &mut out);
    out
}

/// [`next_extra`], appended to `out`.
pub fn push_extra(rng: &mut Rng, current: usize, average: usize, out: &mut String) {
    if current > average {
        return;
    }
    let wanted = average - current;
    let delta = (wanted as f64 * 0.2).round() as usize;
    let min = wanted - delta;
    let len = if delta == 0 {
        min
    } else {
        min + rng.below(2 * delta as u64 + 1) as usize
    };
    push_string(rng, len, ' ', out);
}

/// A price in cents: `round(10^(U·6) · 100)` for `U` uniform in `[0, 1)`, so between 100 and
/// 100 000 000, log-uniformly.
pub fn next_price(rng: &mut Rng) -> i64 {
    (10f64.powf(rng.unit() * 6.0) * 100.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_have_the_lengths_asked_for() {
        let mut rng = Rng::for_event(1, 2);
        for _ in 0..1000 {
            let s = next_string(&mut rng, 20, ' ');
            assert!((1..20).contains(&s.len()), "{s:?}");
        }
        assert_eq!(exact_string(&mut rng, 17, '_').len(), 17);
    }

    #[test]
    fn characters_are_special_one_time_in_13_and_letters_uniformly_otherwise() {
        let mut rng = Rng::for_event(3, 9);
        let mut s = String::new();
        for _ in 0..10_000 {
            push_string(&mut rng, 34, '_', &mut s);
        }
        let n = s.len() as f64;
        let share = |c: char| s.chars().filter(|x| *x == c).count() as f64 / n;
        assert!((share('_') - 1.0 / 13.0).abs() < 0.003, "{}", share('_'));
        for c in 'a'..='z' {
            let expected = 12.0 / 13.0 / 26.0;
            assert!((share(c) - expected).abs() < 0.002, "{c}: {}", share(c));
        }
    }

    #[test]
    fn extra_tops_up_to_the_average() {
        let mut rng = Rng::for_event(3, 4);
        let n = 20_000;
        let total: usize = (0..n).map(|_| next_extra(&mut rng, 32, 100).len()).sum();
        let avg = total as f64 / n as f64;
        assert!((avg - 68.0).abs() < 0.5, "average {avg}");
        assert_eq!(next_extra(&mut rng, 300, 200), "");
    }

    #[test]
    fn prices_stay_within_one_dollar_and_a_million() {
        let mut rng = Rng::for_event(5, 6);
        for _ in 0..10_000 {
            let p = next_price(&mut rng);
            assert!((100..=100_000_000).contains(&p), "{p}");
        }
    }

    #[test]
    fn an_event_s_numbers_depend_on_seed_and_id() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_event(1, 7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::for_event(1, 7).next_u64(),
            Rng::for_event(2, 7).next_u64()
        );
        assert_ne!(
            Rng::for_event(1, 7).next_u64(),
            Rng::for_event(1, 8).next_u64()
        );
    }
}
