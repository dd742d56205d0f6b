//! Integration tests of the agent crate: real files in temp dirs, real processes, a real sshd.
//! One binary (this file) with a module per area.

mod common;
mod drift;
mod exec;
mod external;
mod files;
mod python;
mod python_references;
mod references;
mod ssh;
