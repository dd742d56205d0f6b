//! Integration tests of the server crate: a real `inmanta` process (the binary cargo builds for
//! these tests) on a loopback port, driven over HTTP, the CLI and a terminal, on SQLite or, when
//! `INMANTA_TEST_POSTGRES` holds an admin URL, on PostgreSQL. One binary (this file) with a
//! module per area: the dependencies are linked once, not once per file. A new file: see
//! docs/development.md, "Where the tests live".

mod common;

mod api;
mod auth;
mod author_cli;
mod chaos;
mod cli;
mod cli_terminal;
mod compiles;
mod connections;
mod crash_restart;
mod csrf;
mod deploy;
mod disconnect;
mod discovered;
mod export;
mod faults;
mod files;
mod graphql;
mod ha;
mod hardening;
mod inmanta_surface;
mod log_failures;
mod logging_config;
mod metrics;
mod migrate;
mod module_tool;
mod outage;
mod outside_tokens;
mod policy;
mod python_api_calls;
mod python_handlers;
mod references;
mod references_vs_inmanta;
mod release;
mod remote_agent;
mod resources;
mod settings;
mod shipped_handlers;
mod throttle;
mod tls;
mod token_registry;
mod upgrade;
mod versions;
mod web_console;

/// A `.rs` file in this directory that is not declared above would never be compiled.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    test_support::assert_test_files_are_modules(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"), "server", &[]);
}
