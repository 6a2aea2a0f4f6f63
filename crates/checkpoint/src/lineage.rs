//! The lineage of a store's checkpoints and the query it was drawn for: what is kept beside
//! them, and whether a start keeps it or draws another ([`decide`]). [`crate::Store::lineage`]
//! is the I/O around it.
//!
//! Sinks name what they write by the lineage (a NATS sink's message ids end with the row's
//! number in it), so a run started again before its first checkpoint completed, with the same
//! lineage, gives its rows the ids they had and the stream drops the ones it already stored.
//! That holds only if the rows are the same: a query edited between the two runs (another
//! filter) gives other rows the same numbers, and the stream would drop them as duplicates,
//! silently. So the lineage is kept with the digest of the query it was drawn for
//! ([`crate::plan::PlanFingerprint::lineage_digest`]), and a start keeps it only for the same
//! query.
//!
//! The same holds for a run resumed from a checkpoint: its sinks number the rows after the
//! checkpoint from the count the checkpoint kept, and the killed run had given those numbers
//! to the rows it wrote after that checkpoint. A query edited in a way the checkpoint still
//! fits (another filter) makes other rows, which the stream would drop as duplicates. So a
//! resumed run of another query than the one the lineage was drawn for draws another too, and
//! its sinks take the runner's lineage rather than the one their checkpoint recorded (they
//! keep the checkpoint's count: numbers in a new lineage are new ids whatever they start
//! from). A run of the edited query killed before its own first checkpoint, resumed from the
//! same checkpoint, finds the lineage drawn for it and gives its rows the ids they had.
//!
//! The file (or object) holds the lineage on its first line and, since the digest is kept,
//! `query DIGEST` on a second:
//!
//! ```text
//! 3f9c0a5be2d14471
//! query 0c5b7e1f9a2d4e6b8c0d1f2a3b4c5d6e
//! ```
//!
//! One of an older anduin holds the lineage alone: the query it was drawn for is unknown, and
//! a start with no checkpoint draws another (the rows the earlier run wrote may then be written
//! twice, which shows, rather than another query's rows dropped, which does not).
//!
//! The same query may still make other rows when what it reads is not what it read: a NATS
//! stream deleted and made again numbers its messages from 1 again. A run killed before its
//! first checkpoint and started again then reads the new stream under the earlier run's
//! lineage, and its sink gives the new rows the ids of the earlier ones, dropped as duplicates.
//! A checkpoint keeps what a source needs to tell (when its stream was made); before the first
//! one, the lineage does: each operator may keep facts beside it ([`KeptFacts`], one file or
//! object per operator under [`crate::LINEAGE_FACTS_DIR`], [`crate::Store::keep_lineage_fact`]),
//! and a fresh start of the same lineage compares its own with them ([`decide_fact`]). Facts
//! kept for another lineage are another run's: a new lineage starts with none.
//!
//! ```text
//! lineage 3f9c0a5be2d14471
//! stream.created 2024-05-01 10:00:00.123 +00:00:00
//! ```

use std::collections::BTreeMap;

/// What the lineage file or object holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLineage {
    /// The lineage: 1 to 64 ASCII letters and digits.
    pub lineage: String,
    /// The digest of the query it was drawn for; `None` when kept by an older anduin.
    pub query: Option<String>,
}

/// The prefix of the line that names the query.
const QUERY_LINE: &str = "query ";

impl KeptLineage {
    /// Reads the text of a lineage file; `None` if it is not one (a bad lineage, a second line
    /// that is not `query DIGEST`, or more lines).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut lines = text.trim().lines().map(str::trim);
        let lineage = lines.next().filter(|l| valid_lineage(l))?.to_string();
        let query = match lines.next() {
            None => None,
            Some(line) => {
                let digest = line.strip_prefix(QUERY_LINE)?.trim();
                if !valid_digest(digest) {
                    return None;
                }
                Some(digest.to_string())
            }
        };
        if lines.next().is_some() {
            return None;
        }
        Some(Self { lineage, query })
    }

    /// The text of its file.
    pub(crate) fn to_text(&self) -> String {
        match &self.query {
            Some(q) => format!("{}\n{QUERY_LINE}{q}\n", self.lineage),
            None => format!("{}\n", self.lineage),
        }
    }
}

