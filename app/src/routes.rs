//! The console's pages, each named once: its path, the component that renders it and, for a page
//! every environment has, its label in the sidebar. The router, the sidebar, the environment
//! switcher (which keeps such a page when switching) and every link are made from this table.

use leptos::prelude::*;
use leptos_router::components::{Route, Routes};
use leptos_router::path;

use crate::components::env_link;
use crate::pages;

/// One page of the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// Under [`crate::BASE`], without the leading slash (empty for the list of environments).
    pub path: &'static str,
    /// The whole path as the browser has it (`/console/...`).
    pub href: &'static str,
    /// The sidebar's label of a page every environment has (kept when switching environment).
    pub nav: Option<&'static str>,
}

impl Page {
    /// This page of the environment `env`.
    pub fn of(&self, env: &str) -> String {
        env_link(self.path, env)
    }
}

/// The table: `NAME = "path", Component, sidebar label or None;`. Paths with parameters
/// (`:version`) are matched by the router; their links are made where the parameter is known.
macro_rules! console_pages {
    ($($(#[$doc:meta])* $name:ident = $path:tt, $view:path, $nav:expr;)*) => {
        $(
            $(#[$doc])*
            pub const $name: Page = Page {
                path: $path,
                href: concat!("/console/", $path),
                nav: $nav,
            };
        )*

        /// Every page, in the sidebar's order for those it lists.
        pub const ALL: &[Page] = &[$($name),*];

        /// The router's routes, one for each page of the table.
        #[component]
        pub fn PageRoutes() -> impl IntoView {
            view! {
                <Routes fallback=pages::NotFound>
                    $(<Route path=path!($path) view=$view/>)*
                </Routes>
            }
        }
    };
}

console_pages! {
    /// The list of environments, the console's start page.
    ENVIRONMENTS = "", pages::EnvironmentsPage, None;
    CREATE_ENVIRONMENT = "environment/create", pages::CreateEnvironmentPage, None;
    PROJECTS = "projects", pages::ProjectsPage, None;
    DASHBOARD = "dashboard", pages::DashboardPage, Some("Dashboard");
    COMPILE_REPORTS = "compilereports", pages::CompileReportsPage, Some("Compile Reports");
    COMPILE_DETAILS = "compilereports/:id", pages::CompileDetailsPage, None;
    DESIRED_STATE = "desiredstate", pages::DesiredStatePage, Some("Desired State");
    VERSION = "desiredstate/version", pages::VersionPage, None;
    VERSION_RESOURCE = "desiredstate/resource", pages::VersionResourcePage, None;
    COMPARE = "desiredstate/compare", pages::ComparePage, None;
    COMPLIANCE_CHECK = "desiredstate/:version/compliancecheck", pages::ComplianceCheckPage, None;
    RESOURCES = "resources", pages::ResourcesPage, Some("Resources");
    RESOURCE_DETAILS = "resources/details", pages::ResourceDetailsPage, None;
    GRAPH = "resources/graph", pages::GraphPage, None;
    DISCOVERED = "discovered", pages::DiscoveredResourcesPage, Some("Discovered Resources");
    AGENTS = "agents", pages::AgentsPage, Some("Agents");
    PARAMETERS = "parameters", pages::ParametersPage, Some("Parameters");
    FACTS = "facts", pages::FactsPage, Some("Facts");
    NOTIFICATIONS = "notificationcenter", pages::NotificationsPage, Some("Notifications");
    SETTINGS = "settings", pages::SettingsPage, Some("Settings");
    STATUS = "status", pages::StatusPage, Some("Server Status");
    USERS = "users", pages::UsersPage, Some("Users");
}

/// The pages the sidebar lists: those every environment has.
pub fn sidebar() -> impl Iterator<Item = Page> {
    ALL.iter().copied().filter(|page| page.nav.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_lives_under_the_console_and_once() {
        for page in ALL {
            assert_eq!(page.href, format!("{}/{}", crate::BASE, page.path), "{page:?}");
            assert_eq!(ALL.iter().filter(|p| p.path == page.path).count(), 1, "{page:?}");
        }
        assert_eq!(sidebar().count(), 12);
    }
}
