//! Resuming from a checkpoint: refusing one of a query that changed where state is kept, and
//! opening what each operator instance restores from.

use anduin_checkpoint::plan::{compare, Compatibility, PlanFingerprint};
use anduin_checkpoint::{instance_key, ChangeRecord, CheckpointDir, Validated};
use anduin_operator_api::{OperatorError, RescaleError, RestoreIn};
use anduin_state::{intersection, redistribute, OldInstance, DEFAULT_MAX_KEY_GROUPS};
use anduin_types::Epoch;
use tracing::info;

use crate::error::RuntimeError;
use crate::rescale::owned;

/// Refuses a checkpoint of a query that changed where state is kept.
pub(crate) fn check_compatible(
    restore: &Validated,
    current: &PlanFingerprint,
) -> Result<(), RuntimeError> {
    match compare(&restore.manifest.plan, current) {
        Compatibility::Identical => Ok(()),
        Compatibility::Compatible { changes } => {
            for change in changes {
                info!(
                    epoch = restore.manifest.epoch,
                    change, "the query changed since the checkpoint (no state affected)"
                );
            }
            Ok(())
        }
        Compatibility::Incompatible { operator, what } => {
            Err(RuntimeError::IncompatibleCheckpoint {
                epoch: restore.manifest.epoch,
                operator,
                what,
            })
        }
    }
}

/// How an operator combines its old instances' metadata for new instance `instance`
/// ([`anduin_operator_api::Operator::rescale_inline`]).
pub(crate) type Rescale<'a> = dyn Fn(&[Option<serde_json::Value>], usize) -> Result<Option<serde_json::Value>, RescaleError>
    + 'a;

/// How an operator runs: its instances, and how many of them own key groups (the first
/// ones; the others are a live-rescalable operator's spares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub instances: usize,
    pub owners: usize,
}

/// The checkpoint a run resumes from, and where its files are.
pub(crate) struct Resume<'a> {
    pub dir: &'a CheckpointDir,
    pub from: &'a Validated,
}

