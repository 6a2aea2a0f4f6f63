//! The `nexmark` source, bound from a query as `anduin run` binds it, follows the rules of
//! the nexmark generator: kinds by id, ids in range, references to existing or in-flight
//! people and auctions, prices, hot channels, average sizes, event times; and it is
//! deterministic and resumes from a checkpoint exactly where it stopped.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use anduin_connectors::nexmark::ids;
use anduin_graph::check;
use anduin_operator_api::{OperatorError, RestoreIn, SnapshotOut, Source, SourcePoll};
use anduin_registry::BuiltinCatalog;
use anduin_types::{Epoch, SnapshotKind};
use arrow::array::{Array, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::record_batch::RecordBatch;

/// A `nexmark` source with `params` whose output is named `kind`.
fn source(kind: &str, params: &str) -> Box<dyn Source> {
    let src = format!(
        r#"operator name = "nx", type = "nexmark" {{
  {params}
  output name = "{kind}"
}}
operator name = "d", type = "discard" {{ input name = "{kind}" }}"#
    );
    common::source(&src, "nx")
}

/// Polls `s` in batches of `max` rows until it is exhausted or `limit` batches came.
fn drain(s: &mut dyn Source, max: usize, limit: usize) -> Vec<RecordBatch> {
    let far = Instant::now() + Duration::from_secs(60);
    let mut out = vec![];
    while out.len() < limit {
        match s.poll(max, far).expect("polls") {
            SourcePoll::Batch(b) => out.push(b),
            SourcePoll::Idle => {}
            SourcePoll::Exhausted => break,
        }
    }
    out
}

fn all(kind: &str, params: &str) -> RecordBatch {
    let mut s = source(kind, params);
    let batches = drain(s.as_mut(), 1000, usize::MAX);
    let schema = batches.first().expect("some rows").schema();
    arrow::compute::concat_batches(&schema, &batches).expect("concat")
}

fn ints(b: &RecordBatch, col: &str) -> Vec<i64> {
    let c = b.column_by_name(col).expect("column");
    if let Some(t) = c.as_any().downcast_ref::<TimestampMillisecondArray>() {
        return t.values().to_vec();
    }
    c.as_any()
        .downcast_ref::<Int64Array>()
        .expect("ints")
        .values()
        .to_vec()
}

fn strings(b: &RecordBatch, col: &str) -> Vec<String> {
    let c = b.column_by_name(col).expect("column");
    let s = c.as_any().downcast_ref::<StringArray>().expect("strings");
    (0..s.len()).map(|i| s.value(i).to_string()).collect()
}

/// With this rate and first event time, an event's time in ms is its id.
const TIME_IS_ID: &str = "param rate = 1000\n param first_event_time = 0";

#[test]
fn kinds_follow_the_event_id_in_proportions_1_3_46_with_ids_from_1000() {
    let p = "param events = 5000";
    let people = all("person", p);
    let auctions = all("auction", p);
    let bids = all("bid", p);
    assert_eq!(
        (people.num_rows(), auctions.num_rows(), bids.num_rows()),
        (100, 300, 4600)
    );
    assert_eq!(ints(&people, "id"), (1000..1100).collect::<Vec<_>>());
    assert_eq!(ints(&auctions, "id"), (1000..1300).collect::<Vec<_>>());
}

#[test]
fn references_point_at_existing_or_in_flight_people_and_auctions() {
    let p = format!("param events = 200000\n {TIME_IS_ID}");
    let bids = all("bid", &p);
    let ids_of = ints(&bids, "dateTime");
    for ((id, auction), bidder) in ids_of
        .iter()
        .zip(ints(&bids, "auction"))
        .zip(ints(&bids, "bidder"))
    {
        let id = *id as u64;
        assert_eq!(ids::Kind::of(id), ids::Kind::Bid);
        let last_a = ids::last_base0_auction_id(id) as i64;
        let a = auction - ids::FIRST_AUCTION_ID;
        assert!(
            (last_a - 100).max(0) <= a && a <= last_a + 10,
            "bid {id}: auction {auction}, last {last_a}"
        );
        let last_p = ids::last_base0_person_id(id) as i64;
        let b = bidder - ids::FIRST_PERSON_ID;
        assert!(
            (last_p + 1 - 1000).max(0) <= b && b <= last_p + 10,
            "bid {id}: bidder {bidder}, last person {last_p}"
        );
    }
    let auctions = all("auction", &p);
    let col = |c: &str| ints(&auctions, c);
    let (times, sellers, categories) = (col("dateTime"), col("seller"), col("category"));
    let (reserves, initial, expires) = (col("reserve"), col("initialBid"), col("expires"));
    for (i, id) in times.iter().enumerate() {
        let last_p = ids::last_base0_person_id(*id as u64) as i64;
        let s = sellers[i] - ids::FIRST_PERSON_ID;
        assert!((last_p + 1 - 1000).max(0) <= s && s <= last_p + 10);
        assert!(
            (10..15).contains(&categories[i]),
            "category {}",
            categories[i]
        );
        assert!(reserves[i] > initial[i]);
        assert!(expires[i] > *id);
    }
}

