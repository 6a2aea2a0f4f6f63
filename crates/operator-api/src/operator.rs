//! The `Operator` trait: what every operator of a task's chain implements.

use anduin_types::{Epoch, Watermark};
use arrow::record_batch::RecordBatch;

use crate::checkpointing::{RestoreIn, SnapshotOut};
use crate::error::{ControlError, OperatorError};
use crate::origins::RowOrigins;

/// Where an operator sends its output batches.
pub trait Collector {
    /// Emits `batch` on output `port` (0 for operators with one output).
    fn collect(&mut self, port: usize, batch: RecordBatch) -> Result<(), OperatorError>;

    /// Emits `batch` on output `port` with where its rows were read (see [`RowOrigins`]), so
    /// that an operator fused after this one can name them. The default forgets them.
    fn collect_from(
        &mut self,
        port: usize,
        batch: RecordBatch,
        _origins: Option<RowOrigins>,
    ) -> Result<(), OperatorError> {
        self.collect(port, batch)
    }

    /// Whether what follows on port 0 uses the origins of rows: an operator need not work
    /// them out for [`Collector::collect_from`] otherwise. The default says no.
    fn wants_origins(&self) -> bool {
        false
    }

    /// Advances event time downstream to `watermark` now, between the batches collected
    /// before and after: for an operator that decides its output's event time itself rather
    /// than forward the minimum over its inputs (a stream selector forwards one replica's).
    /// Such an operator returns `None` from [`Operator::handle_watermark`]. Collectors that
    /// do not carry event time (tests') refuse it.
    fn watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            "collector",
            format!("this collector does not carry watermarks ({watermark:?})"),
        ))
    }
}

/// An operator of the dataflow: receives batches on its inputs, emits batches on its outputs.
///
/// Only [`Operator::name`] and [`Operator::process_batch`] are required. Every other hook has a
/// safe default for a stateless operator: watermarks are forwarded, a snapshot is empty, a
/// parameter cannot be changed at run time, nothing is buffered at the end of input.
///
/// # Examples
/// ```
/// use anduin_operator_api::{Collector, Operator, OperatorError};
/// use arrow::record_batch::RecordBatch;
///
/// /// Passes every batch through.
/// struct Identity;
/// impl Operator for Identity {
///     fn name(&self) -> &str { "identity" }
///     fn process_batch(&mut self, _input: usize, batch: RecordBatch, out: &mut dyn Collector)
///         -> Result<(), OperatorError> {
///         out.collect(0, batch)
///     }
/// }
/// ```
pub trait Operator: Send {
    /// The operator's name in the query.
    fn name(&self) -> &str;

    /// Processes one batch that arrived on input `input`.
    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError>;

    /// Processes one batch whose rows were read where `origins` says (when the source before
    /// it in the same task knows): an operator that rejects rows names their input lines with
    /// them, and one that keeps rows in order hands them on with
    /// [`Collector::collect_from`]. The default ignores them.
    fn process_batch_from(
        &mut self,
        input: usize,
        batch: RecordBatch,
        _origins: Option<RowOrigins>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.process_batch(input, batch, out)
    }

    /// Whether the operator uses the origins of its rows ([`Operator::process_batch_from`]):
    /// a source fused before it then records them. The default does not.
    fn wants_origins(&self) -> bool {
        false
    }

