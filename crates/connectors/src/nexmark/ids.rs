//! The generator's configuration and its pure functions of the event id: which kind an event
//! is, its event time, and the person and auction ids it may refer to.
//!
//! Everything here follows the nexmark-flink `GeneratorConfig` and the id helpers of its
//! person and auction generators, so that an event is a function of its id alone.

/// Proportions of the three kinds, out of [`PROPORTION_DENOMINATOR`] consecutive event ids.
pub const PERSON_PROPORTION: u64 = 1;
/// See [`PERSON_PROPORTION`].
pub const AUCTION_PROPORTION: u64 = 3;
/// See [`PERSON_PROPORTION`].
pub const BID_PROPORTION: u64 = 46;
/// The sum of the proportions.
pub const PROPORTION_DENOMINATOR: u64 = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

/// The id of the first person.
pub const FIRST_PERSON_ID: i64 = 1000;
/// The id of the first auction.
pub const FIRST_AUCTION_ID: i64 = 1000;
/// The id of the first category.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// How many categories there are.
pub const NUM_CATEGORIES: u64 = 5;

/// Auctions a bid may refer to, besides the newest: the last this many.
pub const NUM_IN_FLIGHT_AUCTIONS: u64 = 100;
/// People a new auction or bid may refer to: the last this many.
pub const NUM_ACTIVE_PEOPLE: u64 = 1000;
/// How far past the newest person a reference may reach (a person "in flight").
pub const PERSON_ID_LEAD: u64 = 10;
/// How far past the newest auction a reference may reach (an auction "in flight").
pub const AUCTION_ID_LEAD: u64 = 10;

/// Size of the batches of "hot" auctions, sellers and bidders.
pub const HOT_BATCH: u64 = 100;
/// One bid in this many goes to a random auction; the others to the current hot one.
pub const HOT_AUCTION_RATIO: u64 = 2;
/// One auction in this many has a random seller; the others the current hot one.
pub const HOT_SELLER_RATIO: u64 = 4;
/// One bid in this many has a random bidder; the others the current hot one.
pub const HOT_BIDDER_RATIO: u64 = 4;

/// The average sizes, in the reference's byte count, that the `extra` field tops up to.
pub const AVG_PERSON_BYTES: usize = 200;
/// See [`AVG_PERSON_BYTES`].
pub const AVG_AUCTION_BYTES: usize = 500;
/// See [`AVG_PERSON_BYTES`].
pub const AVG_BID_BYTES: usize = 100;

/// The event-time default: 2024-01-01T00:00:00Z in epoch milliseconds.
pub const DEFAULT_FIRST_EVENT_TIME: i64 = 1_704_067_200_000;
/// The default rate, in events per second of event time (the reference's default).
pub const DEFAULT_RATE: f64 = 10_000.0;

/// The three kinds of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A new person.
    Person,
    /// A new auction.
    Auction,
    /// A bid on an auction.
    Bid,
}

impl Kind {
    /// The kind of event `id`.
    pub fn of(id: u64) -> Self {
        match id % PROPORTION_DENOMINATOR {
            r if r < PERSON_PROPORTION => Kind::Person,
            r if r < PERSON_PROPORTION + AUCTION_PROPORTION => Kind::Auction,
            _ => Kind::Bid,
        }
    }

    /// The kind an output of this name carries.
    pub fn from_output(name: &str) -> Option<Self> {
        match name {
            "person" => Some(Kind::Person),
            "auction" => Some(Kind::Auction),
            "bid" => Some(Kind::Bid),
            _ => None,
        }
    }
}

/// What a run generates: the same config gives the same events on any instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Mixed into every event's random numbers.
    pub seed: u64,
    /// Events per second of event time.
    pub rate: f64,
    /// The event time of event number 0, in epoch milliseconds.
    pub first_event_time: i64,
    /// The id of event number 0.
    pub first_event_id: u64,
    /// Events are shuffled within consecutive groups of this many (1: in order).
    pub out_of_order_group_size: u64,
}

impl Config {
    /// The event number at position `n` of the stream, after shuffling within its
    /// out-of-order group (953 is prime, so this permutes a group unless its size is a
    /// multiple of 953, which binding rejects).
    pub fn adjusted_number(&self, n: u64) -> u64 {
        let g = self.out_of_order_group_size.max(1);
        (n / g) * g + (n.wrapping_mul(953)) % g
    }

    /// The id of the event at position `n` of the stream.
    pub fn event_id(&self, n: u64) -> u64 {
        self.first_event_id + self.adjusted_number(n)
    }

