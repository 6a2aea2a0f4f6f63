//! The scenario tests of `anduin-checkpoint`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod a_checkpoint_written_by_a_newer_anduin_is_neither_skipped_nor_removed;
mod a_checkpoint_written_by_an_older_anduin_is_refused_naming_its_format;
