//! Whether a query may restore a checkpoint taken of another version of it.
//!
//! A checkpoint records a fingerprint of its query: per operator, its type, its params, the
//! columns of its inputs and outputs, and whether it keeps state (sources keep positions,
//! sinks keep pending output). A changed query may restore when every operator with state is
//! still there, of the same type, with the same params and columns; stateless operators may
//! change, appear or disappear. A change of parallelism is compatible here: whether the
//! operator's state can be re-cut for it (by key group) is the operator's to say when the
//! runtime restores it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a checkpoint remembers of one operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorFingerprint {
    /// The operator's name.
    pub name: String,
    /// Its type.
    pub kind: String,
    /// Whether it has state in checkpoints (a position, pending output, keyed state).
    pub stateful: bool,
    /// Its params as text.
    pub params: BTreeMap<String, String>,
    /// Its inputs' columns, e.g. `(ts timestamp, value int)`.
    pub inputs: Vec<String>,
    /// Its outputs' columns.
    pub outputs: Vec<String>,
    /// How many instances own its key groups (its parallelism).
    #[serde(default = "one")]
    pub parallelism: usize,
    /// How many instances run it, when more than own key groups (the spare instances of a
    /// live-rescalable operator, `--max-parallelism`); absent: `parallelism`. The manifest
    /// keeps each instance's state under `name#i` for `i` below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<usize>,
}

impl OperatorFingerprint {
    /// How many instances run it (see [`OperatorFingerprint::instances`]).
    pub fn instance_count(&self) -> usize {
        self.instances.unwrap_or(self.parallelism)
    }
}

fn one() -> usize {
    1
}

/// What a checkpoint remembers of its query.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFingerprint {
    /// Every operator, in the query's order.
    pub operators: Vec<OperatorFingerprint>,
}

/// Params that only say where an input ends (`bounded`: stop at the end of the stream as of
/// the start), not which rows come before that end nor their order: a run that stops there
/// writes a prefix of the rows of one that reads on, under the same numbers.
const WHERE_INPUT_ENDS: &[&str] = &["bounded"];

/// Whether param `name` is a setting of a connector's client — how it talks to its server
/// (a librdkafka `properties.*` setting other than the brokers' addresses, a connect
/// timeout) — which no state depends on: a checkpoint restores across a change of it (a
/// Kafka sink's `properties.message.max.bytes` raised after a row too large failed the run,
/// as its error advises: probe43).
fn client_setting(name: &str) -> bool {
    (name.starts_with("properties.") && name != "properties.bootstrap.servers")
        || name == "connect.timeout"
}

impl PlanFingerprint {
    /// A digest of the rows this query writes and their order, as far as its fingerprint
    /// tells them (32 hex digits of the SHA-256 of its JSON): what a run's lineage is drawn
    /// for (`crate::Store::lineage`). Equal for the same query ([`Compatibility::Identical`])
    /// and for one that differs only in [`WHERE_INPUT_ENDS`] or in client settings
    /// ([`client_setting`]: how a connector talks to its server); any other change — a filter's
    /// condition, a param, a column, another parallelism (each instance numbers its own rows)
    /// — gives another. A fingerprint of another form (another anduin) gives another too:
    /// a new lineage, never a reused one.
    pub fn lineage_digest(&self) -> String {
        self.lineage_digest_with(&[])
    }