impl Resume<'_> {
    /// Applies to a new instance of `operator`, before its state is restored, the param
    /// changes the checkpoint recorded for it at epochs before its own (the latest of each
    /// param), as one change through `set` (its `set_params`): those were applied before the
    /// checkpoint's snapshot was taken, so the state is that of the new values (a pattern
    /// replays its partitions under its new definition). See
    /// [`Resume::reapply_after_restore`] for the others.
    pub(crate) fn reapply_before_restore(
        &self,
        operator: &str,
        set: impl FnOnce(&[(&str, &str)]) -> Result<(), anduin_operator_api::ControlError>,
    ) -> Result<(), RuntimeError> {
        let epoch = self.from.manifest.epoch;
        self.reapply_together(operator, |r| r.epoch < epoch, set)
    }

    /// Applies to a restored instance of `operator` the param changes the checkpoint
    /// recorded for it at its own epoch, as one change: they rode on the checkpoint's
    /// barrier, after the snapshot was taken, and take effect on the restored state as they
    /// did in the run that took it (a pattern ends its old definition's partial matches then).
    pub(crate) fn reapply_after_restore(
        &self,
        operator: &str,
        set: impl FnOnce(&[(&str, &str)]) -> Result<(), anduin_operator_api::ControlError>,
    ) -> Result<(), RuntimeError> {
        let epoch = self.from.manifest.epoch;
        self.reapply_together(operator, |r| r.epoch >= epoch, set)
    }

    /// Applies to an instance of `operator` every param change the checkpoint recorded for
    /// it, oldest first, through `set` (its `set_param`): to a source after its restore (a
    /// source's position does not depend on its params).
    pub(crate) fn reapply_all(
        &self,
        operator: &str,
        mut set: impl FnMut(&str, &str) -> Result<(), anduin_operator_api::ControlError>,
    ) -> Result<(), RuntimeError> {
        let records: Vec<&ChangeRecord> = self.records(operator, |_| true).collect();
        for r in records {
            set(&r.param, &r.new).map_err(|e| self.refused(operator, &[r], &e))?;
        }
        Ok(())
    }

    /// The latest value of every param of `operator` the checkpoint recorded a change of
    /// (a rescale's `parallelism` aside): what a rebuilt instance takes again.
    pub(crate) fn latest_params(
        &self,
        operator: &str,
    ) -> std::collections::BTreeMap<String, String> {
        self.records(operator, |_| true)
            .map(|r| (r.param.clone(), r.new.clone()))
            .collect()
    }

    /// Applies the changes to `operator` that `which` picks, as one change, through `set`.
    fn reapply_together(
        &self,
        operator: &str,
        which: impl Fn(&ChangeRecord) -> bool,
        set: impl FnOnce(&[(&str, &str)]) -> Result<(), anduin_operator_api::ControlError>,
    ) -> Result<(), RuntimeError> {
        let records: Vec<&ChangeRecord> = self.records(operator, which).collect();
        if records.is_empty() {
            return Ok(());
        }
        let changes: Vec<(&str, &str)> = records
            .iter()
            .map(|r| (r.param.as_str(), r.new.as_str()))
            .collect();
        set(&changes).map_err(|e| self.refused(operator, &records, &e))
    }

    /// The changes to `operator` that `which` picks, oldest first.
    fn records<'r>(
        &'r self,
        operator: &'r str,
        which: impl Fn(&ChangeRecord) -> bool + 'r,
    ) -> impl Iterator<Item = &'r ChangeRecord> + 'r {
        // A rescale's change of `parallelism` is not a param of the operator's: it moved key
        // groups, which the checkpoint's state already shows. Nor is a live split's
        // `pipeline`: the resumed run plans it (`run::restored_splits`).
        self.from.manifest.controls.iter().filter(move |r| {
            r.operator == operator
                && r.param != crate::rescale::PARALLELISM
                && r.param != crate::pipelining::PIPELINE
                && which(r)
        })
    }

    /// The query as it is now refuses the `records` of `operator` (`e`).
    fn refused(
        &self,
        operator: &str,
        records: &[&ChangeRecord],
        e: &anduin_operator_api::ControlError,
    ) -> RuntimeError {
        let changes: Vec<String> = records
            .iter()
            .map(|r| format!("change #{} (param `{}` = {:?})", r.seq, r.param, r.new))
            .collect();
        RuntimeError::IncompatibleCheckpoint {
            epoch: self.from.manifest.epoch,
            operator: operator.to_string(),
            what: format!(
                "it recorded {}, which the query as it is now refuses: {e}",
                changes.join(", ")
            ),
        }
    }

    /// What instance `instance` of operator `operator` restores from, when `now` says how
    /// it runs (instances, and how many of them own key groups): `None` for an operator the
    /// checkpoint's query did not have (it starts empty). Run as at the checkpoint, that
    /// instance's state; otherwise the state re-cut by key group (see [`Resume::rescaled`]),
    /// its metadata combined by `rescale` (the operator's
    /// [`anduin_operator_api::Operator::rescale_inline`]).
    pub(crate) fn state_of(
        &self,
        operator: &str,
        instance: usize,
        now: Layout,
        rescale: &Rescale<'_>,
    ) -> Result<Option<RestoreIn>, RuntimeError> {
        let then = self
            .from
            .manifest
            .plan
            .operators
            .iter()
            .find(|o| o.name == operator)
            .map(|o| Layout {
                instances: o.instance_count(),
                owners: o.parallelism,
            });
        match then {
            Some(then) if then != now => self.rescaled(operator, then, instance, now, rescale),
            _ => self.instance_state(operator, &instance_key(operator, instance, now.instances)),
        }
    }

    /// What instance `instance` restores when `operator` ran as `then` at the checkpoint and
    /// runs as `now`: the entries of the key groups it owns now, taken from the old instances
    /// that owned them (as one full snapshot), and their metadata combined by `rescale`. An
    /// operator whose instances cannot be combined (a source's positions, a sink's pending
    /// output) is refused, naming the parallelism to resume at.
    fn rescaled(
        &self,
        operator: &str,
        then: Layout,
        instance: usize,
        now: Layout,
        rescale: &Rescale<'_>,
    ) -> Result<Option<RestoreIn>, RuntimeError> {
        let epoch = self.from.manifest.epoch;
        let (old, parallelism) = (then.owners, now.owners);
        let mut parts = Vec::with_capacity(then.instances);
        for k in 0..then.instances {
            parts.push(self.instance_state(operator, &instance_key(operator, k, then.instances))?);
        }
        if parts
            .iter()
            .all(|p| p.as_ref().is_none_or(RestoreIn::is_empty))
        {
            return Ok(None);
        }
        let refused = |what: String| RuntimeError::IncompatibleCheckpoint {
            epoch,
            operator: operator.to_string(),
            what: format!(
                "it ran as {old} instance(s) at the checkpoint and would run as {parallelism}, \
                 but {what}; resume it at parallelism {old} (--parallelism {old}, or its `param \
                 parallelism`)"
            ),
        };
        let max = usize::from(DEFAULT_MAX_KEY_GROUPS.get());
        if let Some(p) = [old, parallelism].into_iter().find(|p| *p == 0 || *p > max) {
            return Err(refused(format!(
                "{p} instances cannot share {max} key groups"
            )));
        }
        let inlines: Vec<Option<serde_json::Value>> = parts
            .iter()
            .map(|p| p.as_ref().and_then(|p| p.inline.clone()))
            .collect();
        let inline = rescale(&inlines, instance).map_err(|e| refused(e.to_string()))?;
        let to = owned(parallelism, instance);
        let mut files: Vec<Box<dyn std::io::Read + Send>> = Vec::new();
        if parts.iter().flatten().any(|p| !p.files.is_empty()) {
            let mut olds = Vec::new();
            for (k, part) in parts.iter_mut().enumerate() {
                let range = owned(old, k);
                let Some(part) = part else { continue };
                let Some((full, changes)) = part.files.split_first_mut() else {
                    continue;
                };
                // An idle old instance (owning nothing) is read anyway: it must hold nothing,
                // which redistribute checks (else its state is corrupt).
                if !range.is_empty() && intersection(range, to).is_empty() {
                    continue;
                }
                olds.push(OldInstance {
                    range,
                    full: full.as_mut(),
                    changes: changes
                        .iter_mut()
                        .map(|c| c.as_mut() as &mut dyn std::io::Read)
                        .collect(),
                });
            }
            let bytes = redistribute(operator, olds, to).map_err(|e| self.error(e.into()))?;
            files.push(Box::new(std::io::Cursor::new(bytes)));
        }
        info!(
            epoch,
            operator,
            instance,
            from = old,
            to = parallelism,
            key_groups = %to,
            "state re-cut by key group for another parallelism"
        );
        Ok(Some(RestoreIn {
            epoch: Epoch(epoch),
            inline,
            files,
        }))
    }

    /// What the instance with manifest key `key` of operator `operator` restores from:
    /// `None` for an operator the checkpoint's query did not have. Every instance of an
    /// operator the checkpoint's query had took part in it, so a manifest without its entry
    /// is damaged.
    fn instance_state(&self, operator: &str, key: &str) -> Result<Option<RestoreIn>, RuntimeError> {
        let manifest = &self.from.manifest;
        let Some(state) = manifest.operators.get(key) else {
            if manifest.plan.operators.iter().any(|o| o.name == operator) {
                return Err(RuntimeError::Checkpoint(
                    anduin_checkpoint::CheckpointError::BadManifest {
                        epoch: manifest.epoch,
                        path: self.dir.manifest(Epoch(manifest.epoch)),
                        message: format!(
                            "it has no state of operator instance \"{key}\", which took part \
                             in the checkpoint: restore from an earlier checkpoint (remove this \
                             one) or start over with --from-scratch"
                        ),
                    },
                ));
            }
            return Ok(None);
        };
        let mut files: Vec<Box<dyn std::io::Read + Send>> = Vec::new();
        for f in &state.files {
            let path = self.dir.file(Epoch(f.epoch), &f.file);
            let file = std::fs::File::open(&path).map_err(|cause| {
                RuntimeError::Checkpoint(anduin_checkpoint::CheckpointError::Io {
                    path: path.clone(),
                    cause,
                })
            })?;
            files.push(Box::new(std::io::BufReader::new(file)));
        }
        Ok(Some(RestoreIn {
            epoch: Epoch(self.from.manifest.epoch),
            inline: state.inline.clone(),
            files,
        }))
    }

    /// Runs `restore`, operator `operator`'s restore from this checkpoint (see
    /// [`unpanicked`]).
    pub(crate) fn restore(
        &self,
        operator: &str,
        restore: impl FnOnce() -> Result<(), OperatorError>,
    ) -> Result<(), RuntimeError> {
        unpanicked(operator, restore).map_err(|e| self.error(e))
    }

    /// Restoring an operator failed with `cause`.
    pub(crate) fn error(&self, cause: OperatorError) -> RuntimeError {
        RuntimeError::Restore {
            epoch: self.from.manifest.epoch,
            cause,
        }
    }
}

