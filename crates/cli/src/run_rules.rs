//! `anduin run … --rules FILE`: rewriting rules applied while the query runs (paper §4.2),
//! their figures (`rate(w) > 10000`) measured on the running query. A run-time rule sets params
//! of the operator its root matches (`anduin_rewrite::check_run_time`); every
//! `--rules-interval` the rules are matched against the query's graph with its current param
//! values and the figures of the window since the last round, and the changes they ask for go
//! through the control plane as `anduin ctl set` would (a `parallelism` change is a live
//! rescale, a `pipeline = "split"` a live split), from `rule:NAME`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anduin_coordinator::autoscale::{Figures, Observation};
use anduin_graph::rewriting::{rule_graph, CatalogFacts};
use anduin_registry::BuiltinCatalog;
use anduin_rewrite::{check_run_time, param_changes, parse_rules, Facts, Graph, Operator, RuleSet};
use anduin_runtime::autoscaler::{beside, Beside, Round};
use anduin_runtime::control::{ChangeRequest, Control, OperatorInfo};
use anyhow::{Context, Result};

/// The rules of one run, checked, and the query's graph they match.
pub struct RunRules {
    rules: RuleSet,
    graph: Graph,
    /// The changes refused so far (each said once, not every round).
    refused: std::collections::BTreeSet<String>,
}

/// The flags of rules applied at run time.
#[derive(clap::Args, Debug, Clone)]
pub struct RulesArgs {
    /// Apply the rules of this file while the query runs (docs/rewriting.md, "Rules at run
    /// time"): each sets params of the operator it matches when its constraints hold on the
    /// figures measured then (`rate(w) > 10000`); a `parallelism` change is a live rescale.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<std::path::PathBuf>,
    /// The time between rounds of the rules: each reads the figures of this window.
    #[arg(long, requires = "rules", default_value = "10s", value_parser = crate::autoscale::parse_interval, value_name = "DURATION")]
    pub rules_interval: Duration,
}

/// The largest rule file read (a rule file is text a person writes).
const MAX_RULE_FILE: u64 = 1 << 20;

/// The figures a rule can read at run time (`rate(x)`, …).
const FIGURES: &[&str] = &[
    "rate",
    "out_rate",
    "busy",
    "true_rate",
    "backlog",
    "state_bytes",
];

