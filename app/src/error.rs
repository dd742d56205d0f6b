//! What a console server function answers when it fails: one type for every server function, so
//! the pages match on what went wrong instead of on the words of a message, and the answer's HTTP
//! status is decided here, once, as the REST API decides it for the same failure.

use std::fmt;

use leptos::server_fn::Bytes;
use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// A failed server function, by what the operator can do about it. Each carries the message they
/// read (what to fix, or which log entry holds the detail).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsoleError {
    /// Nobody is signed in (the session ended): log in again.
    NotSignedIn,
    /// The caller's roles do not allow it; the message names the permission.
    NotAllowed(String),
    /// The request is wrong: the message says what to fix.
    Refused(String),
    /// What the request names does not exist (any more).
    NotFound(String),
    /// The request clashes with the current state (a name taken, a version already released...).
    Conflict(String),
    /// The server cannot do it now (its database is unreachable, it runs no scheduler...).
    Unavailable(String),
    /// A failure on the server's side; the message names the id its detail is logged under.
    Failed(String),
    /// The call did not reach the server function or its answer did not come back whole.
    Call(String),
}

impl ConsoleError {
    /// A request refused with what to fix.
    pub fn refused(message: impl fmt::Display) -> ConsoleError {
        ConsoleError::Refused(message.to_string())
    }

    /// The HTTP status of the answer, the REST API's for the same failure.
    pub fn status(&self) -> u16 {
        match self {
            ConsoleError::NotSignedIn => 401,
            ConsoleError::NotAllowed(_) => 403,
            ConsoleError::Refused(_) => 400,
            ConsoleError::NotFound(_) => 404,
            ConsoleError::Conflict(_) => 409,
            ConsoleError::Unavailable(_) => 503,
            ConsoleError::Failed(_) | ConsoleError::Call(_) => 500,
        }
    }

    pub fn is_not_allowed(&self) -> bool {
        matches!(self, ConsoleError::NotAllowed(_))
    }
}

impl fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsoleError::NotSignedIn => f.write_str("not signed in: log in again"),
            ConsoleError::NotAllowed(why) => write!(f, "not allowed: {why}"),
            ConsoleError::Refused(m)
            | ConsoleError::NotFound(m)
            | ConsoleError::Conflict(m)
            | ConsoleError::Unavailable(m)
            | ConsoleError::Failed(m)
            | ConsoleError::Call(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ConsoleError {}

impl FromServerFnError for ConsoleError {
    type Encoder = JsonEncoding;

    /// What the server-function machinery itself reports: arguments that do not decode are the
    /// caller's mistake (400, naming the field); the rest is the call failing on its way.
    fn from_server_fn_error(value: ServerFnErrorErr) -> ConsoleError {
        match value {
            ServerFnErrorErr::Args(m) | ServerFnErrorErr::MissingArg(m) => {
                ConsoleError::Refused(format!("the request's arguments do not decode: {m}"))
            }
            // On the server, the arguments of a JSON call; in the browser, the answer.
            #[cfg(feature = "ssr")]
            ServerFnErrorErr::Deserialization(m) => {
                ConsoleError::Refused(format!("the request's arguments do not decode: {m}"))
            }
            ServerFnErrorErr::ServerError(m) => ConsoleError::Failed(m),
            other => ConsoleError::Call(other.to_string()),
        }
    }

    /// Every failed answer passes here on the server: it gets the status of its kind. A plain form
    /// post (no wasm yet) is answered by a redirect back to its page instead, which must stay one.
    fn ser(&self) -> Bytes {
        #[cfg(feature = "ssr")]
        set_answer_status(self.status());
        // An enum of strings always encodes.
        serde_json::to_vec(self).map(Bytes::from).unwrap_or_default()
    }

    fn de(data: Bytes) -> ConsoleError {
        serde_json::from_slice(&data)
            .unwrap_or_else(|e| ConsoleError::Call(format!("the server's answer is not a console error: {e}")))
    }
}

#[cfg(feature = "ssr")]
fn set_answer_status(status: u16) {
    use leptos::prelude::use_context;
    if crate::components::forms::plain_form_post() {
        return;
    }
    if let (Some(options), Ok(status)) =
        (use_context::<leptos_axum::ResponseOptions>(), axum::http::StatusCode::from_u16(status))
    {
        options.set_status(status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_that_do_not_decode_are_a_refusal() {
        let error = ConsoleError::from_server_fn_error(ServerFnErrorErr::Args("missing field `env`".into()));
        assert_eq!(error.status(), 400);
        assert!(error.to_string().contains("missing field `env`"), "{error}");
    }

    #[test]
    fn the_error_survives_its_encoding() {
        let error = ConsoleError::NotAllowed("environment.halt-resume".into());
        assert_eq!(ConsoleError::de(error.ser()), error);
        assert_eq!(ConsoleError::de(Bytes::from_static(b"garbage")).status(), 500);
    }
}
