//! A pattern operator among copies that spread its partial matches (paper §4.4; see
//! `anduin_operator_api::spread`): every copy receives the whole input; the starting copy
//! starts matches, the others only extend the partial matches handed to them. At a point
//! between two inputs (a barrier, where every copy has taken the same rows and watermarks),
//! a copy over its limit hands its oldest attempts, per partition a prefix of them, with the
//! rows they need; the taker replays those rows starting only them (`matcher/handing.rs`).
//! Rows still waiting for the watermark are not handed: every copy has them.
//!
//! Checkpoints: the starting copy's resume point moves past what it handed, so that a
//! restore does not start those attempts again; an extending copy keeps the start rows of
//! its attempts, and a restore starts exactly those again.

use std::sync::Arc;

use anduin_operator_api::{Collector, Handed, OperatorError, SpreadRole};

use super::super::matcher::AdoptError;
use super::super::output::render;
use super::super::spread::{decode, encode, spreadable};
use super::{store_error, PatternOp};

impl PatternOp {
    /// Whether this copy only extends the partial matches handed to it.
    pub(super) fn extend_only(&self) -> bool {
        self.role == Some(SpreadRole::Extend)
    }

    /// Refuses, with the reason, a pattern whose partial matches cannot spread, and an
    /// operator whose change of definition has not taken effect.
    fn check_spreadable(&self) -> Result<(), OperatorError> {
        let setup = &self.setup;
        let measures = setup.measures.iter().map(|(_, e)| e);
        spreadable(&setup.pattern, measures, setup.on_error).map_err(|why| {
            OperatorError::Config {
                operator: setup.name.clone(),
                message: why.to_string(),
            }
        })?;
        if self.next.is_some() {
            return Err(OperatorError::internal(
                &setup.name,
                "partial matches were to be handed over while a change of the pattern was still to take effect (the runtime lets changes take effect at the barrier first)",
            ));
        }
        Ok(())
    }

    /// [`Operator::set_spread_role`](anduin_operator_api::Operator::set_spread_role).
    pub(super) fn set_role(&mut self, role: SpreadRole) -> Result<(), OperatorError> {
        self.check_spreadable()?;
        if role == SpreadRole::Extend && self.seq > 0 && !self.extend_only() {
            return Err(OperatorError::internal(
                &self.setup.name,
                "a pattern instance that has started matches was made one that only extends",
            ));
        }
        self.role = Some(role);
        self.store.set_extend_only(role == SpreadRole::Extend);
        Ok(())
    }

    /// [`Operator::spread`](anduin_operator_api::Operator::spread): hands the attempts that
    /// started before the event time at which the oldest `partial_matches - keep` of them
    /// started (so that at most `keep` stay; more go where attempts started at one time).
    pub(super) fn hand(&mut self, keep: u64) -> Result<Handed, OperatorError> {
        self.check_spreadable()?;
        let total = self.figures.partial_matches;
        let keep = usize::try_from(keep).unwrap_or(usize::MAX);
        let mut times: Vec<i64> = Vec::new();
        if total > keep {
            times.extend(self.store.live().flat_map(|p| p.attempt_times()));
        }
        // The counted figure is the attempts kept (checked in debug builds by `metrics`).
        let excess = total.saturating_sub(keep).min(times.len());
        let before = (excess > 0).then(|| {
            let (_, nth, _) = times.select_nth_unstable(excess - 1);
            nth.saturating_add(1)
        });
        self.hand_before(before)
    }

    /// [`Operator::spread_older`](anduin_operator_api::Operator::spread_older): hands the
    /// attempts that started more than `age_ms` before the watermark (none before the first
    /// watermark).
    pub(super) fn hand_older(&mut self, age_ms: u64) -> Result<Handed, OperatorError> {
        self.check_spreadable()?;
        let age = i64::try_from(age_ms).unwrap_or(i64::MAX);
        let before = (self.watermark != i64::MIN).then(|| self.watermark.saturating_sub(age));
        self.hand_before(before)
    }

