//! Compile reports: the compiles of an environment (queued, running, finished) with the
//! Recompile menu, and one compile's details with its stages. One page per module.

mod details;
pub(crate) mod fns;
mod list;
#[cfg(all(test, feature = "ssr"))]
mod tests;

pub use details::CompileDetailsPage;
pub use list::CompileReportsPage;