/// How a run starts, as far as its lineage goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineageStart {
    /// From a checkpoint: its sinks number the rows after it from the count it recorded.
    Resume,
    /// From nothing, with no checkpoint to resume from (none yet, or only incomplete ones):
    /// perhaps a run killed before its first checkpoint, started again.
    Fresh,
    /// From nothing, on purpose (`--from-scratch`): its earlier output is not to be repeated.
    StartOver,
}

/// What a start does with the kept lineage: the verdict of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum LineageDecision {
    /// Keep it: a start of the query it was drawn for.
    Keep,
    /// Draw another, and keep it with the query's digest.
    Draw(DrawReason),
}

/// Why a start draws a new lineage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DrawReason {
    /// None is kept: the first run with checkpoints here.
    NoneKept,
    /// A deliberate start over.
    StartOver,
    /// A start of another query than the one the kept lineage was drawn for: reusing it would
    /// give its rows the ids of the other query's rows, dropped as duplicates.
    QueryChanged,
    /// The kept lineage does not say which query it was drawn for (kept by an older anduin):
    /// it may be another's, so it is not reused.
    QueryUnknown,
}

impl DrawReason {
    /// What to tell the user, when a lineage they may have expected to be kept is not (the
    /// earlier run's rows are written again rather than deduplicated).
    pub fn notice(self) -> Option<&'static str> {
        match self {
            DrawReason::NoneKept | DrawReason::StartOver => None,
            DrawReason::QueryChanged => Some("the query or its parallelism changed since the lineage was drawn: a new lineage"),
            DrawReason::QueryUnknown => Some(
                "the lineage kept does not say which query it was drawn for (an older anduin kept it): a new lineage",
            ),
        }
    }
}

/// Whether a start of the query of digest `query`, `start`ing as it does, keeps the lineage
/// `kept` (if any) or draws another.
pub fn decide(kept: Option<&KeptLineage>, start: LineageStart, query: &str) -> LineageDecision {
    match (start, kept) {
        (LineageStart::StartOver, _) => LineageDecision::Draw(DrawReason::StartOver),
        (_, None) => LineageDecision::Draw(DrawReason::NoneKept),
        (LineageStart::Fresh | LineageStart::Resume, Some(k)) => match k.query.as_deref() {
            Some(q) if q == query => LineageDecision::Keep,
            Some(_) => LineageDecision::Draw(DrawReason::QueryChanged),
            None => LineageDecision::Draw(DrawReason::QueryUnknown),
        },
    }
}

/// The lineage a start takes ([`crate::Store::lineage`]), and how it came by it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct TakenLineage {
    /// The lineage.
    pub lineage: String,
    /// Kept, or drawn and why.
    pub decision: LineageDecision,
}

