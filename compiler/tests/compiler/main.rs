//! Integration tests of the compiler crate: the conformance corpora, Inmanta's own test suite,
//! real modules with their Python plugins, example projects, references and robustness. One
//! binary (this file) with a module per area; `memory_budget.rs` stays a binary of its own (it is
//! also the child process its tests compile in).

mod bridge_python;
mod conformance;
mod examples;
mod inmanta_suite;
mod projects;
mod python_modules;
mod references;
mod robustness;

/// A `.rs` file in this directory that is not declared above would never be compiled.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    // memory_budget.rs is the one binary of its own (harness = false, Cargo.toml)
    test_support::assert_test_files_are_modules(tests, "compiler", &["memory_budget.rs"]);
}
