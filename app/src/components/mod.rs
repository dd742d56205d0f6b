//! Pieces shared by the pages, each module one concern: [`url`] (query state and links),
//! [`fetch`] (live server data), [`forms`] (forms that change something, with or without the wasm), [`frame`] (page frames and data states), [`table`] (pager,
//! sorting, filters), [`widgets`] (badges, form fields), [`feedback`] (toasts, confirmation,
//! action errors) and [`text`] (durations, dates). Pages import them all at once through this
//! module.

pub mod feedback;
pub mod fetch;
pub mod forms;
pub mod frame;
pub mod table;
pub mod text;
pub mod url;
pub mod widgets;

pub use feedback::*;
pub use fetch::*;
pub use forms::*;
pub use frame::*;
pub use table::*;
pub use text::*;
pub use url::*;
pub use widgets::*;
