use super::*;
use crate::test_util::{expected, rewritten};

type R = Result<(), Box<dyn std::error::Error>>;

/// The graph rewritten with every built-in rule.
fn builtin(graph: &str) -> Result<String, Box<dyn std::error::Error>> {
    rewritten(&builtin_rules(), graph)
}

#[test]
fn the_built_in_rules_parse_one_per_pattern() {
    let names: Vec<String> = builtin_rules().rules.into_iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "simple_standby",
            "checkpointing",
            "hot_standby",
            "hot_standby_2",
            "partitioning_range",
            "partitioning_round_robin",
            "partitioning",
            "partitioning_2",
            "partitioning_source",
            "pipelining",
            "pipelining_source",
            "pipelining_2",
            "pattern_overflow"
        ]
    );
}

#[test]
fn an_operator_without_qos_params_is_left_alone() -> R {
    let g = "sink := writer(f := filter(w := window(src := reader)))";
    assert_eq!(builtin(g)?, g);
    Ok(())
}

#[test]
fn simple_standby_places_a_stateless_operator_anywhere() -> R {
    assert_eq!(
        builtin(r#"sink := writer(f := filter{fault_tolerance = "standby"}(src := reader))"#)?,
        r#"sink := writer(f := filter{fault_tolerance = "standby"}@{p}(src := reader))"#
    );
    // A stateful operator would lose its state: simple standby does not apply.
    let stateful = r#"sink := writer(w := window{fault_tolerance = "standby"}(src := reader))"#;
    assert_eq!(builtin(stateful)?, stateful);
    Ok(())
}

#[test]
fn checkpointing_marks_a_stateful_operator_and_lets_it_move() -> R {
    assert_eq!(
        builtin(r#"sink := writer(w := window{fault_tolerance = "checkpoint"}(src := reader))"#)?,
        r#"sink := writer(w := window{checkpoint = "on", fault_tolerance = "checkpoint"}@{p}(src := reader))"#
    );
    let stateless = r#"sink := writer(f := filter{fault_tolerance = "checkpoint"}(src := reader))"#;
    assert_eq!(builtin(stateless)?, stateless);
    Ok(())
}

#[test]
fn hot_standby_multicasts_to_replicas_on_distinct_workers_and_selects_one_stream() -> R {
    assert_eq!(
        builtin(r#"sink := writer(f := filter{fault_tolerance = "hot-standby"}(src := reader))"#)?,
        expected(
            r#"sink := writer(stream-selector_1 := stream-selector(
                 failover_1 := failover@{f.p1}(writer_1 := writer@{f.p1}(
                   f := filter{fault_tolerance = "hot-standby"}@{f.p1}(
                     reader_1 := reader@{f.p1}(multicast_1 := multicast(src := reader))))),
                 failover_2 := failover@{f.p2}(writer_2 := writer@{f.p2}(
                   f_replica_1 := filter{fault_tolerance = "hot-standby"}@{f.p2}(
                     reader_2 := reader@{f.p2}(multicast_1))))))"#
        )?
    );
    Ok(())
}

#[test]
fn hot_standby_makes_as_many_replicas_as_asked() -> R {
    let out = builtin(
        r#"sink := writer(w := window{fault_tolerance = "hot-standby", replicas = "3"}(src := reader))"#,
    )?;
    assert_eq!(out.matches("window{").count(), 3, "{out}");
    assert_eq!(out.matches(":= multicast(").count(), 1, "{out}");
    for slot in ["@{w.p1}", "@{w.p2}", "@{w.p3}"] {
        assert!(out.contains(slot), "{slot} in {out}");
    }
    Ok(())
}

#[test]
fn hot_standby_of_a_join_multicasts_both_inputs() -> R {
    assert_eq!(
        builtin(
            r#"sink := writer(j := join{fault_tolerance = "hot-standby"}(l := reader, r := reader))"#
        )?,
        expected(
            r#"sink := writer(stream-selector_1 := stream-selector(
                 failover_1 := failover@{j.p1}(writer_1 := writer@{j.p1}(
                   j := join{fault_tolerance = "hot-standby"}@{j.p1}(
                     reader_1 := reader@{j.p1}(multicast_1 := multicast(l := reader)),
                     reader_2 := reader@{j.p1}(multicast_2 := multicast(r := reader))))),
                 failover_2 := failover@{j.p2}(writer_2 := writer@{j.p2}(
                   j_replica_1 := join{fault_tolerance = "hot-standby"}@{j.p2}(
                     reader_3 := reader@{j.p2}(multicast_1),
                     reader_4 := reader@{j.p2}(multicast_2))))))"#
        )?
    );
    Ok(())
}

#[test]
fn partitioning_splits_by_key_group_into_instances_and_merges() -> R {
    assert_eq!(
        builtin(r#"sink := writer(w := window{parallelism = "3"}(src := reader))"#)?,
        expected(
            r#"sink := writer(merge_1 := merge(
                 w := window{parallelism = "3"}@{p*}(
                   splitter_1 := splitter{by = "key-group", n = "3"}(src := reader)),
                 w_replica_1 := window{parallelism = "3"}@{p*}(splitter_1),
                 w_replica_2 := window{parallelism = "3"}@{p*}(splitter_1)))"#
        )?
    );
    let one = r#"sink := writer(w := window{parallelism = "1"}(src := reader))"#;
    assert_eq!(builtin(one)?, one);
    Ok(())
}

