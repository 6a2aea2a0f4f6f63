//! The scenario tests of `anduin-spec`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod a_group_by_without_a_window_lowers_to_an_aggregate_and_a_map;
mod sql_a_partitioned_table_is_written_by_a_partitioned_writer;
mod sql_a_table_s_proctime_column_is_added_to_its_rows_as_they_are_read;
mod sql_calls_the_parser_would_read_again_and_again_are_refused_at_once;
mod sql_items_ending_in_a_bracket_reach_the_operators_whole;
mod sql_joins_lower_to_the_join_operator;
mod sql_legacy_group_windows_lower_to_the_window_table_functions;
mod sql_match_recognize_lowers_to_the_pattern_operator;
mod sql_match_recognize_reads_a_subquery_or_a_join;
mod sql_over_windows_lower_to_the_over_operator;
mod sql_regular_joins_lower_to_the_regular_join_operator;
mod sql_select_star_over_match_recognize_lists_the_columns_in_the_standard_s_order;
mod sql_set_table_exec_state_ttl_gives_every_updating_operator_a_state_ttl;
mod sql_subqueries_lower_to_windows_and_joins;
mod sql_top_n_lowers_to_the_top_n_operator;
mod sql_views_are_named_queries_read_as_tables;
mod the_parsers_return_on_any_input;
