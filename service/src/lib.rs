//! Everything the `inmanta` binary serves and runs but the console: the REST and GraphQL API,
//! sessions, security and single sign-on, the compile runner, remote agents, metrics, backups,
//! the move-over from Inmanta and the client commands. The console (the `app` crate rendered on
//! the server) is added by the binary (`server`), so this crate compiles beside the console's.

pub mod agents;
pub mod cli;
pub mod compile_runner;
pub mod config;
pub mod connections;
pub mod console_auth;
pub mod cors;
pub mod csrf;
pub mod graphql;
pub mod maintenance;
pub mod metrics;
pub mod migrate;
pub mod module_tool;
pub mod oidc;
pub mod outside_tokens;
pub mod python_install;
pub mod remote;
pub mod rest;
pub mod security;
pub mod serve;
pub mod sessions;
pub mod tls;