    /// Event time advanced to `watermark` (the minimum over all inputs). Returns the watermark
    /// to forward downstream, if any; the default forwards it unchanged.
    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        Ok(Some(watermark))
    }

    /// How long until the operator wants [`Operator::on_timer`] called (zero: it is due), if
    /// it waits for the wall clock at all: a processing-time window waits for the end of its
    /// earliest open window. The task asks after every message and every call, and wakes for
    /// it even when no row arrives (a task headed by a source checks between polls, at least
    /// every 100 ms). The default waits for nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use anduin_operator_api::{Collector, Operator, OperatorError};
    /// use arrow::record_batch::RecordBatch;
    ///
    /// /// Counts its rows and wants a timer while it has some.
    /// struct Ticking { rows: usize, fired: usize }
    /// impl Operator for Ticking {
    ///     fn name(&self) -> &str { "ticking" }
    ///     fn process_batch(&mut self, _input: usize, batch: RecordBatch, _out: &mut dyn Collector)
    ///         -> Result<(), OperatorError> {
    ///         self.rows += batch.num_rows();
    ///         Ok(())
    ///     }
    ///     fn timer_due_in(&self) -> Option<Duration> {
    ///         (self.rows > 0).then_some(Duration::ZERO)
    ///     }
    ///     fn on_timer(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
    ///         self.rows = 0;
    ///         self.fired += 1;
    ///         Ok(())
    ///     }
    /// }
    /// assert_eq!(Ticking { rows: 0, fired: 0 }.timer_due_in(), None);
    /// ```
    fn timer_due_in(&self) -> Option<std::time::Duration> {
        None
    }

    /// The wall clock reached the time [`Operator::timer_due_in`] asked for: do what is due
    /// (fire the windows that have ended), reading the operator's own clock. Output goes to
    /// `out`, between the messages before and after. The default does nothing.
    fn on_timer(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Event time on input `input` alone is now `watermark` (+∞ once that input has ended, and
    /// while every producer of it is idle), told before [`Operator::handle_watermark`] gets
    /// the minimum over all inputs. For an operator that treats one input apart (a control
    /// input); the default ignores it. A +∞ here does not say that the input is over (an
    /// idle input may wake up): [`Operator::on_input_exhausted`] does.
    fn handle_input_watermark(
        &mut self,
        _input: usize,
        _watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Input `input` is exhausted: no row will ever come on it again (its sources are bounded
    /// and were read to their end), though its event time may still be open — with
    /// checkpoints an exhausted source completes its event time only at the last
    /// checkpoint, when every source is done — and barriers still pass. Told once per input,
    /// before the watermark of +∞ when that comes with it, and never for an input that is
    /// only idle (idleness ends) or stopped (a stop is not an end). An operator that must see
    /// the whole of one input before it uses another (a lookup join's side table) goes on
    /// here.
    ///
    /// Returns whether this operator's output is exhausted too once every input is (it will
    /// emit no more rows, whatever event time does), which the runtime then tells the
    /// operators after it; only the answer to the last input's call counts. The default
    /// says no, which is always safe: an operator that holds rows until event time moves (a
    /// window) must; a row-by-row one (a filter) may say yes.
    ///
    /// # Examples
    /// ```
    /// use anduin_operator_api::{Collector, Operator, OperatorError};
    /// use arrow::record_batch::RecordBatch;
    ///
    /// /// Passes every batch through: once its input is exhausted, so is its output.
    /// struct Identity;
    /// impl Operator for Identity {
    ///     fn name(&self) -> &str { "identity" }
    ///     fn process_batch(&mut self, _input: usize, batch: RecordBatch, out: &mut dyn Collector)
    ///         -> Result<(), OperatorError> {
    ///         out.collect(0, batch)
    ///     }
    ///     fn on_input_exhausted(&mut self, _input: usize, _out: &mut dyn Collector)
    ///         -> Result<bool, OperatorError> {
    ///         Ok(true)
    ///     }
    /// }
    /// ```
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(false)
    }

    /// A checkpoint barrier has arrived on every input and everything before it has been
    /// processed: put the state into `out`. A stateless operator (the default) puts nothing.
    /// Runs on the data path: serialise, do not wait for I/O (the runtime makes the files
    /// durable on another thread).
    fn snapshot(&mut self, _out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Resumes from what [`Operator::snapshot`] wrote at the checkpoint being restored. The
    /// default (stateless) accepts only an empty state.
    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        if state.is_empty() {
            Ok(())
        } else {
            Err(OperatorError::Execution {
                operator: self.name().to_string(),
                message: "this operator is stateless but the checkpoint holds state for it".into(),
            })
        }
    }

    /// At another parallelism than its state was kept at (a run resumed from a checkpoint,
    /// or a live rescale): what to keep inline, made of what the instances whose key groups
    /// it now holds kept (`parts`; see [`crate::Combine`] for which and for counters). The
    /// runtime re-cuts the keyed state itself, by key group, so an operator whose state is
    /// all in its keyed table under its rows' keys says here only how its metadata combines
    /// ([`crate::rescale::rescale_inline_as`]). The default refuses.
    fn rescale_inline(
        &self,
        _parts: &[Option<serde_json::Value>],
        _how: crate::Combine,
    ) -> Result<Option<serde_json::Value>, crate::RescaleError> {
        Err(crate::RescaleError::NotRescalable)
    }

    /// Whether this operator moves key groups itself at a live rescale
    /// ([`Operator::give_key_groups`], [`Operator::take_key_groups`]), touching only their
    /// state. Otherwise (the default) the runtime snapshots each instance taking part whole,
    /// cuts the snapshot by key group and rebuilds the instance from what it keeps and takes:
    /// a pause that grows with the instance's state, not with what moves. Every instance of
    /// an operator must answer alike.
    fn moves_key_groups(&self) -> bool {
        false
    }

    /// A live rescale, at an aligned barrier: removes the state of the key groups of each of
    /// `ranges` (disjoint) and returns it, one piece per range, with what this instance keeps
    /// inline (its event-time progress, for the takers). The pieces are read only by
    /// [`Operator::take_key_groups`] of another instance of the same operator, never kept in
    /// a checkpoint. Called only when [`Operator::moves_key_groups`].
    fn give_key_groups(
        &mut self,
        _ranges: &[anduin_state::KeyGroupRange],
    ) -> Result<crate::KeyGroupsGiven, OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not move key groups itself",
        ))
    }

    /// A live rescale: adds the key groups other instances gave (`pieces`: each range with
    /// its piece as [`Operator::give_key_groups`] returned it, with the givers' inline values in
    /// `inline`, combined with this instance's own as [`crate::Combine::Move`] says). The
    /// next checkpoint after a move is a full one.
    fn take_key_groups(
        &mut self,
        _pieces: Vec<(anduin_state::KeyGroupRange, Vec<u8>)>,
        _inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not move key groups itself",
        ))
    }

    /// Makes this instance one of several copies that spread the operator's partial matches
    /// (see [`crate::spread`]): [`SpreadRole::Extend`] starts no match of its own. Called on a
    /// new instance, before its first row or its restore. The default refuses: only an
    /// operator whose partial matches are independent of each other can spread them.
    ///
    /// [`SpreadRole::Extend`]: crate::SpreadRole::Extend
    fn set_spread_role(&mut self, _role: crate::SpreadRole) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not spread partial matches over further instances",
        ))
    }

    /// At a point between two inputs (a barrier): hands over the oldest partial matches so
    /// that at most `keep` stay here, with what they need, for [`Operator::take_spread`] of
    /// another copy that saw the same input; from then on this instance neither holds nor
    /// reports them. The default refuses (see [`Operator::set_spread_role`]).
    fn spread(&mut self, _keep: u64) -> Result<crate::Handed, OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not spread partial matches over further instances",
        ))
    }

    /// As [`Operator::spread`], but by age: hands over the partial matches that started more
    /// than `age_ms` before this instance's event time (its watermark), all of them. The
    /// default refuses (see [`Operator::set_spread_role`]).
    fn spread_older(&mut self, _age_ms: u64) -> Result<crate::Handed, OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not spread partial matches over further instances",
        ))
    }

    /// At the same point of the input as the giver: takes the partial matches another copy
    /// handed over ([`Operator::spread`]), extends them with every later row and reports
    /// their matches. Any output this causes goes to `out`.
    fn take_spread(
        &mut self,
        _handed: crate::Handed,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            "this operator does not spread partial matches over further instances",
        ))
    }

    /// Checkpoint `epoch` is complete everywhere: a transactional sink commits what it wrote
    /// before that epoch's barrier. The default does nothing.
    fn handle_commit(&mut self, _epoch: Epoch) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Whether what this operator wrote becomes visible only through
    /// [`Operator::handle_commit`] and cannot be taken back once it is (a Kafka sink's
    /// transactions): its task then waits, after its input ended, for the commit of the last
    /// checkpoint before [`Operator::on_end_of_input`], instead of leaving it to the end of
    /// input. The wait ends without a commit when the coordinator goes away (the last
    /// checkpoint failed): what the operator holds then waits for a resumed run. The default,
    /// `false`, suits a sink that commits at the end of its input and can remove on restore
    /// what a later checkpoint committed (the file writer's parts).
    fn commits_only_with_checkpoints(&self) -> bool {
        false
    }

    /// The params that [`Operator::set_param`] accepts while running.
    fn adjustable_params(&self) -> &'static [&'static str] {
        &[]
    }

    /// Changes a parameter while running (a meta query, paper §4.5). Validates the value and
    /// leaves the operator unchanged when it is rejected. The default accepts none.
    fn set_param(&mut self, param: &str, _value: &str) -> Result<(), ControlError> {
        Err(ControlError::NotAdjustable {
            operator: self.name().to_string(),
            param: param.to_string(),
            adjustable: self.adjustable_params().join(", "),
        })
    }

    /// Changes several params as one change, `(param, value)` each: a restore applies the
    /// changes its checkpoint recorded so (the latest value of each param), as params that
    /// depend on each other (a pattern's `define` names the variables of its `pattern`) may
    /// be valid only together. An operator whose params depend on each other checks them
    /// together and changes nothing if they are refused; the default applies them one by one,
    /// in order, and stops at the first refused.
    fn set_params(&mut self, changes: &[(&str, &str)]) -> Result<(), ControlError> {
        for (param, value) in changes {
            self.set_param(param, value)?;
        }
        Ok(())
    }

    /// Params changed by [`Operator::set_param`] take effect, where the change has work to
    /// do that emits rows or may fail: a pattern given a new definition ends the old one's
    /// partial matches here (its `set_param` only checks and records the new one). The
    /// runtime calls it after a barrier that carried changes has left every operator of the
    /// task, so that what it emits follows the barrier as the change does, and before every
    /// snapshot, so that no change is left to take effect across a checkpoint. The default
    /// does nothing.
    fn handle_param_changes(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Input `input`'s producer was lost on a cluster and is being restored: its stream
    /// pauses, and goes on where it stopped once [`Operator::on_input_resumed`] comes (a
    /// replica of a hot standby whose worker died). The default waits for it.
    fn on_input_suspended(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Input `input`'s producer, suspended, was restored: what comes next on it continues its
    /// stream. The default does nothing.
    fn on_input_resumed(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Input `input` was lost: the task feeding it failed and will send nothing more, while
    /// the query goes on (a replica of a hot standby). The default refuses: an operator that
    /// is not built to go on without one of its inputs stops the query.
    fn on_input_lost(
        &mut self,
        input: usize,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            self.name(),
            format!("input {input} was lost, and this operator cannot go on without it"),
        ))
    }

    /// Every input has ended: emit what is still buffered and flush. The default does nothing.
    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Figures about the operator's state over the run, reported at the end of input (after
    /// [`Operator::on_end_of_input`]): `(name, value)`. Names starting with `peak_` are
    /// maxima (the largest over parallel instances is reported), others are totals (summed).
    /// The default reports nothing.
    fn metrics(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Whether the operator keeps state between batches.
    fn is_stateless(&self) -> bool {
        true
    }

    /// Why the operator gave up work that the end of its input asked of it, if it did,
    /// because the run was asked to stop (see [`crate::StopDeadline`]): a checkpoint taken
    /// now would take that work for done, and the last one says the query finished. The
    /// runtime then fails every checkpoint this operator would take part in (saying why: a
    /// run resumed from the checkpoint before does the work again) and ends the run as
    /// stopped, not finished. Work given up in a way its snapshot keeps (rows left waiting
    /// behind the watermark) needs no answer here. The default: never.
    ///
    /// # Examples
    /// ```
    /// use anduin_operator_api::{Collector, Operator, OperatorError};
    /// use arrow::record_batch::RecordBatch;
    ///
    /// /// Drops its rows; it gave up the end of its input once, after a stop.
    /// struct Stopped;
    /// impl Operator for Stopped {
    ///     fn name(&self) -> &str { "stopped" }
    ///     fn process_batch(&mut self, _input: usize, _batch: RecordBatch, _out: &mut dyn Collector)
    ///         -> Result<(), OperatorError> {
    ///         Ok(())
    ///     }
    ///     fn gave_up(&self) -> Option<String> {
    ///         Some("it gave up matching 12 rows".into())
    ///     }
    /// }
    /// assert!(Stopped.gave_up().is_some());
    /// ```
    fn gave_up(&self) -> Option<String> {
        None
    }
}