/// The text of the rule file `path`: refused when it is not a file, larger than 1 MiB or not
/// UTF-8.
pub fn read_rule_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let shown = path.display();
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read rule file `{shown}`"))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        anyhow::bail!("rule file `{shown}` is not a file");
    }
    let mut bytes = Vec::new();
    file.take(MAX_RULE_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read rule file `{shown}`"))?;
    if bytes.len() as u64 > MAX_RULE_FILE {
        anyhow::bail!("rule file `{shown}` is larger than 1 MiB: split it, or keep fewer rules");
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "rule file `{shown}` is not UTF-8 text (byte {} is not)",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The figures `c` reads, by name.
fn figures_read(c: &anduin_rewrite::Constraint, out: &mut Vec<String>) {
    use anduin_rewrite::{Constraint, Value};
    match c {
        Constraint::And(a, b) | Constraint::Or(a, b) => {
            figures_read(a, out);
            figures_read(b, out);
        }
        Constraint::Not(a) => figures_read(a, out),
        Constraint::Compare(l, _, r) => {
            for v in [l, r] {
                if let Value::Figure { figure, .. } = v {
                    out.push(figure.clone());
                }
            }
        }
        Constraint::Stateless(_) | Constraint::Stateful(_) => {}
    }
}

/// The rules of a file, checked, by when they apply.
pub struct CheckedRules {
    /// Rules that reshape the graph: applied once, to the query as written, before it runs
    /// (`anduin_graph::rewriting::rewritten_by`).
    pub plan: RuleSet,
    /// Rules that set params of the operator their root matches: applied while it runs.
    pub run: RuleSet,
}

/// The rules `text` of the file named `file`, checked without the query: they parse
/// (`FILE:LINE:COL: …`), there is one at least, and each is either one a running query can
/// carry out, reading only figures that are measured, or one that reshapes the graph and
/// reads no figure (it is applied before anything is measured). What `anduin submit` and
/// `anduin cluster` check before they send the file anywhere.
pub fn check_text(file: &str, text: &str) -> Result<CheckedRules> {
    let rules = parse_rules(file, text)?;
    if rules.rules.is_empty() {
        anyhow::bail!("rule file `{file}` holds no rule");
    }
    let mut checked = CheckedRules {
        plan: RuleSet { rules: Vec::new() },
        run: RuleSet { rules: Vec::new() },
    };
    for rule in rules.rules {
        let mut read = Vec::new();
        if let Some(c) = &rule.constraint {
            figures_read(c, &mut read);
        }
        // A rule that reads no figure needs nothing measured: it is applied before the query
        // runs, even when it only sets params.
        if read.is_empty() {
            checked.plan.rules.push(rule);
            continue;
        }
        if let Err(not) = check_run_time(file, &rule) {
            anyhow::bail!(
                "{file}:{}: rule {}: it reads the figure `{}` and {}: a rule that reshapes the graph is applied once, before the query runs, when nothing is measured; a rule applied while the query runs may only set params of the operator its left side's root matches (`{}{{param = \"value\"}}`)",
                rule.pos,
                rule.name,
                read.join("`, `"),
                not.why,
                not.root
            );
        }
        if let Some(unknown) = read.iter().find(|f| !FIGURES.contains(&f.as_str())) {
            anyhow::bail!(
                "{file}:{}: rule {}: no figure `{unknown}` is measured; the figures are {}",
                rule.pos,
                rule.name,
                FIGURES.join(", ")
            );
        }
        checked.run.rules.push(rule);
    }
    Ok(checked)
}

/// The rules of `text` (the file `file`) that reshape the graph, applied before the query runs.
pub fn plan_rules(file: &str, text: &str) -> Result<RuleSet> {
    Ok(check_text(file, text)?.plan)
}

/// [`load`] of the rules `text` of the file named `file` (read already: a cluster's
/// coordinator gets it with the submission).
pub fn load_text(file: &str, text: &str, spec: &anduin_spec::Spec) -> Result<Option<RunRules>> {
    let file = file.to_string();
    let rules = check_text(&file, text)?.run;
    if rules.rules.is_empty() {
        return Ok(None);
    }
    for rule in &rules.rules {
        for node in rule.left.nodes() {
            if let anduin_rewrite::PatternKind::Type(kind) = &node.kind {
                if !spec.operators.iter().any(|o| o.kind.as_str() == kind) {
                    eprintln!(
                        "warning: {file}:{}: rule {}: the query has no operator of type `{kind}`: \
                         the rule never applies",
                        rule.pos, rule.name
                    );
                }
            }
        }
    }
    let graph = rule_graph(spec).context("the query's graph cannot be matched by rules")?;
    Ok(Some(RunRules {
        rules,
        graph,
        refused: std::collections::BTreeSet::new(),
    }))
}

/// Starts applying `rules` to the query `control` runs, a round every `interval`.
pub fn start(
    control: Arc<Control>,
    rules: RunRules,
    interval: Duration,
) -> std::io::Result<Beside> {
    beside(control, interval, "rules", rules)
}

/// The figures a rule can read of an operator, from one window.
fn figures_of(facts: &Figures, parallelism: u32) -> Vec<(&'static str, f64)> {
    let window_s = facts.window_ms as f64 / 1000.0;
    let mut out = Vec::new();
    if let Some(rate) = facts.arrival_rate() {
        out.push(("rate", rate));
    }
    if let Some(sent) = facts.rows_out.values().max().filter(|_| window_s > 0.0) {
        out.push(("out_rate", *sent as f64 / window_s));
    }
    if let Some(busy) = facts.busy_ratio(parallelism) {
        out.push(("busy", busy));
    }
    if let Some(rate) = facts.true_rate() {
        out.push(("true_rate", rate));
    }
    if let Some(backlog) = facts.backlog {
        out.push(("backlog", backlog as f64));
    }
    if let Some(bytes) = facts.state_bytes {
        out.push(("state_bytes", bytes as f64));
    }
    out
}

/// What the rules ask of operators during one round: statelessness from the catalog, figures
/// from the window's observation.
struct RoundFacts {
    figures: BTreeMap<(String, &'static str), f64>,
}

impl Facts for RoundFacts {
    fn is_stateless(&self, op: &Operator) -> bool {
        CatalogFacts(&BuiltinCatalog).is_stateless(op)
    }

    fn figure(&self, op: &Operator, figure: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|((name, f), _)| *name == op.name && *f == figure)
            .map(|(_, v)| *v)
    }
}

impl Round for RunRules {
    fn begin(&mut self, control: &Control, operators: &[OperatorInfo]) -> Result<(), String> {
        tracing::info!(
            query = control.name(),
            rules = self.rules.rules.len(),
            operators = operators.len(),
            "rules are applied at run time"
        );
        Ok(())
    }

    fn round(&mut self, control: &Control, observation: Observation) -> bool {
        // The query's graph with its params' current values.
        let mut graph = self.graph.clone();
        for (id, name) in self
            .graph
            .iter()
            .map(|(id, op)| (id, op.name.clone()))
            .collect::<Vec<_>>()
        {
            let current = control.params(&name).unwrap_or_default();
            // And the values changes sent gave params that are not the operator's own (a
            // live split's `pipeline`): a rule that split it does not split it again.
            let requested = control.requested_of(&name);
            if let Some(op) = graph.get_mut(id) {
                for p in current {
                    op.params.insert(p.name, p.value);
                }
                op.params.extend(requested);
            }
        }
        let facts = RoundFacts {
            figures: observation
                .operators
                .iter()
                .filter_map(|o| Some((o, o.figures.as_ref()?)))
                .flat_map(|(o, f)| {
                    figures_of(f, o.parallelism)
                        .into_iter()
                        .map(|(figure, v)| ((o.name.clone(), figure), v))
                })
                .collect(),
        };
        let changes = match param_changes(&self.rules, &graph, &facts) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(query = control.name(), error = %e, "the rules could not be matched");
                return false;
            }
        };
        let mut changed = false;
        for change in changes {
            let request = ChangeRequest {
                operator: change.operator.clone(),
                param: change.param.clone(),
                value: change.new.clone(),
                from: format!("rule:{}", change.rule),
            };
            match control.set(request) {
                Ok(record) => {
                    changed = true;
                    tracing::info!(query = control.name(), rule = %change.rule, operator = %change.operator, param = %change.param, old = %record.old, new = %record.new, epoch = record.epoch, "a rule changed a param");
                }
                Err(e) => {
                    let said = format!(
                        "rule {} could not set {}.{} = {}: {e}",
                        change.rule, change.operator, change.param, change.new
                    );
                    if self.refused.insert(said.clone()) {
                        tracing::warn!(query = control.name(), rule = %change.rule, error = %e, "a rule's change was refused");
                        let said = said.trim_end().replace(char::is_control, " ");
                        eprintln!("anduin: {said} (said once; the rule is tried again each round)");
                    } else {
                        tracing::debug!(query = control.name(), rule = %change.rule, error = %e, "a rule's change was refused again");
                    }
                }
            }
        }
        changed
    }
}
