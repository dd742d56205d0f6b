//! Live updates: one `EventSource` per tab on `/console/events?env=<id>` (served by the server's
//! console router). Every event for the environment bumps [`Refresh`], so the open page refetches
//! what it shows; no polling.

use leptos::prelude::*;

use crate::components::Refresh;

/// The URL of the event stream of an environment.
pub fn events_url(env: &str) -> String {
    format!("{}/events?env={}", crate::BASE, crate::components::encode(env))
}

/// Follows the server's events of the environment `env` (re-subscribing when it changes).
pub fn follow(env: Memo<String>, refresh: Refresh, connected: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;

        type Handler = Closure<dyn FnMut(web_sys::MessageEvent)>;
        type OpenHandler = Closure<dyn FnMut(web_sys::Event)>;
        struct Stream {
            source: web_sys::EventSource,
            _on_message: Handler,
            _on_open: OpenHandler,
            _on_error: OpenHandler,
        }

        Effect::new(move |previous: Option<Option<Stream>>| {
            if let Some(Some(old)) = previous {
                old.source.close();
            }
            let env = env.get();
            if env.is_empty() {
                connected.set(false);
                return None;
            }
            let source = web_sys::EventSource::new(&events_url(&env)).ok()?;
            let on_message: Handler = Closure::new(move |event: web_sys::MessageEvent| {
                let data = event.data().as_string().unwrap_or_default();
                if data.contains("\"environment_deleted\"") {
                    let _ = window().location().set_href(&format!("{}/", crate::BASE));
                    return;
                }
                refresh.bump();
            });
            // Whatever happened between the server render and this connection (or while the
            // connection was down) was missed: refetch once connected.
            let on_open: OpenHandler = Closure::new(move |_| {
                connected.set(true);
                refresh.bump();
            });
            let on_error: OpenHandler = Closure::new(move |_| connected.set(false));
            source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
            source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            Some(Stream { source, _on_message: on_message, _on_open: on_open, _on_error: on_error })
        });
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (env, refresh, connected);
    }
}

/// Switches between the light and dark palette and remembers the choice in the browser.
pub fn toggle_theme() {
    #[cfg(feature = "hydrate")]
    {
        let Some(root) = document().document_element() else { return };
        let dark = match root.get_attribute("data-theme").as_deref() {
            Some("dark") => true,
            Some(_) => false,
            None => window().match_media("(prefers-color-scheme: dark)").ok().flatten().is_some_and(|m| m.matches()),
        };
        let next = if dark { "light" } else { "dark" };
        let _ = root.set_attribute("data-theme", next);
        if let Ok(Some(storage)) = window().local_storage() {
            let _ = storage.set_item("inmanta-theme", next);
        }
    }
}

/// Applied before the page paints (inline in the document head), so a dark choice never flashes.
pub use api::console::THEME_SCRIPT;