    /// [`Self::lineage_digest`] of the query with the code it calls: the bytes of each UDF
    /// module it loads, in order (a module edited between two runs makes other rows from the
    /// same text). Without modules, the same as [`Self::lineage_digest`].
    pub fn lineage_digest_with(&self, modules: &[Vec<u8>]) -> String {
        let mut rows = self.clone();
        for o in &mut rows.operators {
            o.params
                .retain(|k, _| !WHERE_INPUT_ENDS.contains(&k.as_str()) && !client_setting(k));
        }
        let json = serde_json::to_vec(&rows)
            .expect("a fingerprint of strings, numbers, booleans and string maps serialises");
        let mut h = Sha256::new();
        h.update(&json);
        for m in modules {
            h.update(Sha256::digest(m));
        }
        h.finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The verdict of [`compare`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Compatibility {
    /// The same query.
    Identical,
    /// Changed only where no state is affected; each change described.
    Compatible {
        /// What changed, one sentence each.
        changes: Vec<String>,
    },
    /// The checkpoint cannot be restored into this query.
    Incompatible {
        /// The operator at fault.
        operator: String,
        /// What changed.
        what: String,
    },
}

/// Compares the query of a checkpoint (`old`) with the query about to run (`new`).
pub fn compare(old: &PlanFingerprint, new: &PlanFingerprint) -> Compatibility {
    if old == new {
        return Compatibility::Identical;
    }
    let old_ops: BTreeMap<&str, &OperatorFingerprint> =
        old.operators.iter().map(|o| (o.name.as_str(), o)).collect();
    let new_ops: BTreeMap<&str, &OperatorFingerprint> =
        new.operators.iter().map(|o| (o.name.as_str(), o)).collect();
    let mut changes = Vec::new();
    for (name, o) in &old_ops {
        match new_ops.get(name) {
            None if o.stateful => {
                return Compatibility::Incompatible {
                    operator: name.to_string(),
                    what: format!(
                        "it has state in the checkpoint ({}), but the query no longer has it",
                        o.kind
                    ),
                }
            }
            None => changes.push(format!("operator \"{name}\" was removed")),
            Some(n) => {
                if let Some(setting) = n
                    .params
                    .keys()
                    .chain(o.params.keys())
                    .find(|k| client_setting(k) && o.params.get(*k) != n.params.get(*k))
                {
                    changes.push(format!(
                        "operator \"{name}\": its client setting `{setting}` changed"
                    ));
                }
                if let Some(what) = difference(o, n) {
                    if o.stateful || n.stateful {
                        return Compatibility::Incompatible {
                            operator: name.to_string(),
                            what,
                        };
                    }
                    changes.push(format!("operator \"{name}\": {what}"));
                } else if o.parallelism != n.parallelism || o.instance_count() != n.instance_count()
                {
                    changes.push(format!(
                        "operator \"{name}\": its parallelism changed from {} to {}{}",
                        o.parallelism,
                        n.parallelism,
                        if o.stateful {
                            " (its state is re-cut by key group)"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
    }
    for (name, n) in &new_ops {
        if !old_ops.contains_key(name) {
            if n.stateful {
                return Compatibility::Incompatible {
                    operator: name.to_string(),
                    what: format!(
                        "it is new ({}) and has state, which the checkpoint does not have",
                        n.kind
                    ),
                };
            }
            changes.push(format!("operator \"{name}\" was added"));
        }
    }
    Compatibility::Compatible { changes }
}

/// How `new` differs from `old`, in one sentence, if it does.
fn difference(old: &OperatorFingerprint, new: &OperatorFingerprint) -> Option<String> {
    if old.kind != new.kind {
        return Some(format!(
            "its type changed from {} to {}",
            old.kind, new.kind
        ));
    }
    for (k, v) in old.params.iter().filter(|(k, _)| !client_setting(k)) {
        match new.params.get(k) {
            None => return Some(format!("param `{k}` was removed (it was \"{v}\")")),
            Some(nv) if nv != v => {
                return Some(format!("param `{k}` changed from \"{v}\" to \"{nv}\""))
            }
            Some(_) => {}
        }
    }
    if let Some(k) = new
        .params
        .keys()
        .find(|k| !client_setting(k) && !old.params.contains_key(*k))
    {
        return Some(format!("param `{k}` was added"));
    }
    if old.inputs != new.inputs {
        return Some(format!(
            "its input columns changed from {} to {}",
            old.inputs.join(" + "),
            new.inputs.join(" + ")
        ));
    }
    if old.outputs != new.outputs {
        return Some(format!(
            "its output columns changed from {} to {}",
            old.outputs.join(" + "),
            new.outputs.join(" + ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, kind: &str, stateful: bool, params: &[(&str, &str)]) -> OperatorFingerprint {
        OperatorFingerprint {
            name: name.into(),
            kind: kind.into(),
            stateful,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            inputs: vec![],
            outputs: vec!["(value int)".into()],
            parallelism: 1,
            instances: None,
        }
    }

    fn plan(ops: Vec<OperatorFingerprint>) -> PlanFingerprint {
        PlanFingerprint { operators: ops }
    }

    #[test]
    fn the_lineage_digest_changes_with_the_rows_and_not_with_where_the_input_ends() {
        let p = plan(vec![
            op(
                "src",
                "nats",
                true,
                &[("bounded", "false"), ("stream", "IN")],
            ),
            op("low", "filter", false, &[("condition", "value < 50")]),
        ]);
        let digest = p.lineage_digest();
        assert_eq!(digest.len(), 32);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
        assert_eq!(p.clone().lineage_digest(), digest, "stable");
        let mut bounded = p.clone();
        bounded.operators[0]
            .params
            .insert("bounded".into(), "true".into());
        assert_eq!(
            bounded.lineage_digest(),
            digest,
            "only where the input ends"
        );
        let mut patient = p.clone();
        patient.operators[0]
            .params
            .insert("connect.timeout".into(), "30s".into());
        assert_eq!(
            patient.lineage_digest(),
            digest,
            "a client setting changes no row (probe44)"
        );
        let mut edited = p.clone();
        edited.operators[1]
            .params
            .insert("condition".into(), "value >= 50".into());
        assert_ne!(edited.lineage_digest(), digest, "another filter");
        let mut wider = p.clone();
        wider.operators[1].parallelism = 2;
        assert_ne!(wider.lineage_digest(), digest, "another parallelism");
        let mut renamed = p.clone();
        renamed.operators[1].name = "high".into();
        assert_ne!(renamed.lineage_digest(), digest, "another operator");
        // Issue 19: a UDF module edited between two runs of the same text.
        assert_eq!(p.lineage_digest_with(&[]), digest, "no modules");
        let shift30 = p.lineage_digest_with(&[b"(module add 30)".to_vec()]);
        assert_ne!(shift30, digest, "a module");
        assert_ne!(
            p.lineage_digest_with(&[b"(module add 0)".to_vec()]),
            shift30,
            "another module"
        );
    }

    #[test]
    fn the_same_query_is_identical() {
        let p = plan(vec![op("src", "reader", true, &[("path", "a.csv")])]);
        assert_eq!(compare(&p, &p.clone()), Compatibility::Identical);
    }

    #[test]
    fn a_changed_stateless_operator_is_compatible_and_described() {
        let old = plan(vec![
            op("src", "reader", true, &[("path", "a.csv")]),
            op("low", "filter", false, &[("condition", "value < 42")]),
        ]);
        let new = plan(vec![
            op("src", "reader", true, &[("path", "a.csv")]),
            op("low", "filter", false, &[("condition", "value < 40")]),
            op("more", "map", false, &[]),
        ]);
        assert_eq!(
            compare(&old, &new),
            Compatibility::Compatible {
                changes: vec![
                    "operator \"low\": param `condition` changed from \"value < 42\" to \"value < 40\"".into(),
                    "operator \"more\" was added".into()
                ]
            }
        );
    }

    #[test]
    fn a_changed_or_missing_stateful_operator_is_incompatible_and_named() {
        let old = plan(vec![op("src", "reader", true, &[("path", "a.csv")])]);
        let moved = plan(vec![op("src", "reader", true, &[("path", "b.csv")])]);
        assert_eq!(
            compare(&old, &moved),
            Compatibility::Incompatible {
                operator: "src".into(),
                what: "param `path` changed from \"a.csv\" to \"b.csv\"".into()
            }
        );
        let gone = plan(vec![op("other", "generator", true, &[])]);
        assert!(matches!(
            compare(&old, &gone),
            Compatibility::Incompatible { operator, .. } if operator == "src"
        ));
        let retyped = plan(vec![op("src", "generator", true, &[("path", "a.csv")])]);
        assert_eq!(
            compare(&old, &retyped),
            Compatibility::Incompatible {
                operator: "src".into(),
                what: "its type changed from reader to generator".into()
            }
        );
    }

    #[test]
    fn a_client_setting_changed_on_a_stateful_operator_is_compatible_and_described() {
        let sink = |extra: &[(&'static str, &'static str)]| {
            let mut params = vec![("topic", "out"), ("properties.bootstrap.servers", "b:9092")];
            params.extend_from_slice(extra);
            plan(vec![op("out", "kafka", true, &params)])
        };
        let old = sink(&[]);
        let raised = sink(&[("properties.message.max.bytes", "2000000")]);
        assert_eq!(
            compare(&old, &raised),
            Compatibility::Compatible {
                changes: vec![
                    "operator \"out\": its client setting `properties.message.max.bytes` changed"
                        .into()
                ]
            }
        );
        let slower = sink(&[("connect.timeout", "30s")]);
        assert!(matches!(
            compare(&slower, &old),
            Compatibility::Compatible { .. }
        ));
        // The brokers are where the state's offsets are: not a client setting.
        let moved = plan(vec![op(
            "out",
            "kafka",
            true,
            &[("topic", "out"), ("properties.bootstrap.servers", "c:9092")],
        )]);
        assert!(matches!(
            compare(&old, &moved),
            Compatibility::Incompatible { .. }
        ));
    }

    #[test]
    fn another_parallelism_is_compatible_here_and_described() {
        let old = plan(vec![op("w", "window", true, &[("size", "1 s")])]);
        let mut new = old.clone();
        new.operators[0].parallelism = 4;
        assert_eq!(
            compare(&old, &new),
            Compatibility::Compatible {
                changes: vec![
                    "operator \"w\": its parallelism changed from 1 to 4 (its state is re-cut by key group)".into()
                ]
            }
        );
    }
}
