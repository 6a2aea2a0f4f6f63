//! `person` events: a new person, with a name, email, credit card and place.

use std::sync::Arc;

use anduin_types::ColumnType;
use arrow::array::{ArrayRef, Int64Array, StringBuilder, TimestampMillisecondArray};

use super::ids::{last_base0_person_id, Config, AVG_PERSON_BYTES, FIRST_PERSON_ID};
use super::strings::{next_extra, next_string, pick, Rng};
use super::Columns;

/// The columns of the `person` output.
pub const FIELDS: &[(&str, ColumnType)] = &[
    ("id", ColumnType::Int),
    ("name", ColumnType::String),
    ("emailAddress", ColumnType::String),
    ("creditCard", ColumnType::String),
    ("city", ColumnType::String),
    ("state", ColumnType::String),
    ("dateTime", ColumnType::Timestamp),
    ("extra", ColumnType::String),
];

const FIRST_NAMES: &[&str] = &[
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: &[&str] = &[
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
const US_STATES: &[&str] = &["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: &[&str] = &[
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];

/// Person rows being built.
#[derive(Default)]
pub struct People {
    id: Vec<i64>,
    name: StringBuilder,
    email: StringBuilder,
    credit_card: StringBuilder,
    city: StringBuilder,
    state: StringBuilder,
    date_time: Vec<i64>,
    extra: StringBuilder,
}

impl Columns for People {
    fn push(&mut self, config: &Config, id: u64) {
        let mut rng = Rng::for_event(config.seed, id);
        let name = format!(
            "{} {}",
            pick(&mut rng, FIRST_NAMES),
            pick(&mut rng, LAST_NAMES)
        );
        let email = format!(
            "{}@{}.com",
            next_string(&mut rng, 7, ' '),
            next_string(&mut rng, 5, ' ')
        );
        let card: Vec<String> = (0..4)
            .map(|_| format!("{:04}", rng.below(10_000)))
            .collect();
        let card = card.join(" ");
        let city = pick(&mut rng, US_CITIES);
        let state = pick(&mut rng, US_STATES);
        let size = 8 + name.len() + email.len() + card.len() + city.len() + state.len();
        let extra = next_extra(&mut rng, size, AVG_PERSON_BYTES);
        self.id
            .push(last_base0_person_id(id) as i64 + FIRST_PERSON_ID);
        self.name.append_value(name);
        self.email.append_value(email);
        self.credit_card.append_value(card);
        self.city.append_value(city);
        self.state.append_value(state);
        self.date_time.push(config.timestamp_of_id(id));
        self.extra.append_value(extra);
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.id))),
            Arc::new(self.name.finish()),
            Arc::new(self.email.finish()),
            Arc::new(self.credit_card.finish()),
            Arc::new(self.city.finish()),
            Arc::new(self.state.finish()),
            Arc::new(TimestampMillisecondArray::from(std::mem::take(
                &mut self.date_time,
            ))),
            Arc::new(self.extra.finish()),
        ]
    }
}
