//! Resuming a keyed operator at another parallelism: what each new instance keeps inline,
//! made of what the checkpoint's instances kept. The keyed state itself (the operator's
//! [`anduin_state::KeyedTable`]) is re-cut by key group by the runtime
//! ([`anduin_state::redistribute`]); the operator says only how its instance metadata
//! combines ([`crate::Operator::rescale_inline`]).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why an operator's checkpointed instances cannot be combined into another number of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RescaleError {
    /// The operator keeps state that is not split by key (a source's position, a sink's
    /// pending output), or does not say how its instances combine.
    #[error("it keeps state that cannot be spread over another number of instances")]
    NotRescalable,
    /// The instances were at different points of the stream when the checkpoint was taken.
    #[error("its instances were at different {what} at the checkpoint ({values})")]
    Disagree {
        /// What differs (e.g. `watermarks`).
        what: &'static str,
        /// The values, instance by instance.
        values: String,
    },
    /// What an instance kept in the manifest does not decode.
    #[error("what instance {instance} kept in the manifest is not valid ({why}): the checkpoint is corrupt")]
    Corrupt {
        /// The old instance.
        instance: usize,
        /// The decoder's complaint.
        why: String,
    },
}

/// What an instance gives at a live rescale ([`crate::Operator::give_key_groups`]).
#[derive(Debug, Default)]
pub struct KeyGroupsGiven {
    /// The state of each range asked for, in order, in the operator's own form.
    pub pieces: Vec<Vec<u8>>,
    /// What the giving instance keeps inline (as in a checkpoint), for the takers to combine.
    pub inline: Option<serde_json::Value>,
}

impl KeyGroupsGiven {
    /// `pieces` given by an instance of `operator` whose metadata is `meta`.
    pub fn new<T: Serialize>(
        operator: &str,
        pieces: Vec<Vec<u8>>,
        meta: &T,
    ) -> Result<Self, crate::OperatorError> {
        let inline = serde_json::to_value(meta)
            .map_err(|e| crate::OperatorError::internal(operator, e.to_string()))?;
        Ok(Self {
            pieces,
            inline: Some(inline),
        })
    }
}

/// What the metadata combined is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Instance `instance` of a run resumed at another parallelism, made of every old
    /// instance's metadata: counters go whole to instance 0 (they are summed over the
    /// instances when reported).
    Resume {
        /// The new instance.
        instance: usize,
    },
    /// A running instance that takes key groups from others (a live rescale): `parts[0]` is
    /// its own metadata, the others those of the instances handing it key groups; counters
    /// stay where they are (its own).
    Move,
}

impl Combine {
    /// A counter of the combined metadata, from the parts' (`counts`, in order).
    pub fn counter(self, counts: impl IntoIterator<Item = u64>) -> u64 {
        let mut counts = counts.into_iter();
        match self {
            Combine::Resume { instance: 0 } => counts.sum(),
            Combine::Resume { .. } => 0,
            Combine::Move => counts.next().unwrap_or(0),
        }
    }
}

/// Instance metadata of a keyed operator (what it keeps inline in a checkpoint) that the
/// instances of another parallelism can be made of.
pub trait RescaleMeta: Serialize + DeserializeOwned {
    /// The metadata combined from `parts` (at least one, in instance order) as `how` says.
    /// Event-time progress must agree (see [`agreed`]); counters go by [`Combine::counter`].
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError>;
}

/// [`RescaleMeta::combine`] over the manifest's JSON: what [`crate::Operator::rescale_inline`]
/// of an operator with metadata `T` returns.
pub fn rescale_inline_as<T: RescaleMeta>(
    parts: &[Option<serde_json::Value>],
    how: Combine,
) -> Result<Option<serde_json::Value>, RescaleError> {
    let mut decoded = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let corrupt = |why: String| RescaleError::Corrupt { instance: i, why };
        let value = part
            .as_ref()
            .ok_or_else(|| corrupt("it is missing".into()))?;
        decoded.push(T::deserialize(value).map_err(|e| corrupt(e.to_string()))?);
    }
    if decoded.is_empty() {
        return Err(RescaleError::NotRescalable);
    }
    let combined = T::combine(decoded, how)?;
    serde_json::to_value(combined)
        .map(Some)
        .map_err(|e| RescaleError::Corrupt {
            instance: 0,
            why: e.to_string(),
        })
}

