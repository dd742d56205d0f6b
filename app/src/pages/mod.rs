//! The console's pages, each with the server functions only it calls (those several pages
//! call are in [`crate::fns`]). Each page reads its environment and table state from the URL and refetches
//! when [`Refresh`](crate::components::Refresh) ticks (live events and actions).

pub(crate) mod agents;
pub(crate) mod compiles;
pub(crate) mod compliance;
pub(crate) mod desired_state;
pub(crate) mod discovered;
pub(crate) mod environment;
pub(crate) mod environments;
pub(crate) mod facts;
pub(crate) mod graph;
pub(crate) mod metrics;
pub(crate) mod not_found;
pub(crate) mod notifications;
pub(crate) mod parameters;
pub(crate) mod projects;
pub(crate) mod resources;
pub(crate) mod status;
pub(crate) mod users;

pub use agents::AgentsPage;
pub use compiles::{CompileDetailsPage, CompileReportsPage};
pub use desired_state::{ComparePage, ComplianceCheckPage, DesiredStatePage, VersionPage, VersionResourcePage};
pub use discovered::DiscoveredResourcesPage;
pub use environment::{CreateEnvironmentPage, DashboardPage, SettingsPage};
pub use environments::EnvironmentsPage;
pub use facts::FactsPage;
pub use graph::GraphPage;
pub use not_found::{CheckEnvironment, KnownEnvironment, NotFound};
pub use notifications::NotificationsPage;
pub use parameters::ParametersPage;
pub use projects::ProjectsPage;
pub use resources::{ResourceDetailsPage, ResourcesPage};
pub use status::StatusPage;
pub use users::UsersPage;
