//! One autoscaler observation from two snapshots of a query's live figures: what every
//! operator did between them (the counters are totals since the run began, so a window's
//! figures are their differences), with the logical graph the query's operators describe.
//! A pure function: the driver takes the snapshots and the time.

use std::collections::{BTreeMap, BTreeSet};

use anduin_coordinator::autoscale::{Figures, Observation, OperatorFacts, RescaleFact};

use crate::control::{InstanceMetrics, OperatorInfo, QueryMetrics};

/// What every operator of `operators` (the query's, in topological order) did between
/// `before` and `now`, `window_ms` apart, observed at `at_ms`; each runs at the parallelism
/// `parallelism` gives (its instances that own key groups now), after `rescales`.
///
/// - a source's arrival is the rows it read (it has no input), its busy time unknown;
/// - rows out of an operator go to each operator that reads one of its streams: each gets
///   all of them (an operator with several outputs counts them all for each consumer);
/// - busy time is known when every instance measured it;
/// - the backlog is the messages waiting at its instances' inputs now, times the rows a
///   batch carried on average (in the window, else since the run began);
/// - an operator none of whose instances reported figures has none.
pub fn observation(
    operators: &[OperatorInfo],
    parallelism: impl Fn(&OperatorInfo) -> u32,
    before: &QueryMetrics,
    now: &QueryMetrics,
    window_ms: u64,
    at_ms: u64,
    rescales: &[RescaleFact],
) -> Observation {
    let mut producers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for op in operators {
        for stream in &op.outputs {
            producers.entry(stream.as_str()).or_default().push(&op.name);
        }
    }
    let upstream_of = |op: &OperatorInfo| -> Vec<String> {
        let names: BTreeSet<&str> = op
            .inputs
            .iter()
            .flat_map(|s| producers.get(s.as_str()).into_iter().flatten().copied())
            .filter(|p| *p != op.name)
            .collect();
        names.into_iter().map(str::to_string).collect()
    };
    let upstream: BTreeMap<&str, Vec<String>> = operators
        .iter()
        .map(|op| (op.name.as_str(), upstream_of(op)))
        .collect();
    let consumers = |name: &str| -> Vec<&str> {
        upstream
            .iter()
            .filter(|(_, ups)| ups.iter().any(|u| u == name))
            .map(|(c, _)| *c)
            .collect()
    };
    let earlier: BTreeMap<(&str, usize), &InstanceMetrics> = before
        .instances
        .iter()
        .map(|i| ((i.operator.as_str(), i.instance), i))
        .collect();
    let facts = operators
        .iter()
        .map(|op| {
            let ups = upstream.get(op.name.as_str()).cloned().unwrap_or_default();
            let mine: Vec<(&InstanceMetrics, Option<&InstanceMetrics>)> = now
                .instances
                .iter()
                .filter(|i| i.operator == op.name)
                .map(|i| (i, earlier.get(&(i.operator.as_str(), i.instance)).copied()))
                .collect();
            let figures = (!mine.is_empty())
                .then(|| figures(&mine, ups.is_empty(), &consumers(&op.name), window_ms));
            OperatorFacts {
                name: op.name.clone(),
                upstream: ups,
                parallelism: parallelism(op),
                figures,
            }
        })
        .collect();
    Observation {
        at_ms,
        operators: facts,
        rescales: rescales.to_vec(),
    }
}

