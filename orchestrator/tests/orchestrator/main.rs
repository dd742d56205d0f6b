//! Integration tests of the orchestrator crate against a real database (SQLite, or PostgreSQL
//! when `INMANTA_TEST_POSTGRES` holds an admin URL). One binary (this file) with a module per
//! area: each binary links the whole crate and its database drivers once.

mod common;

mod compile_recovery;
mod compliance;
mod environment_metrics;
mod handlers;
mod list_filters;
mod migrations;
mod paging;
mod resources;
mod scheduler;

/// A `.rs` file in this directory that is not declared above would never be compiled.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    test_support::assert_test_files_are_modules(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"), "orchestrator", &[]);
}
