//! What the rules ask about operators that the graph alone does not say: whether an operator
//! keeps state, and measured figures (`rate(f)`). The caller implements [`Facts`] (the planner
//! from its operator registry, the coordinator from live metrics), so this crate stays pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::Operator;

/// Facts about operators, asked by constraints. Only [`Facts::is_stateless`] is required;
/// type and params default to the graph's own, figures to "not measured".
pub trait Facts {
    /// Whether the operator keeps no state between rows (`stateless(x)`; `stateful(x)` is its
    /// negation).
    ///
    /// # Examples
    ///
    /// ```
    /// use anduin_rewrite::{Facts, Operator};
    /// struct FiltersOnly;
    /// impl Facts for FiltersOnly {
    ///     fn is_stateless(&self, op: &Operator) -> bool {
    ///         op.kind == "filter"
    ///     }
    /// }
    /// assert!(FiltersOnly.is_stateless(&Operator::new("f", "filter")));
    /// assert_eq!(FiltersOnly.figure(&Operator::new("f", "filter"), "rate"), None);
    /// ```
    fn is_stateless(&self, op: &Operator) -> bool;

    /// The operator's type (`type(x)`); defaults to [`Operator::kind`].
    fn kind<'a>(&self, op: &'a Operator) -> &'a str {
        &op.kind
    }

    /// A param's value (`param(x, "key")`); defaults to the operator's params.
    fn param<'a>(&self, op: &'a Operator, key: &str) -> Option<&'a str> {
        op.param(key)
    }

    /// A measured figure by name (`rate(x)`), or `None` when not measured (a comparison with
    /// it is then false). Defaults to `None`.
    fn figure(&self, op: &Operator, figure: &str) -> Option<f64> {
        let _ = (op, figure);
        None
    }
}

/// [`Facts`] from a list of stateless operator types and a table of figures by operator name:
/// enough for tests and for a planner that knows statelessness by type.
#[derive(Clone, Debug, Default)]
pub struct TableFacts {
    /// The operator types that keep no state.
    pub stateless: BTreeSet<String>,
    /// Figures by (operator name, figure name).
    pub figures: BTreeMap<(String, String), f64>,
}

impl TableFacts {
    /// Facts in which the given types are stateless.
    pub fn stateless<'a>(types: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            stateless: types.into_iter().map(str::to_string).collect(),
            figures: BTreeMap::new(),
        }
    }

    /// The facts with a figure set for an operator.
    pub fn with_figure(mut self, op: &str, figure: &str, value: f64) -> Self {
        self.figures
            .insert((op.to_string(), figure.to_string()), value);
        self
    }
}

impl Facts for TableFacts {
    fn is_stateless(&self, op: &Operator) -> bool {
        self.stateless.contains(&op.kind)
    }

    fn figure(&self, op: &Operator, figure: &str) -> Option<f64> {
        self.figures
            .get(&(op.name.clone(), figure.to_string()))
            .copied()
    }
}