/// Whether `s` may be a lineage: 1 to 64 ASCII letters and digits.
pub(crate) fn valid_lineage(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether `s` may be a query's digest: 1 to 128 hex digits.
fn valid_digest(s: &str) -> bool {
    (1..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What an operator kept beside the lineage: facts of its own, by name, for one lineage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFacts {
    /// The lineage they were kept for.
    pub lineage: String,
    /// Fact name → value: a name of letters, digits, `.`, `-` and `_`; a value of one line.
    pub facts: BTreeMap<String, String>,
}

/// The prefix of the line that names the lineage facts were kept for.
const LINEAGE_LINE: &str = "lineage ";

impl KeptFacts {
    /// Reads the text of an operator's facts file; `None` if it is not one.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut lines = text.trim().lines().map(str::trim);
        let lineage = lines
            .next()?
            .strip_prefix(LINEAGE_LINE)
            .map(str::trim)
            .filter(|l| valid_lineage(l))?
            .to_string();
        let mut facts = BTreeMap::new();
        for line in lines {
            let (name, value) = line.split_once(' ')?;
            if !valid_fact_name(name) {
                return None;
            }
            facts.insert(name.to_string(), value.trim().to_string());
        }
        Some(Self { lineage, facts })
    }

    /// The text of its file.
    pub(crate) fn to_text(&self) -> String {
        let mut text = format!("{LINEAGE_LINE}{}\n", self.lineage);
        for (name, value) in &self.facts {
            text.push_str(&format!("{name} {value}\n"));
        }
        text
    }
}

/// What a fresh start's fact is beside the one kept for its lineage: the verdict of
/// [`decide_fact`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum FactDecision {
    /// The same value is kept: the start sees what the earlier run of its lineage saw.
    Same,
    /// None is kept for this lineage (its first run, or a run before it kept none): keep
    /// these facts (the kept ones of the lineage and this one).
    Keep(KeptFacts),
    /// Another value is kept: what the earlier run of the lineage saw (`kept`) is not what
    /// this start sees.
    Differs {
        /// The value kept.
        kept: String,
    },
}

/// What a fresh start in lineage `lineage` that sees `value` for fact `fact` makes of the
/// facts its operator kept (`kept`, if any).
pub fn decide_fact(
    kept: Option<&KeptFacts>,
    lineage: &str,
    fact: &str,
    value: &str,
) -> FactDecision {
    let mut facts = match kept {
        Some(k) if k.lineage == lineage => match k.facts.get(fact) {
            Some(v) if v == value => return FactDecision::Same,
            Some(v) => return FactDecision::Differs { kept: v.clone() },
            None => k.facts.clone(),
        },
        // Another lineage's: another run's, not to be compared with.
        _ => BTreeMap::new(),
    };
    facts.insert(fact.to_string(), value.to_string());
    FactDecision::Keep(KeptFacts {
        lineage: lineage.to_string(),
        facts,
    })
}

/// What [`crate::Store::keep_lineage_fact`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum FactCheck {
    /// None was kept for the lineage: this one is now.
    New,
    /// The same was kept.
    Same,
    /// Another was kept, which stays.
    Differs {
        /// The value kept.
        kept: String,
    },
}

/// Whether `s` may name a fact: 1 to 64 ASCII letters, digits, `.`, `-` and `_`.
pub(crate) fn valid_fact_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// Whether `s` may be a fact's value: one line.
pub(crate) fn valid_fact_value(s: &str) -> bool {
    !s.contains(['\n', '\r']) && s.trim() == s
}

