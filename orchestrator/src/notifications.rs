//! Notifications: what an operator must see (a failed compile, a resource that started failing),
//! kept per environment until cleared (routes: docs/api.md).

use api::operations::{Notification, NotificationSeverity, NotificationUpdate};
use uuid::Uuid;

use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::store::{Transaction, now, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// `GET /api/v2/notification`.
pub const NOTIFICATION_VIEW: View = View {
    sort_columns: &[Column { name: "created", sql: "n.created", kind: ColumnKind::Date }],
    default_sort: ("created", Order::Desc),
    filters: &[
        Filter { name: "title", sql: "n.title", kind: FilterKind::Partial },
        Filter { name: "message", sql: "n.message", kind: FilterKind::Partial },
        Filter { name: "read", sql: "n.read", kind: FilterKind::Bool },
        Filter { name: "cleared", sql: "n.cleared", kind: FilterKind::Bool },
        Filter {
            name: "severity",
            sql: "n.severity",
            kind: FilterKind::Choice { negatable: false, values: &["message", "info", "success", "warning", "error"] },
        },
    ],
    id_sql: "n.id",
    id_kind: ColumnKind::Text,
};

const COLUMNS: &str = "n.id, n.created, n.title, n.message, n.severity, n.uri, n.compile_id, n.read, n.cleared";

#[derive(sqlx::FromRow)]
struct NotificationRow {
    id: String,
    created: String,
    title: String,
    message: String,
    severity: String,
    uri: Option<String>,
    compile_id: Option<String>,
    read: i64,
    cleared: i64,
}

impl NotificationRow {
    fn into_api(self, environment: Uuid) -> Result<Notification> {
        Ok(Notification {
            id: parse_uuid(&self.id)?,
            environment,
            created: self.created,
            title: self.title,
            message: self.message,
            severity: serde_json::from_value(serde_json::Value::String(self.severity.clone()))
                .map_err(|_| Error::Corrupt(format!("bad notification severity {:?}", self.severity)))?,
            uri: self.uri,
            compile_id: self.compile_id.as_deref().map(parse_uuid).transpose()?,
            read: self.read != 0,
            cleared: self.cleared != 0,
        })
    }
}

/// A notification to create.
#[derive(Debug, Clone)]
pub struct NewNotification {
    pub title: String,
    pub message: String,
    pub severity: NotificationSeverity,
    pub uri: Option<String>,
    pub compile_id: Option<Uuid>,
}

/// Stores a notification inside a write transaction that is already open.
pub(crate) async fn insert_notification(tx: &mut Transaction, env: Uuid, new: &NewNotification) -> Result<Uuid> {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO notification (id, environment, created, title, message, severity, uri, compile_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(id.to_string())
    .bind(env.to_string())
    .bind(now())
    .bind(new.title.clone())
    .bind(new.message.clone())
    .bind(new.severity.as_str())
    .bind(new.uri.clone())
    .bind(new.compile_id.map(|c| c.to_string()))
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

impl Orchestrator {
    pub async fn notifications(&self, env: Uuid, req: &PageRequest) -> Result<Page<Notification>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let page: Page<NotificationRow> = fetch_page(
            &self.store,
            &NOTIFICATION_VIEW,
            req,
            Source {
                select: COLUMNS,
                from: "notification n",
                scope: "n.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/notification",
            },
        )
        .await?;
        page.try_map(|n| n.into_api(env))
    }

    /// Every notification of an environment, optionally only the (not) cleared ones, in no
    /// particular order (the GraphQL `notifications` query orders and pages them itself).
    pub async fn notifications_matching(&self, env: Uuid, cleared: Option<bool>) -> Result<Vec<Notification>> {
        let cleared_sql = match cleared {
            Some(true) => " AND n.cleared = 1",
            Some(false) => " AND n.cleared = 0",
            None => "",
        };
        let rows: Vec<NotificationRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM notification n WHERE n.environment = $1{cleared_sql}"))
                .bind(env.to_string())
                .fetch_all(self.store.pool())
                .await?;
        rows.into_iter().map(|n| n.into_api(env)).collect()
    }

    pub async fn notification(&self, env: Uuid, id: Uuid) -> Result<Notification> {
        let row: Option<NotificationRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM notification n WHERE n.environment = $1 AND n.id = $2"))
                .bind(env.to_string())
                .bind(id.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        row.ok_or_else(|| Error::NotFound(format!("notification {id} does not exist in environment {env}")))?
            .into_api(env)
    }

    /// Marks a notification read and/or cleared (or unmarks it).
    pub async fn update_notification(&self, env: Uuid, id: Uuid, update: NotificationUpdate) -> Result<Notification> {
        if update.read.is_none() && update.cleared.is_none() {
            return Err(Error::BadRequest("give read and/or cleared to change".into()));
        }
        self.notification(env, id).await?;
        let mut tx = self.store.begin_write().await?;
        for (column, value) in [("read", update.read), ("cleared", update.cleared)] {
            if let Some(value) = value {
                sqlx::query(&format!("UPDATE notification SET {column} = $1 WHERE environment = $2 AND id = $3"))
                    .bind(i64::from(value))
                    .bind(env.to_string())
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        self.notification(env, id).await
    }
}