/// Runs `restore`, operator `operator`'s restore. Decoding state goes through libraries
/// (Arrow's row format, DataFusion's accumulators) that panic on bytes they did not write; as
/// a checkpoint's checksums hold, such bytes are a damaged or forged file, which must be a
/// refusal naming the operator, not a crash.
fn unpanicked(
    operator: &str,
    restore: impl FnOnce() -> Result<(), OperatorError>,
) -> Result<(), OperatorError> {
    let panic = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(restore)) {
        Ok(result) => return result,
        Err(panic) => panic,
    };
    let why = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    Err(OperatorError::Execution {
        operator: operator.to_string(),
        message: format!(
            "its state in the checkpoint cannot be decoded ({why}): the checkpoint is \
             damaged; restore from an earlier checkpoint (remove this one) or start over with \
             --from-scratch"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_that_panics_on_its_state_is_an_error_naming_the_operator() {
        let e = unpanicked("w", || {
            let bytes: &[u8] = &[1, 2];
            let _ = bytes[..9].len();
            Ok(())
        })
        .expect_err("the panic is caught");
        let message = e.to_string();
        for part in [
            "\"w\"",
            "cannot be decoded",
            "range end index 9",
            "--from-scratch",
        ] {
            assert!(message.contains(part), "{part:?} not in: {message}");
        }
        assert!(unpanicked("w", || Ok(())).is_ok());
    }
}