/// What an instance whose metadata is `own` holds after taking key groups from instances
/// whose inline values are `givers` ([`crate::Operator::take_key_groups`]): combined as
/// [`Combine::Move`] says.
pub fn combine_moved<T: RescaleMeta>(
    operator: &str,
    own: T,
    givers: Vec<Option<serde_json::Value>>,
) -> Result<T, crate::OperatorError> {
    combine_parts(own, givers).map_err(|e| {
        crate::OperatorError::internal(operator, format!("its instances cannot be combined: {e}"))
    })
}

fn combine_parts<T: RescaleMeta>(
    own: T,
    givers: Vec<Option<serde_json::Value>>,
) -> Result<T, RescaleError> {
    let mut parts = vec![own];
    for (i, part) in givers.into_iter().enumerate() {
        let corrupt = |why: String| RescaleError::Corrupt {
            instance: i + 1,
            why,
        };
        let value = part.ok_or_else(|| corrupt("it is missing".into()))?;
        parts.push(T::deserialize(value).map_err(|e| corrupt(e.to_string()))?);
    }
    T::combine(parts, Combine::Move)
}

/// The one value every old instance had for `what` (a watermark: the exchange sends each
/// watermark to every instance, so at an aligned barrier they agree). Instances that
/// disagree cannot be combined without firing a window twice or never.
pub fn agreed<T: PartialEq + Copy + std::fmt::Debug>(
    what: &'static str,
    values: impl IntoIterator<Item = T>,
) -> Result<T, RescaleError> {
    let values: Vec<T> = values.into_iter().collect();
    let first = *values.first().ok_or(RescaleError::NotRescalable)?;
    if values.iter().all(|v| *v == first) {
        return Ok(first);
    }
    Err(RescaleError::Disagree {
        what,
        values: format!("{values:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Meta {
        watermark: i64,
        late: u64,
    }

    impl RescaleMeta for Meta {
        fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
            Ok(Meta {
                watermark: agreed("watermarks", parts.iter().map(|p| p.watermark))?,
                late: how.counter(parts.iter().map(|p| p.late)),
            })
        }
    }

    fn part(watermark: i64, late: u64) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "watermark": watermark, "late": late }))
    }

    #[test]
    fn counters_go_whole_to_the_first_instance_of_a_resume_and_stay_put_in_a_move() {
        let parts = [part(7, 2), part(7, 3)];
        let first = rescale_inline_as::<Meta>(&parts, Combine::Resume { instance: 0 });
        let other = rescale_inline_as::<Meta>(&parts, Combine::Resume { instance: 2 });
        let moved = rescale_inline_as::<Meta>(&parts, Combine::Move);
        assert_eq!(first.expect("combines"), part(7, 5));
        assert_eq!(other.expect("combines"), part(7, 0));
        assert_eq!(
            moved.expect("combines"),
            part(7, 2),
            "an instance keeps its own counters"
        );
    }

    #[test]
    fn instances_at_different_watermarks_are_refused_naming_them() {
        let e = rescale_inline_as::<Meta>(&[part(7, 0), part(9, 0)], Combine::Move)
            .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "its instances were at different watermarks at the checkpoint ([7, 9])"
        );
    }

    #[test]
    fn a_missing_or_malformed_part_is_corrupt_naming_the_instance() {
        let missing =
            rescale_inline_as::<Meta>(&[part(7, 0), None], Combine::Move).expect_err("refused");
        assert!(
            matches!(missing, RescaleError::Corrupt { instance: 1, .. }),
            "{missing}"
        );
        let bad = [part(7, 0), Some(serde_json::json!({"watermark": "x"}))];
        let e = rescale_inline_as::<Meta>(&bad, Combine::Move).expect_err("refused");
        assert!(e.to_string().contains("instance 1"), "{e}");
    }
}