    /// Hands the attempts that started before event time `before` (none: `None`).
    fn hand_before(&mut self, before: Option<i64>) -> Result<Handed, OperatorError> {
        let role = self.role.unwrap_or_default();
        self.role = Some(role);
        let setup = Arc::clone(&self.setup);
        let mut parts = Vec::new();
        if let Some(before) = before {
            let figures = &mut self.figures;
            self.store.each_live(|key, part| {
                let Some(piece) = part.hand(&setup.pattern, before) else {
                    return false;
                };
                figures.partial_matches =
                    figures.partial_matches.saturating_sub(piece.starts.len());
                let dropped = part.trim(&setup.pattern);
                figures.kept(part, 0, dropped);
                parts.push((Box::<[u8]>::from(key), piece));
                true
            });
            let forgotten = self
                .store
                .forget_blank(&setup.pattern)
                .map_err(|e| store_error(&setup.name, e))?;
            self.figures.kept = self.figures.kept.saturating_sub(forgotten);
        }
        let partial_matches: usize = parts.iter().map(|(_, p)| p.starts.len()).sum();
        tracing::info!(
            operator = %setup.name,
            partial_matches,
            partitions = parts.len(),
            kept = self.figures.partial_matches,
            "handed partial matches to another instance"
        );
        Ok(Handed {
            partial_matches: partial_matches as u64,
            partitions: parts.len() as u64,
            bytes: encode(&parts),
        })
    }

    /// [`Operator::take_spread`](anduin_operator_api::Operator::take_spread): only a copy
    /// that extends takes partial matches (a starting one would start them again after a
    /// restore).
    pub(super) fn adopt(
        &mut self,
        handed: Handed,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.check_spreadable()?;
        let setup = Arc::clone(&self.setup);
        if !self.extend_only() {
            return Err(OperatorError::internal(
                &setup.name,
                "partial matches were handed to an instance that starts matches: only one that extends takes them (set_spread_role(Extend) first)",
            ));
        }
        let parts = decode(&handed.bytes).ok_or_else(|| {
            OperatorError::internal(
                &setup.name,
                format!(
                    "the partial matches handed over ({} bytes) are not of the form this version writes",
                    handed.bytes.len()
                ),
            )
        })?;
        let taken = parts.len();
        for (key, piece) in parts {
            let part = self
                .store
                .get_mut(&setup.pattern, &key)
                .map_err(|e| store_error(&setup.name, e))?
                .part;
            let before = part.attempts_kept();
            let rows_before = part.rows_kept();
            part.adopt(&setup.pattern, &mut self.scratch, piece, &mut self.outcomes)
                .map_err(|e| adopt_error(&setup.name, e))?;
            part.advance(&setup.pattern, self.watermark, &mut self.outcomes);
            if !self.outcomes.is_empty() {
                self.figures.outcomes(&self.outcomes);
                render(
                    &setup,
                    part,
                    &mut self.outcomes,
                    &mut self.main,
                    &mut self.timeouts,
                    &self.errors,
                )?;
            }
            let _dropped = part.trim(&setup.pattern);
            self.figures.kept(part, part.rows_kept(), rows_before);
            self.figures.partial(before, part);
        }
        let forgotten = self
            .store
            .forget_blank(&setup.pattern)
            .map_err(|e| store_error(&setup.name, e))?;
        self.figures.kept = self.figures.kept.saturating_sub(forgotten);
        // The attempts taken end by their time bounds as the others do.
        let watermark = self.watermark;
        self.store
            .queue_all(|part| part.next_deadline(&setup.pattern, watermark));
        tracing::info!(
            operator = %setup.name,
            partial_matches = handed.partial_matches,
            partitions = taken,
            kept = self.figures.partial_matches,
            "took partial matches from another instance"
        );
        self.flush(out)
    }
}

fn adopt_error(operator: &str, e: AdoptError) -> OperatorError {
    match e {
        AdoptError::Replay(refused) => OperatorError::internal(
            operator,
            format!("replaying the rows of partial matches handed over refused one the giver had taken: {refused:?}"),
        ),
        AdoptError::Inconsistent => OperatorError::internal(
            operator,
            "partial matches handed over start outside their rows",
        ),
        AdoptError::Misaligned {
            from,
            next,
            taker_next,
        } => OperatorError::internal(
            operator,
            format!("partial matches handed over with rows {from}..{next} do not line up with the taker's partition, whose next row is {taker_next}"),
        ),
        AdoptError::Duplicate { start } => OperatorError::internal(
            operator,
            format!("partial matches from row {start} of a partition were handed to an instance that holds them already"),
        ),
    }
}
