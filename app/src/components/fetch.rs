//! Server data that follows what the console knows: the refresh every live event and action
//! bumps, resources refetched on it, and whether the page's environment is one the caller reads.

use crate::error::ConsoleError;
use leptos::prelude::*;

use super::url::table_query;
use crate::model::TableQuery;

/// Bumped whenever something the open page shows may have changed: by the server's event stream
/// (see [`crate::live`]) and after every action taken in this tab. Resources read it so they refetch.
#[derive(Clone, Copy)]
pub struct Refresh(pub RwSignal<u64>);

impl Refresh {
    pub fn get() -> Refresh {
        use_context::<Refresh>().unwrap_or_else(|| Refresh(RwSignal::new(0)))
    }
    pub fn tick(&self) -> u64 {
        self.0.get()
    }
    pub fn bump(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// Whether `?env=` names an environment the caller may read (true without `?env=`).
#[derive(Clone, Copy)]
pub struct EnvKnown(pub Resource<Result<bool, ConsoleError>>);

impl EnvKnown {
    pub fn get() -> Option<EnvKnown> {
        use_context::<EnvKnown>()
    }
}

/// `env` when it is an environment the caller may read, else "" (so that the frame around an
/// unknown environment's 404 page asks the server nothing about it). Awaited in fetchers; take
/// `known` from [`EnvKnown::get`] in the component's body.
pub async fn known_env(known: Option<EnvKnown>, env: String) -> String {
    match known {
        Some(known) if !env.is_empty() && !matches!(known.0.await, Ok(true)) => String::new(),
        _ => env,
    }
}

/// A server function's result that follows what the console knows: `fetch` of `source`, fetched
/// again when `source` changes and on every [`Refresh`] (live events, actions in this tab).
pub fn live_resource<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetch: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, ConsoleError>>
where
    S: PartialEq + Clone + Send + Sync + 'static,
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, ConsoleError>> + Send + 'static,
{
    let refresh = Refresh::get();
    Resource::new(move || (source(), refresh.tick()), move |(s, _)| fetch(s))
}

/// The rows of a table page: `fetch` of the table state of the URL ([`table_query`]), live.
pub fn table_resource<T, Fut>(
    fetch: impl Fn(TableQuery) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, ConsoleError>>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, ConsoleError>> + Send + 'static,
{
    let table = table_query();
    live_resource(move || table.get(), fetch)
}
