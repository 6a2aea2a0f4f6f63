//! The scenario tests of `anduin-expr`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod calls_the_parser_would_read_again_and_again_are_refused_at_once;
mod date_format_gives_to_char_s_text_for_every_unit_zone_and_row;
mod date_format_reads_flink_s_pattern_letters;
mod flink_s_string_and_time_functions_give_flink_s_results;
mod float_min_and_max_follow_sql_order_in_any_row_order;
mod the_expression_compiler_returns_on_any_input;
