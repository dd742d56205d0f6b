//! The console's pages. Each reads its environment and table state from the URL and refetches
//! when [`Refresh`](crate::components::Refresh) ticks (live events and actions).

mod compiles;
mod desired_state;
mod environment;
mod graph;
mod operations;
mod projects;
mod resources;
mod status;
mod users;

pub use compiles::{CompileDetailsPage, CompileReportsPage};
pub use desired_state::{ComparePage, ComplianceCheckPage, DesiredStatePage, VersionPage, VersionResourcePage};
pub use environment::{CreateEnvironmentPage, DashboardPage, SettingsPage};
pub use graph::GraphPage;
pub use operations::{AgentsPage, FactsPage, NotificationsPage, ParametersPage};
pub use projects::ProjectsPage;
pub use resources::{ResourceDetailsPage, ResourcesPage};
pub use status::StatusPage;
pub use users::UsersPage;
