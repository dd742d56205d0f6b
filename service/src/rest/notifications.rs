//! Notifications (routes: docs/api.md).

use api::operations::NotificationUpdate;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use uuid::Uuid;

use super::error::ApiResult;
use super::extract::{self, Paging, Path, Tid};
use super::{Routes, data, env, paged};

pub fn router() -> Routes {
    Routes::new()
        .get("/api/v2/notification", env("notification.read"), list)
        .get("/api/v2/notification/{notification_id}", env("notification.read"), one)
        .patch("/api/v2/notification/{notification_id}", env("notification.write"), update)
}

async fn list(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.notifications(env, &req).await?).into_response())
}

async fn one(State(o): State<Orchestrator>, Tid(env): Tid, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(data(o.notification(env, id).await?).into_response())
}

async fn update(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(id): Path<Uuid>,
    extract::Json(body): extract::Json<NotificationUpdate>,
) -> ApiResult<Response> {
    Ok(data(o.update_notification(env, id, body).await?).into_response())
}
