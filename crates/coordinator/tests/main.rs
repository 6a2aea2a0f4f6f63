//! The scenario tests of `anduin-coordinator`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod common;

mod a_catalog_written_by_another_version_is_refused_by_name;
mod a_crash_between_snapshot_rename_and_log_roll_replays_correctly;
mod a_crash_mid_append_recovers_every_complete_edit;
mod a_damaged_newest_snapshot_falls_back_to_the_one_before;
mod a_damaged_record_in_the_middle_is_refused_naming_file_and_offset;
mod a_reopened_catalog_holds_the_state_of_its_appends;
mod a_second_coordinator_cannot_open_the_same_state_dir;
mod a_step_down_of_the_source_rate_scales_down_only_after_the_delay;
mod a_step_up_of_the_source_rate_scales_the_bottleneck_and_only_it_up;
mod an_observed_rescale_duration_raises_the_catch_up_capacity;
mod edits_after_a_snapshot_and_a_roll_are_replayed_on_reopen;
mod random_edits_and_snapshots_reopen_to_the_in_memory_state;
