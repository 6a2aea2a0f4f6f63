//! The scenario tests of `anduin-state`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod common;

mod a_damaged_stream_is_rejected_naming_the_stream;
mod a_failed_write_loses_no_change_and_no_entry;
mod a_key_group_range_exported_from_one_table_and_imported_into_another_keeps_both_correct;
mod a_stream_of_the_wrong_kind_is_rejected_naming_the_stream;
mod extract_moves_exactly_a_key_group_range;
mod opening_an_lsm_directory_again_starts_empty;
mod oversized_keys_and_values_are_rejected_without_changing_state;
mod restoring_the_last_full_snapshot_and_later_changelogs_reproduces_the_model;
mod scan_returns_one_key_group_in_key_order;
mod size_bytes_grows_and_shrinks_with_the_state;