#[test]
fn prices_are_log_uniform_between_one_dollar_and_a_million_and_hot_things_are_hot() {
    let bids = all("bid", "param events = 100000");
    let prices = ints(&bids, "price");
    assert!(prices.iter().all(|p| (100..=100_000_000).contains(p)));
    // round(10^(6U) * 100) < 10 000 when U < 1/3.
    let low = prices.iter().filter(|p| **p < 10_000).count() as f64 / prices.len() as f64;
    assert!((low - 1.0 / 3.0).abs() < 0.02, "share below 10 000: {low}");

    let channels = strings(&bids, "channel");
    let urls = strings(&bids, "url");
    let hot = ["Google", "Facebook", "Baidu", "Apple"];
    let n_hot = channels
        .iter()
        .filter(|c| hot.contains(&c.as_str()))
        .count();
    let share = n_hot as f64 / channels.len() as f64;
    assert!((share - 0.5).abs() < 0.02, "hot channel share {share}");
    for (c, u) in channels.iter().zip(&urls) {
        assert!(
            hot.contains(&c.as_str()) || c.starts_with("channel-"),
            "{c}"
        );
        assert!(u.starts_with("https://www.nexmark.com/"), "{u}");
    }
    // Half the bids (plus the random ones that land there) go to the current hot auction.
    let auctions = ints(&bids, "auction");
    let on_hot = auctions
        .iter()
        .filter(|a| (*a - ids::FIRST_AUCTION_ID) % 100 == 0)
        .count() as f64
        / auctions.len() as f64;
    assert!((0.48..0.56).contains(&on_hot), "hot auction share {on_hot}");
}

#[test]
fn the_extra_field_brings_each_kind_to_its_average_size() {
    let p = "param events = 100000";
    let len = |b: &RecordBatch, c: &str| -> Vec<usize> {
        strings(b, c).iter().map(String::len).collect()
    };
    let avg = |sizes: Vec<usize>| sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;

    // Sizes counted as the reference counts them: 8 bytes per number, strings by length.
    let people = all("person", p);
    let mut sizes = vec![8; people.num_rows()];
    for c in [
        "name",
        "emailAddress",
        "creditCard",
        "city",
        "state",
        "extra",
    ] {
        for (s, l) in sizes.iter_mut().zip(len(&people, c)) {
            *s += l;
        }
    }
    let person = avg(sizes);
    let auctions = all("auction", p);
    let mut sizes = vec![48; auctions.num_rows()];
    for c in ["itemName", "description", "extra"] {
        for (s, l) in sizes.iter_mut().zip(len(&auctions, c)) {
            *s += l;
        }
    }
    let auction = avg(sizes);
    let bid = 32.0 + avg(len(&all("bid", p), "extra"));
    for (got, want) in [(person, 200.0), (auction, 500.0), (bid, 100.0)] {
        assert!(
            (got / want - 1.0).abs() < 0.03,
            "average {got}, want {want}"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_rows_and_another_seed_others() {
    let a = all("bid", "param events = 3000\n param seed = 7");
    let mut s = source("bid", "param events = 3000\n param seed = 7");
    let batches = drain(s.as_mut(), 13, usize::MAX);
    let b = arrow::compute::concat_batches(&a.schema(), &batches).expect("concat");
    assert_eq!(a, b);
    let c = all("bid", "param events = 3000\n param seed = 8");
    assert_ne!(a, c);
    assert_eq!(ints(&a, "dateTime"), ints(&c, "dateTime"));
}

/// Keeps what a source puts inline.
struct Inline(Option<serde_json::Value>);

impl SnapshotOut for Inline {
    fn epoch(&self) -> Epoch {
        Epoch(1)
    }
    fn full_due(&self) -> bool {
        true
    }
    fn inline(&mut self, value: serde_json::Value) {
        self.0 = Some(value);
    }
    fn stream(&mut self, _kind: SnapshotKind) -> Result<&mut dyn Write, OperatorError> {
        Err(OperatorError::Execution {
            operator: "test".into(),
            message: "no streams".into(),
        })
    }
}

#[test]
fn a_restored_source_continues_with_exactly_the_rows_of_an_uninterrupted_run() {
    let p = "param events = 20000\n param out_of_order_group_size = 10";
    for kind in ["person", "auction", "bid"] {
        let whole = all(kind, p);
        let mut first = source(kind, p);
        let mut rows = drain(first.as_mut(), 7, 5);
        let mut out = Inline(None);
        first.snapshot(&mut out).expect("snapshots");
        drop(first);
        let mut second = source(kind, p);
        second
            .restore(RestoreIn {
                epoch: Epoch(1),
                inline: out.0,
                files: vec![],
            })
            .expect("restores");
        rows.extend(drain(second.as_mut(), 1000, usize::MAX));
        let resumed = arrow::compute::concat_batches(&whole.schema(), &rows).expect("concat");
        assert_eq!(whole, resumed, "{kind}");
    }
}

#[test]
fn event_times_only_go_back_within_an_out_of_order_group() {
    let in_order = ints(
        &all("bid", &format!("param events = 5000\n {TIME_IS_ID}")),
        "dateTime",
    );
    assert!(in_order.windows(2).all(|w| w[0] <= w[1]));

    let group = 10;
    let shuffled = ints(
        &all(
            "bid",
            &format!(
                "param events = 5000\n {TIME_IS_ID}\n param out_of_order_group_size = {group}"
            ),
        ),
        "dateTime",
    );
    assert!(shuffled.windows(2).any(|w| w[0] > w[1]), "some disorder");
    assert!(shuffled.windows(2).all(|w| w[0] / group <= w[1] / group));
    let mut sorted = shuffled.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, in_order);
}

#[test]
fn the_output_must_be_named_after_a_kind() {
    let src = r#"operator name = "nx", type = "nexmark" { output name = "bids" }
operator name = "d", type = "discard" { input name = "bids" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let err = check(&spec, &BuiltinCatalog).expect_err("bids is no kind");
    assert!(
        format!("{err:?}").contains("`person`, `auction` or `bid`"),
        "{err:?}"
    );
}