    /// The event time of event number `number` (not shuffled), in epoch milliseconds.
    pub fn timestamp_of_number(&self, number: u64) -> i64 {
        let delay_us = 1_000_000.0 / self.rate;
        // `as` saturates; the sum too, at the end of time.
        self.first_event_time
            .saturating_add(((number as f64 * delay_us) / 1000.0).floor() as i64)
    }

    /// The event time of event `id`.
    pub fn timestamp_of_id(&self, id: u64) -> i64 {
        self.timestamp_of_number(id - self.first_event_id)
    }
}

/// The 0-based id of the last person created at or before event `id`.
pub fn last_base0_person_id(id: u64) -> u64 {
    let epoch = id / PROPORTION_DENOMINATOR;
    let mut offset = id % PROPORTION_DENOMINATOR;
    if offset >= PERSON_PROPORTION {
        offset = PERSON_PROPORTION - 1;
    }
    epoch * PERSON_PROPORTION + offset
}

/// The 0-based id of the last auction created at or before event `id` (0 before the first).
pub fn last_base0_auction_id(id: u64) -> u64 {
    let mut epoch = id / PROPORTION_DENOMINATOR;
    let mut offset = id % PROPORTION_DENOMINATOR;
    if offset < PERSON_PROPORTION {
        // A person event: the last auction is that of the previous epoch.
        if epoch == 0 {
            return 0;
        }
        epoch -= 1;
        offset = AUCTION_PROPORTION - 1;
    } else if offset >= PERSON_PROPORTION + AUCTION_PROPORTION {
        offset = AUCTION_PROPORTION - 1;
    } else {
        offset -= PERSON_PROPORTION;
    }
    epoch * AUCTION_PROPORTION + offset
}

/// A random 0-based person id among the active people at event `id`, or slightly ahead.
pub fn next_base0_person_id(id: u64, rng: &mut super::strings::Rng) -> u64 {
    let num_people = last_base0_person_id(id) + 1;
    let active = num_people.min(NUM_ACTIVE_PEOPLE);
    let n = rng.below(active + PERSON_ID_LEAD);
    num_people - active + n
}

/// A random 0-based auction id among the auctions in flight at event `id`, or slightly ahead.
pub fn next_base0_auction_id(id: u64, rng: &mut super::strings::Rng) -> u64 {
    let max = last_base0_auction_id(id);
    let min = max.saturating_sub(NUM_IN_FLIGHT_AUCTIONS);
    min + rng.below(max - min + 1 + AUCTION_ID_LEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(group: u64) -> Config {
        Config {
            seed: 1,
            rate: 1000.0,
            first_event_time: 0,
            first_event_id: 0,
            out_of_order_group_size: group,
        }
    }

    #[test]
    fn kinds_come_in_proportions_1_3_46() {
        let kinds: Vec<Kind> = (0..50).map(Kind::of).collect();
        assert_eq!(kinds[0], Kind::Person);
        assert!(kinds[1..4].iter().all(|k| *k == Kind::Auction));
        assert!(kinds[4..].iter().all(|k| *k == Kind::Bid));
    }

    #[test]
    fn last_ids_count_the_events_of_their_kind_so_far() {
        let (mut people, mut auctions) = (0u64, 0u64);
        for id in 0..10_000 {
            match Kind::of(id) {
                Kind::Person => {
                    assert_eq!(last_base0_person_id(id), people);
                    people += 1;
                }
                Kind::Auction => {
                    assert_eq!(last_base0_auction_id(id), auctions);
                    auctions += 1;
                }
                Kind::Bid => {
                    assert_eq!(last_base0_person_id(id) + 1, people);
                    assert_eq!(last_base0_auction_id(id) + 1, auctions);
                }
            }
        }
    }

    #[test]
    fn out_of_order_groups_permute_their_numbers() {
        let c = config(10);
        let mut got: Vec<u64> = (0..70).map(|n| c.adjusted_number(n)).collect();
        assert_ne!(got, (0..70).collect::<Vec<_>>());
        got.sort_unstable();
        assert_eq!(got, (0..70).collect::<Vec<_>>());
        assert_eq!(config(1).adjusted_number(12), 12);
    }

    #[test]
    fn event_time_follows_the_rate() {
        let c = config(1);
        assert_eq!(c.timestamp_of_number(0), 0);
        assert_eq!(c.timestamp_of_number(1000), 1000);
        assert_eq!(c.timestamp_of_number(2500), 2500);
    }
}
