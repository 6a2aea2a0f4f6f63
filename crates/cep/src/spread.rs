//! Which patterns may spread their partial matches over further instances (paper §4.4), the
//! params that ask for it, and the bytes partial matches cross processes as.
//!
//! A partition's attempts (one per start row, each holding that row's partial matches) are
//! independent of each other only when a match suppresses no other and numbers nothing:
//! `after_match = "skip to next row"` (any other skip drops the later attempts that overlap
//! a match, which needs every attempt in one place), no `rows_per_match = "all with
//! unmatched"` (whether a row is in no match depends on every attempt), and no
//! `MATCH_NUMBER()` (it counts the matches of all attempts), and no condition that can fail on
//! a row (such a row is refused for every attempt). `within`, `timeout_output`, ALL
//! ROWS PER MATCH and `PREV` are per attempt and spread. Anything else is refused with the
//! reason, never run to a different answer.

use std::fmt;

use anduin_operator_api::{OnError, Params};
use anduin_types::Diagnostics;

use super::expr::E;
use super::matcher::{HandedPart, Pattern, Skip};
use super::store::{get_rows, get_u64, put_rows};

/// Why a pattern's partial matches cannot spread over several instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unspreadable {
    /// A skip other than to the next row: a match suppresses later overlapping attempts.
    Skip(&'static str),
    /// ALL ROWS PER MATCH WITH UNMATCHED ROWS: a row's fate depends on every attempt.
    Unmatched,
    /// `MATCH_NUMBER()` in a condition or measure numbers matches across attempts.
    MatchNumber(&'static str),
    /// A condition can fail on a row and such a row goes to the dead letters: it is then
    /// refused for every attempt.
    Fallible,
}

impl fmt::Display for Unspreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unspreadable::Skip(skip) => write!(
                f,
                "partial matches cannot spread over several instances with after_match \"{skip}\": a match suppresses the later matches that overlap it, which needs every partial match in one instance; spreading needs after_match = \"skip to next row\""
            ),
            Unspreadable::Unmatched => write!(
                f,
                "partial matches cannot spread over several instances with rows_per_match \"all with unmatched\": whether a row is in no match depends on every partial match; use \"all\" or \"one\""
            ),
            Unspreadable::MatchNumber(site) => write!(
                f,
                "partial matches cannot spread over several instances when a {site} uses MATCH_NUMBER(): it numbers the matches of every partial match of a partition; drop it"
            ),
            Unspreadable::Fallible => write!(
                f,
                "partial matches cannot spread over several instances when a condition can fail on a row (arithmetic or SUM, which can overflow; a division, a cast, a function that can fail) and a row it fails on goes to the dead letters: such a row is dropped for every partial match, which needs them all in one instance; set on_error = \"fail\" (the query then stops on such a row, spread or not) or make the conditions comparisons of columns, PREV, COUNT, AVG, MIN, MAX"
            ),
        }
    }
}

/// Whether the attempts of `pattern` (with `measures`, and `on_error` as set) are
/// independent of each other, so that they may spread over several instances; if not, why.
///
/// A row a condition fails on is refused for every attempt, or (`on_error = "fail"`) stops
/// the query. Spread, only the instances whose attempts try that condition see it fail: so
/// only the stop is the same (the set of conditions tried on a row is that of one instance,
/// without pruning across attempts under skip to next row).
pub(crate) fn spreadable<'a>(
    pattern: &Pattern,
    measures: impl IntoIterator<Item = &'a E>,
    on_error: Option<OnError>,
) -> Result<(), Unspreadable> {
    match pattern.skip {
        Skip::ToNextRow => {}
        Skip::PastLastRow => return Err(Unspreadable::Skip("skip past last row")),
        Skip::ToFirst(_) => return Err(Unspreadable::Skip("skip to first …")),
        Skip::ToLast(_) => return Err(Unspreadable::Skip("skip to last …")),
    }
    if pattern.unmatched {
        return Err(Unspreadable::Unmatched);
    }
    if pattern.fallible && on_error != Some(OnError::Fail) {
        return Err(Unspreadable::Fallible);
    }
    if pattern.defines.iter().flatten().any(numbers) {
        return Err(Unspreadable::MatchNumber("condition (define)"));
    }
    if measures.into_iter().any(numbers) {
        return Err(Unspreadable::MatchNumber("measure"));
    }
    Ok(())
}

fn numbers(e: &E) -> bool {
    let mut found = false;
    e.walk(&mut |e| found |= matches!(e, E::MatchNumber));
    found
}

/// What `overflow_instances` and `max_partial_matches` ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// How many instances (the one that starts matches and those that extend) at most.
    pub instances: u64,
    /// How many partial matches one instance keeps before it hands the oldest on.
    pub max_partial_matches: u64,
    /// Hand on by age instead (the pipelined form `P+ = P ∨ (P P+)`): copy k keeps the
    /// attempts that started less than k + 1 times this many milliseconds before its event
    /// time, and hands older ones on.
    pub stage_age_ms: Option<u64>,
}

/// The most instances `overflow_instances` may ask for.
const MAX_INSTANCES: i64 = 64;

/// The default of `max_partial_matches`.
pub(crate) const DEFAULT_MAX_PARTIAL_MATCHES: u64 = 1_000_000;

