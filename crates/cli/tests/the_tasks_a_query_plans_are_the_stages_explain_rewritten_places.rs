//! Pipelining (pattern 5) is applied by the pipelining rules: for a few queries (a chain of
//! split operators, a single one, a split source read twice, a split union, a split keyed
//! window run in parallel), the operators `explain --rewritten` shows a pipelining rule
//! placing are exactly those that asked for `pipeline = "split"`, and the tasks `explain`
//! plans are those of the query without the param, cut right before and after each of them.

use std::collections::BTreeSet;

use crate::common;

use common::anduin_ok;

const TYPES: &str = r#"type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
"#;

fn generator(name: &str, out: &str, split: bool) -> String {
    format!(
        "operator name = \"{name}\", type = \"generator\" {{\n  param profile = \"events\"\n  param seed = 3\n  param count = 100\n{}  output name = \"{out}\", type = \"Event\"\n}}\n",
        if split { SPLIT } else { "" }
    )
}

fn op(name: &str, kind: &str, inputs: &[&str], body: &str, split: bool, out: &str) -> String {
    let inputs: String = inputs
        .iter()
        .map(|i| format!("  input name = \"{i}\"\n"))
        .collect();
    let out = if out.is_empty() {
        String::new()
    } else {
        format!("  output name = \"{out}\"\n")
    };
    format!(
        "operator name = \"{name}\", type = \"{kind}\" {{\n{inputs}{body}{}{out}}}\n",
        if split { SPLIT } else { "" }
    )
}

const SPLIT: &str = "  param pipeline = \"split\"\n";
const FILTER: &str = "  param condition = \"value < 42\"\n";
const MAP: &str = "  param columns = \"ts, sensor, value * 2 AS value\"\n";
const WINDOW: &str = "  param kind = \"tumbling\"\n  param size = \"1s\"\n  param time = \"ts\"\n  param keys = \"sensor\"\n  param aggregates = \"COUNT(*) AS n\"\n";
const WRITER: &str = "  param path = \"/dev/null\"\n";

/// The queries, by name.
fn queries() -> Vec<(&'static str, String)> {
    let chain = [
        generator("gen", "events", false),
        op("low", "filter", &["events"], FILTER, true, "low"),
        op("doubled", "map", &["low"], MAP, true, "doubled"),
        op("out", "writer", &["doubled"], WRITER, false, ""),
    ];
    let single = [
        generator("gen", "events", false),
        op("low", "filter", &["events"], FILTER, false, "low"),
        op("doubled", "map", &["low"], MAP, true, "doubled"),
        op("w", "window", &["doubled"], WINDOW, false, "counts"),
        op("out", "writer", &["counts"], WRITER, false, ""),
    ];
    let source_read_twice = [
        generator("gen", "events", true),
        op("low", "filter", &["events"], FILTER, false, "low"),
        op("lowOut", "writer", &["low"], WRITER, false, ""),
        op(
            "high",
            "filter",
            &["events"],
            "  param condition = \"value >= 42\"\n",
            true,
            "high",
        ),
        op("doubled", "map", &["high"], MAP, false, "doubled"),
        op("highOut", "writer", &["doubled"], WRITER, false, ""),
    ];
    let union = [
        generator("a", "fromA", false),
        generator("b", "fromB", false),
        op("both", "union", &["fromA", "fromB"], "", true, "all"),
        op("doubled", "map", &["all"], MAP, false, "doubled"),
        op("out", "writer", &["doubled"], WRITER, false, ""),
    ];
    let parallel = [
        generator("gen", "events", false),
        op(
            "w",
            "window",
            &["events"],
            &format!("{WINDOW}  param parallelism = 2\n"),
            true,
            "counts",
        ),
        op(
            "shape",
            "map",
            &["counts"],
            "  param columns = \"sensor, n\"\n",
            true,
            "shaped",
        ),
        op("out", "writer", &["shaped"], WRITER, false, ""),
    ];
    [
        ("chain", chain.concat()),
        ("single", single.concat()),
        ("source read twice", source_read_twice.concat()),
        ("union", union.concat()),
        ("parallel", parallel.concat()),
    ]
    .into_iter()
    .map(|(name, ops)| (name, format!("{TYPES}{ops}")))
    .collect()
}

/// The tasks `anduin explain` plans for `query`, each its chain of operators.
fn tasks(dir: &std::path::Path, query: &str) -> Vec<Vec<String>> {
    std::fs::write(dir.join("q.flow"), query).expect("query");
    let out = anduin_ok(dir, &["explain", "q.flow"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("task "))
        .filter_map(|l| l.split_once(": ").map(|(_, chain)| chain))
        .map(|chain| {
            let chain = chain.split(" (").next().unwrap_or(chain);
            chain.split(" -> ").map(str::to_string).collect()
        })
        .collect()
}

/// The operators of `query` that `explain --rewritten` shows a pipelining rule placing (a
/// copy of an operator counted as the operator).
fn placed(dir: &std::path::Path, query: &str) -> BTreeSet<String> {
    std::fs::write(dir.join("q.flow"), query).expect("query");
    let out = anduin_ok(
        dir,
        &["explain", "q.flow", "--rewritten", "--format", "json"],
    );
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("explain --rewritten prints JSON");
    let applications = json["applications"].as_array().cloned().unwrap_or_default();
    applications
        .iter()
        .filter(|a| {
            a["rule"]
                .as_str()
                .is_some_and(|r| r.starts_with("pipelining"))
        })
        .flat_map(|a| {
            // The chain `c` or the operator `f`; `a`, `b` are the streams feeding it.
            ["c", "f"]
                .iter()
                .flat_map(|k| a["bound"][k].as_array().cloned().unwrap_or_default())
                .collect::<Vec<_>>()
        })
        .filter_map(|n| n.as_str().map(str::to_string))
        .map(|n| match n.rsplit_once("_replica_") {
            Some((of, k)) if k.parse::<u32>().is_ok() => of.to_string(),
            _ => n,
        })
        .collect()
}

#[test]
fn the_tasks_a_query_plans_are_the_stages_explain_rewritten_places() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, query) in queries() {
        let asked: BTreeSet<String> = query
            .split("operator name = \"")
            .skip(1)
            .filter(|block| block.contains(SPLIT))
            .filter_map(|block| block.split('"').next().map(str::to_string))
            .collect();
        let placed = placed(dir.path(), &query);
        assert_eq!(
            placed, asked,
            "{name}: placed by the rules vs asked\n{query}"
        );
        // The plan of the query without the param, cut before and after each placed stage.
        let mut expected: Vec<Vec<String>> = Vec::new();
        for chain in tasks(dir.path(), &query.replace(SPLIT, "")) {
            let mut run: Vec<String> = Vec::new();
            for op in chain {
                if placed.contains(&op) {
                    expected.extend((!run.is_empty()).then(|| std::mem::take(&mut run)));
                    expected.push(vec![op]);
                } else {
                    run.push(op);
                }
            }
            expected.extend((!run.is_empty()).then_some(run));
        }
        let mut planned = tasks(dir.path(), &query);
        expected.sort();
        planned.sort();
        assert_eq!(planned, expected, "{name}: the tasks planned\n{query}");
    }
}