/// One operator's figures over the window, from its instances' totals now and before.
fn figures(
    instances: &[(&InstanceMetrics, Option<&InstanceMetrics>)],
    source: bool,
    consumers: &[&str],
    window_ms: u64,
) -> Figures {
    let delta = |f: fn(&InstanceMetrics) -> u64| -> u64 {
        instances
            .iter()
            .map(|(now, before)| f(now).saturating_sub(before.map_or(0, f)))
            .sum()
    };
    let delta_known = |f: fn(&InstanceMetrics) -> Option<u64>| -> Option<u64> {
        instances.iter().try_fold(0u64, |sum, (now, before)| {
            let earlier = before.and_then(f).unwrap_or(0);
            Some(sum + f(now)?.saturating_sub(earlier))
        })
    };
    let rows_out = delta(|i| i.rows_out);
    let rows_in = if source {
        rows_out
    } else {
        delta(|i| i.rows_in)
    };
    let batches = delta_known(|i| i.batches_in);
    let total = |f: fn(&InstanceMetrics) -> Option<u64>| -> Option<u64> {
        instances
            .iter()
            .try_fold(0u64, |sum, (now, _)| Some(sum + f(now)?))
    };
    let rows_per_batch = match batches {
        Some(b) if b > 0 => Some(rows_in as f64 / b as f64),
        _ => total(|i| i.batches_in)
            .filter(|b| *b > 0)
            .map(|b| instances.iter().map(|(n, _)| n.rows_in).sum::<u64>() as f64 / b as f64),
    };
    let backlog = total(|i| i.queue_len).map(|queued| {
        // Rows a waiting message carries; one each when no batch came yet.
        (queued as f64 * rows_per_batch.unwrap_or(1.0)).round() as u64
    });
    let state: Vec<u64> = instances
        .iter()
        .filter_map(|(n, _)| n.state_bytes)
        .collect();
    Figures {
        window_ms,
        rows_in,
        rows_out: consumers
            .iter()
            .map(|c| (c.to_string(), rows_out))
            .collect(),
        busy_ns: if source {
            None
        } else {
            delta_known(|i| i.busy_ns)
        },
        busy_ratio: None,
        backlog: if source { None } else { backlog },
        state_bytes: (!state.is_empty()).then(|| state.iter().sum()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, inputs: &[&str], outputs: &[&str]) -> OperatorInfo {
        OperatorInfo {
            name: name.into(),
            kind: "k".into(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            parallelism: 2,
            task: 0,
            stateful: false,
            adjustable: vec![],
            max_parallelism: None,
            owners: None,
        }
    }

    fn instance(operator: &str, instance: usize, rows: u64, busy_ms: u64) -> InstanceMetrics {
        InstanceMetrics {
            batches_in: Some(rows / 100),
            busy_ns: Some(busy_ms * 1_000_000),
            queue_len: Some(3),
            state_bytes: Some(10),
            ..InstanceMetrics::rows(operator, instance, rows, rows / 2)
        }
    }

    fn source(rows: u64) -> InstanceMetrics {
        InstanceMetrics {
            busy_ns: None,
            batches_in: None,
            queue_len: None,
            ..InstanceMetrics::rows("gen", 0, 0, rows)
        }
    }

    #[test]
    fn a_window_s_figures_are_the_differences_of_the_totals_over_the_graph_s_edges() {
        let ops = [
            op("gen", &[], &["raw"]),
            op("w", &["raw"], &["agg"]),
            op("out", &["agg"], &[]),
        ];
        let before = QueryMetrics {
            instances: vec![
                source(1000),
                instance("w", 0, 400, 10),
                instance("w", 1, 600, 10),
            ],
            ..QueryMetrics::default()
        };
        let now = QueryMetrics {
            instances: vec![
                source(3000),
                instance("w", 0, 1400, 30),
                instance("w", 1, 1600, 40),
                instance("out", 0, 5, 1),
            ],
            ..QueryMetrics::default()
        };
        let rescale = RescaleFact {
            operator: "w".into(),
            started_at_ms: 1,
            finished_at_ms: 2,
        };
        let o = observation(
            &ops,
            |op| if op.name == "w" { 3 } else { 1 },
            &before,
            &now,
            2_000,
            99,
            std::slice::from_ref(&rescale),
        );
        assert_eq!(o.at_ms, 99);
        assert_eq!(o.rescales, [rescale]);
        let facts = |n: &str| o.operators.iter().find(|f| f.name == n).expect("there");
        let gen = facts("gen");
        assert!(gen.upstream.is_empty());
        let g = gen.figures.as_ref().expect("figures");
        assert_eq!(g.rows_in, 2000, "a source's arrival is what it read");
        assert_eq!(g.rows_out["w"], 2000);
        assert_eq!((g.busy_ns, g.backlog), (None, None));
        let w = facts("w");
        assert_eq!(
            (w.upstream.as_slice(), w.parallelism),
            (&["gen".to_string()][..], 3)
        );
        let f = w.figures.as_ref().expect("figures");
        assert_eq!(f.rows_in, 2000);
        assert_eq!(f.rows_out["out"], 1000);
        assert_eq!(f.busy_ns, Some(50_000_000));
        assert_eq!(f.backlog, Some(600), "3 + 3 messages of 100 rows");
        assert_eq!(f.state_bytes, Some(20));
        assert_eq!(f.window_ms, 2_000);
        let out = facts("out")
            .figures
            .as_ref()
            .expect("an instance new in the window");
        assert_eq!(out.rows_in, 5);
        assert!(out.rows_out.is_empty(), "a sink feeds nobody");
    }

    #[test]
    fn busy_time_is_unknown_unless_every_instance_measured_it_and_silent_operators_have_no_figures()
    {
        let ops = [
            op("gen", &[], &["raw"]),
            op("w", &["raw"], &[]),
            op("idle", &["raw"], &[]),
        ];
        let mut unmeasured = instance("w", 1, 10, 1);
        unmeasured.busy_ns = None;
        let now = QueryMetrics {
            instances: vec![source(10), instance("w", 0, 10, 1), unmeasured],
            ..QueryMetrics::default()
        };
        let o = observation(&ops, |_| 1, &QueryMetrics::default(), &now, 1000, 1, &[]);
        let w = o.operators.iter().find(|f| f.name == "w").expect("there");
        assert_eq!(w.figures.as_ref().expect("figures").busy_ns, None);
        let idle = o
            .operators
            .iter()
            .find(|f| f.name == "idle")
            .expect("there");
        assert_eq!(idle.figures, None);
        let gen = o.operators.iter().find(|f| f.name == "gen").expect("there");
        let sent = &gen.figures.as_ref().expect("figures").rows_out;
        assert_eq!(sent.len(), 2, "each consumer gets every row: {sent:?}");
    }
}
