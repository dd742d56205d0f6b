//! The pages of one environment as a whole: dashboard, create environment and settings (with its
//! tokens tab), one page per module.

mod create;
mod dashboard;
pub(crate) mod fns;
mod settings;
#[cfg(all(test, feature = "ssr"))]
mod tests;
mod tokens;

pub use create::CreateEnvironmentPage;
pub use dashboard::DashboardPage;
pub use settings::SettingsPage;
