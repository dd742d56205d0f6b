//! The wasm entry point of the console: hydrates the server-rendered page in the browser.
//! Built by `scripts/build-console.sh` for `wasm32-unknown-unknown` with `--features hydrate`.

/// Called by the hydration script that the server puts in every page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
