//! The tests of the environment pages.

use super::*;
use crate::test_support::*;
use leptos::prelude::*;

/// A token generated on the settings page authenticates, is listed without its text, and is
/// refused once revoked. Only environment expert admins (and admins) handle tokens.
#[tokio::test]
async fn token_server_functions_issue_list_and_revoke() {
    use orchestrator::auth::tokens::{Authenticator, Unauthenticated};
    let _ = any_spawner::Executor::init_tokio();
    let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
    let env = o.list_environments().await.unwrap()[0].id;
    let e = env.to_string();
    let authenticator = Authenticator::load(&o, 3600).await.unwrap();
    o.create_user("eve", "Eve-password-123", false, false).await.unwrap();
    o.assign_role("eve", env, "environment-expert-admin").await.unwrap();
    o.create_user("otto", "Otto-password-123", false, false).await.unwrap();
    o.assign_role("otto", env, "environment-admin").await.unwrap();
    let owner = Owner::new();
    owner.set();
    provide_context(o.clone());
    provide_context(authenticator.clone());
    provide_context(o.user_record("eve").await.unwrap().unwrap().principal());

    assert!(fns::tokens(e.clone()).await.unwrap().is_empty());
    let error = fns::generate_token(e.clone(), vec![], Some(7)).await.unwrap_err();
    assert!(error.to_string().contains("client type"), "{error}");
    let token = fns::generate_token(e.clone(), vec!["agent".into(), "api".into()], Some(7)).await.unwrap();
    let forever = fns::generate_token(e.clone(), vec!["compiler".into()], None).await.unwrap();
    assert_ne!(token, forever);
    match authenticator.authenticate(&o, &token).await.unwrap().unwrap() {
        orchestrator::auth::Principal::Token { environment, clients, .. } => {
            assert_eq!(environment, env);
            assert_eq!(clients, orchestrator::auth::Clients::API_AGENT);
        }
        other => panic!("not an environment token: {other:?}"),
    }
    let rows = fns::tokens(e.clone()).await.unwrap();
    assert_eq!(rows.len(), 2);
    let listed = serde_json::to_string(&rows).unwrap();
    assert!(!listed.contains(&token) && !listed.contains(&forever), "{listed}");
    let row = rows.iter().find(|r| r.client_types == ["api", "agent"]).unwrap();
    assert_eq!(row.created_by.as_deref(), Some("eve"));
    assert!(row.expires.is_some() && row.revoked.is_none(), "{row:?}");
    assert!(row.last_used.is_some(), "authenticating marks the token used: {row:?}");
    assert!(rows.iter().any(|r| r.client_types == ["compiler"] && r.expires.is_none()), "{rows:?}");

    fns::revoke_token(e.clone(), row.jti.clone()).await.unwrap();
    assert_eq!(authenticator.authenticate(&o, &token).await.unwrap(), Err(Unauthenticated::Revoked));
    let rows = fns::tokens(e.clone()).await.unwrap();
    assert!(rows.iter().find(|r| r.jti == row.jti).unwrap().revoked.is_some(), "{rows:?}");

    // An environment admin does not handle tokens.
    provide_context(o.user_record("otto").await.unwrap().unwrap().principal());
    for error in [
        fns::tokens(e.clone()).await.unwrap_err(),
        fns::generate_token(e.clone(), vec!["agent".into()], Some(7)).await.unwrap_err(),
        fns::revoke_token(e.clone(), rows[0].jti.clone()).await.unwrap_err(),
    ] {
        assert!(error.to_string().contains("not allowed"), "{error}");
    }
}
