//! The scenario tests of `anduin-udf`, one scenario per file, compiled into this one test binary:
//! one link instead of one per file (a binary per file filled CI's disk and took most of its
//! link time). A new scenario file needs its `mod` line here, or it never runs: anduin-cli's
//! `every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary` says so.

mod a_broken_allocator_is_the_modules_fault_not_a_wrong_answer;
mod a_call_with_the_wrong_number_of_arguments_names_the_function_and_both_counts;
mod a_function_that_returns_its_argument_gives_its_room_back_once;
mod a_javascript_built_in_that_never_returns_is_stopped_naming_the_function;
mod a_javascript_memory_bomb_is_out_of_memory_and_a_users_throw_is_the_users;
mod a_module_that_cannot_be_instantiated_is_refused_when_declared;
mod functions_of_a_module_give_their_results_row_by_row;
mod inline_javascript_functions_run_sandboxed_and_typed;
mod javascript_aggregates_keep_their_state_as_json_and_fail_naming_themselves;
mod javascript_fuel_is_counted_from_each_calls_start_whatever_ran_before;
mod misbehaving_functions_fail_naming_themselves;
mod webassembly_aggregates_step_fixed_size_states_and_fail_naming_themselves;