#[test]
fn partitioning_a_stateless_operator_deals_its_rows_in_turn() -> R {
    assert_eq!(
        builtin(r#"sink := writer(f := filter{parallelism = "2"}(src := reader))"#)?,
        expected(
            r#"sink := writer(merge_1 := merge(
                 f := filter{parallelism = "2"}@{p*}(
                   splitter_1 := splitter{by = "round-robin", n = "2"}(src := reader)),
                 f_replica_1 := filter{parallelism = "2"}@{p*}(splitter_1)))"#
        )?
    );
    Ok(())
}

#[test]
fn partitioning_a_stateless_operator_by_ranges_gives_each_instance_a_range() -> R {
    assert_eq!(
        builtin(
            r#"sink := writer(f := filter{parallelism = "3", ranges = "v: 1, 2"}(src := reader))"#
        )?,
        expected(
            r#"sink := writer(merge_1 := merge(
                 f := filter{parallelism = "3", ranges = "v: 1, 2"}@{p*}(
                   splitter_1 := splitter{by = "range", ranges = "v: 1, 2", n = "3"}(src := reader)),
                 f_replica_1 := filter{parallelism = "3", ranges = "v: 1, 2"}@{p*}(splitter_1),
                 f_replica_2 := filter{parallelism = "3", ranges = "v: 1, 2"}@{p*}(splitter_1)))"#
        )?
    );
    Ok(())
}

#[test]
fn partitioning_a_join_splits_both_inputs() -> R {
    assert_eq!(
        builtin(r#"sink := writer(j := join{parallelism = "2"}(l := reader, r := reader))"#)?,
        expected(
            r#"sink := writer(merge_1 := merge(
                 j := join{parallelism = "2"}@{p*}(
                   splitter_1 := splitter{by = "key-group", n = "2"}(l := reader),
                   splitter_2 := splitter{by = "key-group", n = "2"}(r := reader)),
                 j_replica_1 := join{parallelism = "2"}@{p*}(splitter_1, splitter_2)))"#
        )?
    );
    Ok(())
}

#[test]
fn partitioning_a_source_runs_its_instances_side_by_side_without_a_splitter() -> R {
    assert_eq!(
        builtin(r#"sink := writer(f := filter(src := nexmark{parallelism = "2"}))"#)?,
        expected(
            r#"sink := writer(f := filter(merge_1 := merge(
                 src := nexmark{parallelism = "2"}@{p*},
                 src_replica_1 := nexmark{parallelism = "2"}@{p*})))"#
        )?
    );
    Ok(())
}

#[test]
fn pipelining_puts_each_operator_of_a_marked_chain_on_its_own_worker() -> R {
    assert_eq!(
        builtin(
            r#"sink := writer(a := map{pipeline = "split"}(b := filter{pipeline = "split"}(
                 c := map{pipeline = "split"}(d := map(src := reader)))))"#
        )?,
        expected(
            r#"sink := writer(a := map{pipeline = "split"}@{a.p1}(
                 b := filter{pipeline = "split"}@{a.p2}(
                   c := map{pipeline = "split"}@{a.p3}(d := map(src := reader)))))"#
        )?
    );
    // One marked operator is a chain of one: cut from its neighbours, on a slot of its own.
    assert_eq!(
        builtin(r#"sink := writer(a := map{pipeline = "split"}(src := reader))"#)?,
        r#"sink := writer(a := map{pipeline = "split"}@{a.p1}(src := reader))"#
    );
    // A source and an operator with two inputs, which head their task anyway.
    assert_eq!(
        builtin(
            r#"sink := writer(j := join{pipeline = "split"}(
                 src := reader{pipeline = "split"}, b := reader))"#
        )?,
        expected(
            r#"sink := writer(j := join{pipeline = "split"}@{j.p1}(
                 src := reader{pipeline = "split"}@{src.p1}, b := reader))"#
        )?
    );
    Ok(())
}

#[test]
fn patterns_compose_each_replica_is_partitioned_once() -> R {
    let out = builtin(
        r#"sink := writer(w := window{parallelism = "2", fault_tolerance = "hot-standby"}(src := reader))"#,
    )?;
    // Hot standby first (rule order): two replicas, each then split into two partitions.
    // Replicas carry their original's marks, so no rule applies to its own output again.
    assert_eq!(out.matches(":= window{").count(), 4, "{out}");
    assert_eq!(out.matches(":= stream-selector(").count(), 1, "{out}");
    assert_eq!(out.matches(":= merge(").count(), 2, "{out}");
    Ok(())
}

#[test]
fn pattern_overflow_multicasts_to_copies_of_a_pattern_and_merges_them() -> R {
    assert_eq!(
        builtin(r#"sink := writer(c := pattern{overflow_instances = "3"}(src := reader))"#)?,
        expected(
            r#"sink := writer(merge_1 := merge(
                 c := pattern{overflow_instances = "3"}@{p*}(multicast_1 := multicast(src := reader)),
                 c_replica_1 := pattern{overflow_instances = "3"}@{p*}(multicast_1),
                 c_replica_2 := pattern{overflow_instances = "3"}@{p*}(multicast_1)))"#
        )?
    );
    for untouched in [
        r#"sink := writer(c := pattern{overflow_instances = "1"}(src := reader))"#,
        r#"sink := writer(c := pattern(src := reader))"#,
        r#"sink := writer(w := window{overflow_instances = "3"}(src := reader))"#,
    ] {
        assert_eq!(builtin(untouched)?, untouched);
    }
    Ok(())
}
