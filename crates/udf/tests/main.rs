//! The scenario tests of `anduin-udf`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod a_broken_allocator_is_the_modules_fault_not_a_wrong_answer;
mod a_module_that_cannot_be_instantiated_is_refused_when_declared;
mod functions_of_a_module_give_their_results_row_by_row;
mod inline_javascript_functions_run_sandboxed_and_typed;
mod misbehaving_functions_fail_naming_themselves;
