//! The live figures a cluster's executors send to the coordinator (every second): kept per
//! part, merged by the attempt's control plane (API metrics, Prometheus, web UI), and summed
//! per operator, with a rate, for `anduin status`.

use std::collections::BTreeMap;
use std::time::Instant;

use anduin_runtime::control::QueryMetrics;

use super::proto::OperatorFigures;

/// The last figures of one part's executor, and the rate of each of its instances since the
/// report before.
#[derive(Debug, Clone)]
pub struct Sample {
    pub at: Instant,
    pub metrics: QueryMetrics,
    /// Rows out per second of each instance (operator, instance) since the report before.
    pub rates: BTreeMap<(String, usize), f64>,
}

impl Sample {
    /// The sample of `metrics` received at `at`, its rates taken against `before` (the same
    /// executor's previous one, if any).
    pub fn new(metrics: QueryMetrics, at: Instant, before: Option<&Sample>) -> Sample {
        let mut rates = BTreeMap::new();
        if let Some(b) = before {
            let seconds = at.saturating_duration_since(b.at).as_secs_f64();
            if seconds > 0.0 {
                for i in &metrics.instances {
                    if let Some(old) = b
                        .metrics
                        .instances
                        .iter()
                        .find(|o| o.operator == i.operator && o.instance == i.instance)
                    {
                        let rows = i.rows_out.saturating_sub(old.rows_out);
                        rates.insert((i.operator.clone(), i.instance), rows as f64 / seconds);
                    }
                }
            }
        }
        Sample { at, metrics, rates }
    }
}

/// Each operator's rows and rate over every part's last sample, by operator name.
pub fn by_operator<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<OperatorFigures> {
    let mut out: BTreeMap<String, OperatorFigures> = BTreeMap::new();
    for s in samples {
        for i in &s.metrics.instances {
            let o = out
                .entry(i.operator.clone())
                .or_insert_with(|| OperatorFigures {
                    operator: i.operator.clone(),
                    rows_in: 0,
                    rows_out: 0,
                    rows_out_per_s: None,
                });
            o.rows_in += i.rows_in;
            o.rows_out += i.rows_out;
            if let Some(r) = s.rates.get(&(i.operator.clone(), i.instance)) {
                *o.rows_out_per_s.get_or_insert(0.0) += r;
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use anduin_runtime::control::InstanceMetrics;

    use super::*;

    fn metrics(rows: &[(&str, usize, u64)]) -> QueryMetrics {
        QueryMetrics {
            instances: rows
                .iter()
                .map(|(operator, instance, out)| {
                    InstanceMetrics::rows(operator, *instance, *out, *out)
                })
                .collect(),
            ..QueryMetrics::default()
        }
    }

    #[test]
    fn an_operator_sums_its_instances_on_every_part_and_their_rates() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        let a0 = Sample::new(metrics(&[("gen", 0, 100), ("w", 0, 10)]), t0, None);
        let a1 = Sample::new(metrics(&[("gen", 0, 300), ("w", 0, 30)]), t1, Some(&a0));
        // The other part has reported once: its rows count, it has no rate yet.
        let b0 = Sample::new(metrics(&[("w", 1, 50)]), t1, None);
        let figures = by_operator([&a1, &b0]);
        assert_eq!(
            figures,
            [
                OperatorFigures {
                    operator: "gen".into(),
                    rows_in: 300,
                    rows_out: 300,
                    rows_out_per_s: Some(100.0),
                },
                OperatorFigures {
                    operator: "w".into(),
                    rows_in: 80,
                    rows_out: 80,
                    rows_out_per_s: Some(10.0),
                },
            ]
        );
    }

    #[test]
    fn a_counter_that_went_back_gives_no_negative_rate() {
        // A part restored elsewhere counts again from its restore.
        let t0 = Instant::now();
        let before = Sample::new(metrics(&[("gen", 0, 500)]), t0, None);
        let after = Sample::new(
            metrics(&[("gen", 0, 100)]),
            t0 + Duration::from_secs(1),
            Some(&before),
        );
        assert_eq!(after.rates[&("gen".to_string(), 0)], 0.0);
    }
}
