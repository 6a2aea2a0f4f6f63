//! `anduin ctl autoscale QUERY`: the autoscaler's latest rounds as tables, each operator's
//! decision with the figures it came from; its rescales and failures.

use anduin_api::AutoscaleReport;
use anduin_coordinator::autoscale::{Decision, OperatorDecision, Round};

use super::table;

/// The report, its `rounds` latest rounds shown.
pub(super) fn render(query: &str, report: &AutoscaleReport, rounds: usize) -> String {
    let e = |s: &str| table::escape_controls(s, false);
    let log = &report.log;
    let mut out = format!(
        "autoscaler of \"{}\": a round every {} ms, target utilisation {}; {} round{} kept\n",
        e(query),
        report.interval_ms,
        log.config.target_utilisation,
        log.rounds.len(),
        if log.rounds.len() == 1 { "" } else { "s" }
    );
    if log.rounds.is_empty() {
        out.push_str("no round yet: the first comes one interval after the query runs\n");
    }
    let skip = log.rounds.len().saturating_sub(rounds);
    for logged in &log.rounds[skip..] {
        out.push('\n');
        out.push_str(&round_table(&logged.round));
    }
    if !report.rescales.is_empty() {
        out.push_str("\nrescales carried out (latest last):\n");
        let rows: Vec<Vec<String>> = report
            .rescales
            .iter()
            .map(|r| {
                vec![
                    r.operator.clone(),
                    table::time(i64::try_from(r.started_at_ms).unwrap_or(i64::MAX)),
                    format!("{} ms", r.took_ms()),
                ]
            })
            .collect();
        out.push_str(&table::render(&["OPERATOR", "STARTED", "TOOK"], &rows));
    }
    if !report.failures.is_empty() {
        out.push_str("\nfailures (latest last):\n");
        for f in &report.failures {
            out.push_str(&format!(
                "{} {}{}\n",
                table::time(i64::try_from(f.at_ms).unwrap_or(i64::MAX)),
                f.operator
                    .as_deref()
                    .map(|o| format!("{}: ", e(o)))
                    .unwrap_or_default(),
                e(&f.message)
            ));
        }
    }
    out
}

fn round_table(round: &Round) -> String {
    let mut out = format!(
        "round at {}{}:\n",
        table::time(i64::try_from(round.at_ms).unwrap_or(i64::MAX)),
        round
            .expected_rescale_ms
            .map(|ms| format!(" (a rescale is expected to take {ms} ms)"))
            .unwrap_or_default()
    );
    let rows: Vec<Vec<String>> = round.decisions.iter().map(row).collect();
    out.push_str(&table::render(
        &[
            "OPERATOR",
            "PARALLELISM",
            "DECISION",
            "ARRIVAL/S",
            "TARGET/S",
            "TRUE/S",
            "BUSY",
            "BACKLOG",
        ],
        &rows,
    ));
    out
}

fn row(d: &OperatorDecision) -> Vec<String> {
    let rate = |r: Option<f64>| r.map_or_else(|| "-".to_string(), |r| format!("{r:.1}"));
    let (parallelism, what) = match &d.decision {
        Decision::ScaleUp { from, to, .. } | Decision::ScaleDown { from, to, .. } => {
            (format!("{from} → {to}"), words(&d.decision))
        }
        other => (other.parallelism_after().to_string(), words(other)),
    };
    let estimate = d.estimate.as_ref();
    let figures = d.figures.as_ref();
    let busy = figures
        .and_then(|f| f.busy_ratio(other_parallelism(&d.decision)))
        .map_or_else(|| "-".to_string(), |b| format!("{:.1}%", b * 100.0));
    vec![
        d.operator.clone(),
        parallelism,
        what,
        rate(estimate.and_then(|e| e.arrival_rate)),
        rate(estimate.map(|e| e.target_rate)),
        rate(estimate.and_then(|e| e.true_rate)),
        busy,
        figures
            .and_then(|f| f.backlog)
            .map_or_else(|| "-".to_string(), |b| b.to_string()),
    ]
}

/// The parallelism the figures were measured at.
fn other_parallelism(d: &Decision) -> u32 {
    match d {
        Decision::ScaleUp { from, .. } | Decision::ScaleDown { from, .. } => *from,
        other => other.parallelism_after(),
    }
}

/// `scale-up: bottleneck`, `hold: missing-figures (no-true-rate rows_in=0)`, from the
/// decision's JSON (its tag and its reason's kind and fields).
fn words(d: &Decision) -> String {
    let v = serde_json::to_value(d).unwrap_or_default();
    let tag = v["decision"].as_str().unwrap_or("?").to_string();
    let reason = &v["reason"];
    let Some(fields) = reason.as_object() else {
        return tag;
    };
    let kind = fields.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let detail: Vec<String> = fields
        .iter()
        .filter(|(k, _)| k.as_str() != "kind")
        .map(|(k, v)| match v {
            serde_json::Value::Object(inner) => inner
                .iter()
                .map(|(k, v)| field(k, v))
                .collect::<Vec<_>>()
                .join(" "),
            _ => field(k, v),
        })
        .collect();
    if detail.is_empty() {
        format!("{tag}: {kind}")
    } else {
        format!("{tag}: {kind} ({})", detail.join(", "))
    }
}

/// `key=value`; an instant (`until_ms`, `since_ms`) as a time.
fn field(key: &str, v: &serde_json::Value) -> String {
    match v.as_i64() {
        Some(ms) if key.ends_with("_ms") => {
            format!("{}={}", key.trim_end_matches("_ms"), table::time(ms))
        }
        _ => format!("{key}={}", plain(v)),
    }
}

fn plain(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}
