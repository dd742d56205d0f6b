//! The tokens tab of the settings page: the environment's tokens, generating and revoking them.

use leptos::prelude::*;

use super::fns;
use crate::components::*;
use crate::model::{CLIENT_TYPES, TokenRow};

/// Expiry choices of a new token, in days (`None`: never).
const EXPIRY: &[(&str, Option<u32>)] = &[
    ("1 day", Some(1)),
    ("7 days", Some(7)),
    ("30 days", Some(30)),
    ("90 days", Some(90)),
    ("1 year", Some(365)),
    ("Never", None),
];

#[component]
pub(super) fn TokensTab(env: Memo<String>) -> impl IntoView {
    let tokens = live_resource(move || env.get(), fns::tokens);
    let error = ActionError::new();
    view! {
        <GenerateToken env/>
        <div class="card">
            <h2>"Tokens"</h2>
            <p class="muted">
                "Environment tokens let agents, the compiler and scripts call the API of this environment ("
                <code>"Authorization: Bearer <token>"</code> "). Only their details are kept: a lost token cannot be shown again, generate a new one."
            </p>
            <ActionMessage error/>
            <Loaded
                resource=tokens
                loading="Loading…"
                error_title="The tokens could not be loaded"
                view=move |rows| {
                    if rows.is_empty() {
                        view! {
                            <div id="no-tokens">
                                <Empty title="No tokens yet">
                                    <p>"Generate one above for an agent, the compiler or a script."</p>
                                </Empty>
                            </div>
                        }
                            .into_any()
                    } else {
                        view! { <TokenTable env=env.get_untracked() rows error/> }.into_any()
                    }
                }
                not_allowed=|| view! {
                    <Empty title="Tokens are for environment expert admins">
                        <p>"Issuing and revoking tokens needs the environment-expert-admin role in this environment, or an admin."</p>
                    </Empty>
                }
            />
        </div>
    }
}

#[component]
fn TokenTable(env: String, rows: Vec<TokenRow>, error: ActionError) -> impl IntoView {
    let row = move |t: TokenRow| {
        let (env, jti) = (env.clone(), t.jti.clone());
        let fields = vec![("env", env.clone()), ("jti", t.jti.clone())];
        let revoke = move || act(error, "Token revoked", fns::revoke_token(env.clone(), jti.clone()));
        let action = endpoint::<fns::RevokeToken>();
        view! {
            <tr data-jti=t.jti.clone() data-revoked=t.revoked.is_some().to_string()>
                <TokenCells token=t.clone()/>
                <RevokeTokenCell token=t.clone() what=t.client_types.join(", ") error action fields revoke/>
            </tr>
        }
    };
    view! { <Table id="tokens" headings=TOKEN_HEADINGS rows row/> }
}

/// Generates a token and shows it once, with a copy button.
#[component]
fn GenerateToken(env: Memo<String>) -> impl IntoView {
    let chosen = RwSignal::new(vec!["agent".to_string()]);
    let expiry = RwSignal::new("7 days".to_string());
    let error = ActionError::new();
    let token = RwSignal::new(None::<String>);
    // None: not copied yet; Some(false): the browser refused.
    let copied = RwSignal::new(None::<bool>);
    let generate = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let days = EXPIRY.iter().find(|(label, _)| *label == expiry.get_untracked()).and_then(|(_, d)| *d);
        let call = fns::generate_token(env.get_untracked(), chosen.get_untracked(), days);
        token.set(None);
        copied.set(None);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(t) => {
                    error.set(None);
                    token.set(Some(t));
                    error.refresh.bump();
                }
                Err(e) => error.fail(e),
            }
        });
    };
    let copy = move |_| {
        if let Some(t) = token.get_untracked() {
            copy_text("new-token", &t, move |ok| copied.set(Some(ok)));
        }
    };
    view! {
        <form class="card form" id="generate-token" on:submit=generate>
            <h2>"Generate token"</h2>
            <fieldset class="fieldset">
                <legend>"Client types"</legend>
                {CLIENT_TYPES
                    .iter()
                    .map(|c| {
                        let c = c.to_string();
                        let (c1, c2) = (c.clone(), c.clone());
                        view! {
                            <label class="checkbox">
                                <input
                                    type="checkbox"
                                    id=format!("client-{c}")
                                    name="client_types"
                                    value=c.clone()
                                    prop:checked=move || chosen.get().contains(&c1)
                                    on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        chosen.update(|list| {
                                            list.retain(|x| *x != c2);
                                            if on {
                                                list.push(c2.clone());
                                            }
                                        });
                                    }
                                />
                                " " {c.clone()}
                            </label>
                        }
                    })
                    .collect_view()}
            </fieldset>
            <label for="token-expiry">"Expires after"</label>
            <select
                id="token-expiry"
                class="input input-number"
                prop:value=move || expiry.get()
                on:change=move |ev| expiry.set(event_target_value(&ev))
            >
                {EXPIRY
                    .iter()
                    .map(|(label, _)| view! { <option value=*label selected=*label == "7 days">{*label}</option> })
                    .collect_view()}
            </select>
            <ActionMessage error/>
            <div class="form-actions">
                <button class="button" type="submit" id="generate-token-button">"Generate token"</button>
            </div>
            {move || {
                token.get().map(|t| {
                    view! {
                        <div class="token-once" role="status">
                            <p class="hint">
                                <strong>"Copy this token now: it will not be shown again. "</strong>
                                "Anyone holding it acts in this environment with its client types."
                            </p>
                            <label for="new-token">"New token"</label>
                            <div class="inline-form">
                                <input id="new-token" class="input mono token-value" type="text" readonly=true prop:value=t/>
                                <button class="button button-small" type="button" id="copy-token" on:click=copy>
                                    {move || if copied.get() == Some(true) { "Copied" } else { "Copy" }}
                                </button>
                            </div>
                            {move || {
                                (copied.get() == Some(false))
                                    .then(|| view! { <p class="hint">"The browser did not allow copying: the token is selected, press Ctrl+C."</p> })
                            }}
                        </div>
                    }
                })
            }}
        </form>
    }
}

/// Selects the text of an input (so Ctrl+C works whatever happens) and puts `text` on the
/// clipboard; `done` hears whether that worked.
fn copy_text(input_id: &str, text: &str, done: impl Fn(bool) + 'static) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::prelude::Closure;
        if let Some(input) =
            document().get_element_by_id(input_id).and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        {
            input.select();
        }
        let done = std::rc::Rc::new(done);
        let ok = {
            let done = done.clone();
            Closure::once(move |_: wasm_bindgen::JsValue| done(true))
        };
        let failed = Closure::once(move |_: wasm_bindgen::JsValue| done(false));
        let _ = window().navigator().clipboard().write_text(text).then2(&ok, &failed);
        ok.forget();
        failed.forget();
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (input_id, text);
        done(false);
    }
}
