//! The scenario tests of `anduin-runtime`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod common;

mod a_change_held_up_by_a_busy_operator_answers_that_it_is_on_its_way;
mod a_changed_condition_switches_every_instance_at_one_barrier;
mod a_changed_pattern_survives_a_failure_and_resumes_to_the_uninterrupted_output;
mod a_manifest_without_an_operators_state_is_refused_not_restored_empty;
mod a_pattern_changed_mid_stream_matches_as_the_input_split_at_the_switch;
mod a_resumed_run_publishes_the_checkpoint_it_restores;
mod a_run_that_fails_before_it_starts_lets_go_of_its_control_plane;
mod a_window_s_lateness_changed_while_it_runs_applies_from_one_barrier_on;
mod checkpoints_follow_the_injected_clock_and_are_published_as_events;
mod each_instance_of_a_parallel_source_drives_its_own_fused_chain;
mod generated_events_filtered_give_the_q1_row_count;
mod keyed_state_survives_a_failure_through_snapshots_and_changelogs;
mod late_and_rejected_rows_are_published_as_events_when_the_run_ends;