/// The name of operator `operator`'s facts file: the name itself when it is made of ASCII
/// letters, digits, `-` and `_` (and not too long), else `=` and its bytes in hexadecimal (a
/// name no plain one can be).
pub fn facts_file_name(operator: &str) -> String {
    let plain = (1..=100).contains(&operator.len())
        && operator
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    if plain {
        operator.to_string()
    } else {
        let hex: String = operator.bytes().map(|b| format!("{b:02x}")).collect();
        format!("={hex}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(query: Option<&str>) -> KeptLineage {
        KeptLineage {
            lineage: "3f9c0a5be2d14471".into(),
            query: query.map(String::from),
        }
    }

    #[test]
    fn a_fresh_or_resumed_start_keeps_the_lineage_of_its_own_query_only() {
        // Issue 19: a resumed run of an edited query kept the checkpoint's lineage, and the
        // rows it wrote after the checkpoint got the ids of the killed run's, dropped.
        let same = kept(Some("0c5b"));
        for start in [LineageStart::Fresh, LineageStart::Resume] {
            assert_eq!(decide(Some(&same), start, "0c5b"), LineageDecision::Keep);
            assert_eq!(
                decide(Some(&same), start, "9d7e"),
                LineageDecision::Draw(DrawReason::QueryChanged),
                "{start:?}"
            );
            assert_eq!(
                decide(Some(&kept(None)), start, "0c5b"),
                LineageDecision::Draw(DrawReason::QueryUnknown)
            );
            assert_eq!(
                decide(None, start, "0c5b"),
                LineageDecision::Draw(DrawReason::NoneKept)
            );
        }
    }

    #[test]
    fn a_start_over_never_keeps_the_lineage() {
        for k in [kept(Some("9d7e")), kept(None)] {
            assert_eq!(
                decide(Some(&k), LineageStart::StartOver, "9d7e"),
                LineageDecision::Draw(DrawReason::StartOver)
            );
        }
    }

    #[test]
    fn the_file_holds_the_lineage_and_its_query_and_an_older_one_the_lineage_alone() {
        let k = kept(Some("0c5b7e1f"));
        assert_eq!(k.to_text(), "3f9c0a5be2d14471\nquery 0c5b7e1f\n");
        assert_eq!(KeptLineage::parse(&k.to_text()), Some(k));
        assert_eq!(KeptLineage::parse("3f9c0a5be2d14471\n"), Some(kept(None)));
        assert_eq!(kept(None).to_text(), "3f9c0a5be2d14471\n");
        for bad in [
            "",
            "not/a lineage\n",
            "3f9c\nquery\n",
            "3f9c\nquery xyz\n",
            "3f9c\nplan 0c5b\n",
            "3f9c\nquery 0c5b\nmore\n",
        ] {
            assert_eq!(KeptLineage::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_fresh_start_compares_its_fact_with_the_one_kept_for_its_lineage_only() {
        // Issue 19 (H6): a stream made again before the first checkpoint was read under the
        // earlier run's lineage, and the sink dropped the new rows as duplicates.
        let created = "2024-05-01 10:00:00.0 +00:00:00";
        let first = decide_fact(None, "3f9c", "stream.created", created);
        let FactDecision::Keep(kept) = first else {
            panic!("kept: {first:?}")
        };
        assert_eq!(kept.lineage, "3f9c");
        assert_eq!(
            decide_fact(Some(&kept), "3f9c", "stream.created", created),
            FactDecision::Same
        );
        assert_eq!(
            decide_fact(Some(&kept), "3f9c", "stream.created", "2024-05-02"),
            FactDecision::Differs {
                kept: created.into()
            },
            "the stream was made again since the earlier run of the lineage"
        );
        let other = decide_fact(Some(&kept), "77aa", "stream.created", "2024-05-02");
        assert!(
            matches!(&other, FactDecision::Keep(k) if k.lineage == "77aa" && k.facts.len() == 1),
            "another lineage's facts are not compared: {other:?}"
        );
        let more = decide_fact(Some(&kept), "3f9c", "other", "x");
        assert!(
            matches!(&more, FactDecision::Keep(k) if k.facts.len() == 2),
            "{more:?}"
        );
    }

    #[test]
    fn a_facts_file_holds_its_lineage_then_a_fact_a_line() {
        let k = KeptFacts {
            lineage: "3f9c".into(),
            facts: [(
                "stream.created".to_string(),
                "2024-05-01 10:00 +0".to_string(),
            )]
            .into(),
        };
        assert_eq!(
            k.to_text(),
            "lineage 3f9c\nstream.created 2024-05-01 10:00 +0\n"
        );
        assert_eq!(KeptFacts::parse(&k.to_text()), Some(k));
        for bad in [
            "",
            "3f9c\n",
            "lineage not/one\n",
            "lineage 3f9c\nno-value\n",
            "lineage 3f9c\nbad/name x\n",
        ] {
            assert_eq!(KeptFacts::parse(bad), None, "{bad:?}");
        }
        assert_eq!(facts_file_name("in_1-a"), "in_1-a");
        assert_eq!(facts_file_name("a b"), "=612062");
        assert_eq!(facts_file_name("../x"), "=2e2e2f78");
    }
}