/// The params that ask for spreading, checked against the pattern: `None` if they do not ask
/// for it; refused with the reason where the pattern's matches depend on each other. With
/// `parallelism` each copy runs as many instances, instance i of each handing to instance i
/// of the next (they read the same key groups).
pub(crate) fn overflow<'a>(
    p: &Params<'_>,
    pattern: &Pattern,
    measures: impl IntoIterator<Item = &'a E>,
) -> Result<Option<Overflow>, Diagnostics> {
    let instances = p.int("overflow_instances");
    let max = p.int("max_partial_matches");
    if let Some(n) = instances.filter(|n| *n < 1) {
        return Err(p
            .error(
                "overflow_instances",
                format!("must be at least 1, found {n}"),
            )
            .into());
    }
    if let Some(n) = max.filter(|n| *n < 1) {
        return Err(p
            .error(
                "max_partial_matches",
                format!("must be at least 1, found {n}"),
            )
            .into());
    }
    if let Some(n) = instances.filter(|n| *n > MAX_INSTANCES) {
        return Err(p
            .error(
                "overflow_instances",
                format!("must be at most {MAX_INSTANCES}, found {n}"),
            )
            .into());
    }
    let instances = instances.unwrap_or(1).unsigned_abs();
    let stage_age_ms = match p.text("stage_age") {
        None => None,
        Some(t) => Some(
            anduin_types::parse_duration_ms(t.as_str())
                .filter(|ms| *ms > 0)
                .ok_or_else(|| {
                    Diagnostics::from(
                        p.error("stage_age", "must be a positive duration, e.g. \"5s\""),
                    )
                })?,
        ),
    };
    if stage_age_ms.is_some() && max.is_some() {
        return Err(p
            .error(
                "stage_age",
                "a pattern's copies hand partial matches on by age (`stage_age`) or by their number (`max_partial_matches`), not both: remove one of them",
            )
            .into());
    }
    // Like `max_partial_matches`, `stage_age` says how copies hand on: without copies
    // (`overflow_instances = 1`, so that one query text runs with and without) it does nothing.
    if instances <= 1 {
        return Ok(None);
    }
    spreadable(pattern, measures, OnError::param(p))
        .map_err(|why| p.error("overflow_instances", why))?;
    if p.text("timeout_output").is_some() {
        return Err(p
            .error(
                "overflow_instances",
                "a pattern that spreads its partial matches over copies with `timeout_output` is not supported yet (each copy has one output, united with the others'); remove one of them",
            )
            .into());
    }
    Ok(Some(Overflow {
        instances,
        max_partial_matches: max.map_or(DEFAULT_MAX_PARTIAL_MATCHES, i64::unsigned_abs),
        stage_age_ms,
    }))
}

/// The first byte of handed partial matches: the version of the form below.
const VERSION: u8 = 1;

/// Handed partial matches as bytes: the version, the number of partitions, then per
/// partition its key (length, bytes), the index of its first row, its start rows (count,
/// each) and its rows.
pub(crate) fn encode(parts: &[(Box<[u8]>, HandedPart)]) -> Vec<u8> {
    let mut out = vec![VERSION];
    out.extend_from_slice(&(parts.len() as u64).to_le_bytes());
    for (key, part) in parts {
        out.extend_from_slice(&(key.len() as u64).to_le_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(&part.from.to_le_bytes());
        out.extend_from_slice(&(part.starts.len() as u64).to_le_bytes());
        for s in &part.starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
        put_rows(&mut out, part.rows.iter());
    }
    out
}

/// [`encode`]'s partitions back; `None` if the bytes are not of that form.
pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<(Box<[u8]>, HandedPart)>> {
    let (version, mut r) = bytes.split_first()?;
    if *version != VERSION {
        return None;
    }
    let n = usize::try_from(get_u64(&mut r)?).ok()?;
    let mut parts = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let len = usize::try_from(get_u64(&mut r)?).ok()?;
        if r.len() < len {
            return None;
        }
        let (key, rest) = r.split_at(len);
        r = rest;
        let from = get_u64(&mut r)?;
        let count = usize::try_from(get_u64(&mut r)?).ok()?;
        let mut starts = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            starts.push(get_u64(&mut r)?);
        }
        let rows = get_rows(&mut r)?;
        let part = HandedPart { from, starts, rows };
        if !part.is_consistent() {
            return None;
        }
        parts.push((key.into(), part));
    }
    r.is_empty().then_some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::Row;
    use crate::value::Value;

    fn part(from: u64, starts: Vec<u64>, n: i64) -> HandedPart {
        HandedPart {
            from,
            starts,
            rows: (0..n)
                .map(|i| Row {
                    ts: i,
                    cells: vec![Value::Int(i), Value::Str("x".into())].into(),
                })
                .collect(),
        }
    }

    #[test]
    fn handed_partial_matches_round_trip_through_bytes_and_garbage_is_refused() {
        let parts: Vec<(Box<[u8]>, HandedPart)> = vec![
            (b"k1".to_vec().into(), part(3, vec![4, 6], 5)),
            (Box::new([]), part(0, vec![0], 1)),
        ];
        let bytes = encode(&parts);
        assert_eq!(decode(&bytes), Some(parts.clone()));
        assert_eq!(decode(&encode(&[])), Some(Vec::new()));
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None, "a byte more");
        let mut version = bytes;
        version[0] = VERSION + 1;
        assert_eq!(decode(&version), None, "another version");
        // Starts outside the rows, or not ascending, are refused.
        for bad in [
            part(3, vec![2], 5),
            part(3, vec![8], 5),
            part(3, vec![5, 4], 5),
            part(3, vec![], 5),
        ] {
            assert_eq!(
                decode(&encode(&[(Box::new([]), bad.clone())])),
                None,
                "{bad:?}"
            );
        }
    }
}
