//! The scenario tests of `anduin-api`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod common;

mod a_client_drives_a_served_query_through_every_route;
mod a_forged_origin_without_the_token_reaches_no_data_and_no_control;
mod the_ui_s_route_serves_its_embedded_files_and_nothing_else_whatever_the_path;
mod without_a_token_only_the_page_served_here_may_call_from_a_browser;
