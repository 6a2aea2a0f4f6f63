//! The built-in rules, one per pattern of the paper, in `builtin.rules` (compiled into the
//! crate). The file is the documentation: read it for what each rule does and which QoS param
//! asks for it.

use crate::rule::RuleSet;
use crate::rule_parse::parse_rules;

/// The text of the built-in rules (`src/builtin.rules`).
pub const BUILTIN_RULES: &str = include_str!("builtin.rules");

/// The built-in rules, parsed: `simple_standby`, `checkpointing`, `hot_standby`,
/// `hot_standby_2`, `partitioning`, `partitioning_2`, `partitioning_source`, `pipelining`,
/// `pipelining_source`, `pipelining_2`, `pattern_overflow`.
///
/// # Examples
///
/// ```
/// let rules = anduin_rewrite::builtin_rules();
/// assert!(rules.get("hot_standby").is_some());
/// ```
pub fn builtin_rules() -> RuleSet {
    parse_rules("builtin.rules", BUILTIN_RULES)
        .expect("the built-in rules parse: the crate's tests parse them")
}

#[cfg(test)]
mod tests;
