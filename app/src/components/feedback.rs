//! How the console answers an action: toasts, the confirmation dialog asked before destructive
//! actions, and the error shown next to the button that failed.

use crate::error::ConsoleError;
use leptos::prelude::*;

use super::fetch::Refresh;

/// A short note about the outcome of an action, shown in the corner for a few seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Toast {
    pub id: u64,
    pub text: String,
    pub ok: bool,
}

/// A question the console asks before a destructive action, in its own dialog (never the
/// browser's `confirm()`, which blocks the page and cannot be styled or tested like the rest).
/// `then` is a plain `Arc`, not a `Callback`: a callback lives in the reactive owner of the
/// button that asked, which a live update may re-render (and dispose) while the dialog is open.
#[derive(Clone)]
pub struct Question {
    pub text: String,
    /// The label of the button that goes ahead ("Delete", "Promote", ...).
    pub yes: String,
    pub then: std::sync::Arc<dyn Fn() + Send + Sync>,
}

/// The console's toasts and confirmation dialog, provided once by the app.
#[derive(Clone, Copy)]
pub struct Feedback {
    pub toasts: RwSignal<Vec<Toast>>,
    pub question: RwSignal<Option<Question>>,
    next: RwSignal<u64>,
}

impl Feedback {
    pub fn new() -> Feedback {
        Feedback { toasts: RwSignal::new(Vec::new()), question: RwSignal::new(None), next: RwSignal::new(0) }
    }
    pub fn get() -> Feedback {
        use_context::<Feedback>().unwrap_or_default()
    }
    /// Shows a toast; it goes away by itself after a while (errors stay longer).
    pub fn toast(&self, text: impl Into<String>, ok: bool) {
        let id = self.next.get_untracked();
        self.next.set(id + 1);
        self.toasts.update(|t| t.push(Toast { id, text: text.into(), ok }));
        #[cfg(feature = "hydrate")]
        {
            let toasts = self.toasts;
            let ms = if ok { 6_000 } else { 12_000 };
            set_timeout(move || toasts.update(|t| t.retain(|x| x.id != id)), std::time::Duration::from_millis(ms));
        }
    }
    /// Asks `text` in the console's dialog; `then` runs when the user answers with `yes`.
    pub fn ask(&self, text: impl Into<String>, yes: impl Into<String>, then: impl Fn() + Send + Sync + 'static) {
        self.question.set(Some(Question { text: text.into(), yes: yes.into(), then: std::sync::Arc::new(then) }));
    }
}

impl Default for Feedback {
    fn default() -> Self {
        Feedback::new()
    }
}

/// The message of a failed action, shown next to the button that started it (and as a toast).
/// Created in the component's body (where the context is), so event handlers can bump the
/// page's refresh and reach the toasts.
#[derive(Clone, Copy)]
pub struct ActionError {
    message: RwSignal<Option<String>>,
    pub refresh: Refresh,
    pub feedback: Feedback,
}

impl ActionError {
    pub fn new() -> ActionError {
        ActionError { message: RwSignal::new(None), refresh: Refresh::get(), feedback: Feedback::get() }
    }
    pub fn get(&self) -> Option<String> {
        self.message.get()
    }
    pub fn set(&self, message: Option<String>) {
        self.message.set(message)
    }
    pub fn fail(&self, error: ConsoleError) {
        let text = error.to_string();
        self.feedback.toast(text.clone(), false);
        self.set(Some(text))
    }
    /// Asks before a destructive action (see [`Feedback::ask`]).
    pub fn ask(&self, text: impl Into<String>, yes: impl Into<String>, then: impl Fn() + Send + Sync + 'static) {
        self.feedback.ask(text, yes, then)
    }
}

impl Default for ActionError {
    fn default() -> Self {
        ActionError::new()
    }
}

/// Runs a server call from an event handler: records its error (or clears it), shows the
/// error as a toast, and bumps the page's refresh when it is done.
pub fn run<F>(error: ActionError, call: F)
where
    F: std::future::Future<Output = Result<(), ConsoleError>> + 'static,
{
    act(error, "", call)
}

/// [`run`], with a toast saying `done` when the call succeeded (nothing when `done` is empty).
pub fn act<F>(error: ActionError, done: impl Into<String>, call: F)
where
    F: std::future::Future<Output = Result<(), ConsoleError>> + 'static,
{
    let done = done.into();
    leptos::task::spawn_local(async move {
        match call.await {
            Ok(()) => {
                error.set(None);
                if !done.is_empty() {
                    error.feedback.toast(done, true);
                }
            }
            Err(e) => error.fail(e),
        }
        error.refresh.bump();
    });
}

/// The toasts (a polite live region, so screen readers announce outcomes) and the
/// confirmation dialog of the whole console.
#[component]
pub fn FeedbackLayer() -> impl IntoView {
    let feedback = Feedback::get();
    let yes_ref = NodeRef::<leptos::html::Button>::new();
    // Focus goes to the answer that goes ahead when the dialog opens (Escape or Cancel say no).
    Effect::new(move |_| {
        if feedback.question.with(|q| q.is_some())
            && let Some(button) = yes_ref.get()
        {
            let _ = button.focus();
        }
    });
    let close = move || feedback.question.set(None);
    view! {
        <div class="toasts" id="toasts" role="status" aria-live="polite">
            <For each=move || feedback.toasts.get() key=|t| t.id let:t>
                <div class="toast" class:toast-error=!t.ok data-ok=t.ok.to_string()>
                    <span class="toast-text">{t.text.clone()}</span>
                    <button
                        class="icon-button toast-close"
                        type="button"
                        aria-label="Dismiss"
                        on:click=move |_| feedback.toasts.update(|all| all.retain(|x| x.id != t.id))
                    >
                        "×"
                    </button>
                </div>
            </For>
        </div>
        <Show when=move || feedback.question.with(|q| q.is_some())>
            <div class="dialog-backdrop" on:click=move |_| close()>
                <div
                    class="dialog"
                    id="confirm-dialog"
                    role="alertdialog"
                    aria-modal="true"
                    aria-labelledby="confirm-text"
                    on:click=|ev| ev.stop_propagation()
                    on:keydown=move |ev| {
                        if ev.key() == "Escape" {
                            close()
                        }
                    }
                >
                    <p id="confirm-text">{move || feedback.question.with(|q| q.as_ref().map(|q| q.text.clone()))}</p>
                    <div class="dialog-actions">
                        <button class="button button-secondary" id="confirm-no" type="button" on:click=move |_| close()>
                            "Cancel"
                        </button>
                        <button
                            class="button button-primary"
                            id="confirm-yes"
                            type="button"
                            node_ref=yes_ref
                            on:click=move |_| {
                                if let Some(q) = feedback.question.get_untracked() {
                                    feedback.question.set(None);
                                    (q.then)();
                                }
                            }
                        >
                            {move || feedback.question.with(|q| q.as_ref().map(|q| q.yes.clone()))}
                        </button>
                    </div>
                </div>
            </div>
        </Show>
    }
}

#[component]
pub fn ActionMessage(error: ActionError) -> impl IntoView {
    move || error.get().map(|e| view! { <p class="action-error" role="alert">{e}</p> })
}
