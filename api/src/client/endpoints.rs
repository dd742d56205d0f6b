//! Typed methods of [`Client`] for the endpoints the CLI and the tests call most: each builds
//! its path, sends the wire type of its body and decodes the wire type of its answer. The
//! generic [`Client::call`] and [`Client::data`] remain for everything else.

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::query::{ActionQuery, ListQuery};
use super::{Client, ClientError};
use crate::auth::{ClientType, Credentials, LoginReturn, User, UserWithRoles};
use crate::compile::{CompileDetails, CompileReport, CompileRequested, NotifyChange};
use crate::environment::{EnvironmentCreate, EnvironmentModify, ProjectCreate, ProjectModify};
use crate::operations::{Agent, Fact, Parameter, SetParameter};
use crate::resource::{
    DiscoveredResource, DiscoveredResourceInput, LatestReleasedResource, ReleasedResourceDetails, ResourceAction,
    ResourceDeploySummary, ResourceHistory, ResourceLog,
};
use crate::settings::{EnvironmentSettings, SettingSet, SettingValue};
use crate::status::StatusResponse;
use crate::url::encode;
use crate::version::{
    ConfigurationModel, DesiredStateVersion, DryRun, DryRunReport, PutPartial, PutVersion, ResourceDiff,
    VersionWithResources, VersionedResource, VersionedResourceDetails,
};
use crate::{Envelope, Environment, Project};

type Result<T> = std::result::Result<T, ClientError>;

/// No body.
const NONE: Option<&()> = None;

impl Client {
    /// One page of a v2 list, with its `links` and `metadata`; `path` may be a `links.next`.
    pub async fn page<T: DeserializeOwned>(&self, path: &str, environment: Option<Uuid>) -> Result<Envelope<Vec<T>>> {
        let value = self.call(Method::GET, path, environment, NONE).await?;
        self.decode(path, value)
    }

    /// Every item of a v2 list, following `links.next` from `first`.
    pub async fn all_pages<T: DeserializeOwned>(&self, first: &str, environment: Option<Uuid>) -> Result<Vec<T>> {
        let page = self.page(first, environment).await?;
        self.follow(page, environment).await
    }

    /// The items of `page` and of the pages after it (its `links.next`, and so on), e.g.
    /// `client.follow(client.resources(env, &query).await?, Some(env))`.
    pub async fn follow<T: DeserializeOwned>(
        &self,
        page: Envelope<Vec<T>>,
        environment: Option<Uuid>,
    ) -> Result<Vec<T>> {
        let mut items = page.data;
        let mut next = page.links.and_then(|l| l.next);
        while let Some(path) = next {
            let page: Envelope<Vec<T>> = self.page(&path, environment).await?;
            items.extend(page.data);
            next = page.links.and_then(|l| l.next);
        }
        Ok(items)
    }

    fn decode<T: DeserializeOwned>(&self, path: &str, value: serde_json::Value) -> Result<T> {
        serde_json::from_value(value)
            .map_err(|e| ClientError::Decode { url: format!("{}{}", self.base, path), message: e.to_string() })
    }

    /// A v1 answer `{"<key>": ...}`: the value under `key`.
    async fn v1<T: DeserializeOwned, B: serde::Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        environment: Option<Uuid>,
        body: Option<&B>,
        key: &str,
    ) -> Result<T> {
        let mut value = self.call(method, path, environment, body).await?;
        let inner = value.get_mut(key).map(serde_json::Value::take).unwrap_or_default();
        self.decode(path, inner)
    }

    // Status.

    /// `GET /api/v2/health`: succeeds while the server serves.
    pub async fn health(&self) -> Result<()> {
        self.data(Method::GET, "/api/v2/health", None, NONE).await
    }

    pub async fn server_status(&self) -> Result<StatusResponse> {
        self.data(Method::GET, "/api/v2/serverstatus", None, NONE).await
    }

    // Projects.

    pub async fn projects(&self) -> Result<Vec<Project>> {
        self.data(Method::GET, "/api/v2/project", None, NONE).await
    }

    pub async fn project(&self, id: Uuid) -> Result<Project> {
        self.data(Method::GET, &format!("/api/v2/project/{id}"), None, NONE).await
    }

    pub async fn create_project(&self, name: &str) -> Result<Project> {
        let body = ProjectCreate { name: name.to_string(), project_id: None };
        self.data(Method::PUT, "/api/v2/project", None, Some(&body)).await
    }

    pub async fn rename_project(&self, id: Uuid, name: &str) -> Result<Project> {
        let body = ProjectModify { name: name.to_string() };
        self.data(Method::POST, &format!("/api/v2/project/{id}"), None, Some(&body)).await
    }

    pub async fn delete_project(&self, id: Uuid) -> Result<()> {
        self.data(Method::DELETE, &format!("/api/v2/project/{id}"), None, NONE).await
    }

    // Environments.

    pub async fn environments(&self) -> Result<Vec<Environment>> {
        self.data(Method::GET, "/api/v2/environment", None, NONE).await
    }

    pub async fn environment(&self, id: Uuid) -> Result<Environment> {
        self.data(Method::GET, &format!("/api/v2/environment/{id}"), None, NONE).await
    }

    pub async fn create_environment(&self, body: &EnvironmentCreate) -> Result<Environment> {
        self.data(Method::PUT, "/api/v2/environment", None, Some(body)).await
    }

    pub async fn modify_environment(&self, id: Uuid, body: &EnvironmentModify) -> Result<Environment> {
        self.data(Method::POST, &format!("/api/v2/environment/{id}"), None, Some(body)).await
    }

    pub async fn delete_environment(&self, id: Uuid) -> Result<()> {
        self.data(Method::DELETE, &format!("/api/v2/environment/{id}"), None, NONE).await
    }

    /// `DELETE /api/v2/decommission/<id>`: removes everything the environment holds, keeps it.
    pub async fn clear_environment(&self, id: Uuid) -> Result<()> {
        self.data(Method::DELETE, &format!("/api/v2/decommission/{id}"), None, NONE).await
    }

    pub async fn halt_environment(&self, env: Uuid) -> Result<()> {
        self.data(Method::POST, "/api/v2/actions/environment/halt", Some(env), NONE).await
    }

    pub async fn resume_environment(&self, env: Uuid) -> Result<()> {
        self.data(Method::POST, "/api/v2/actions/environment/resume", Some(env), NONE).await
    }

    /// A new environment token for these client types (`POST /api/v2/environment_auth`).
    pub async fn environment_token(&self, env: Uuid, client_types: &[ClientType]) -> Result<String> {
        self.create_environment_token(env, client_types, None).await
    }

    /// A new environment token that expires after `expire` seconds (never when `None`).
    pub async fn create_environment_token(
        &self,
        env: Uuid,
        client_types: &[ClientType],
        expire: Option<i64>,
    ) -> Result<String> {
        let body = serde_json::json!({ "client_types": client_types, "expire": expire });
        self.data(Method::POST, "/api/v2/environment_auth", Some(env), Some(&body)).await
    }

    /// The environment's registered tokens (`GET /api/v2/environment_auth`).
    pub async fn environment_tokens(&self, env: Uuid) -> Result<Vec<crate::auth::Token>> {
        self.data(Method::GET, "/api/v2/environment_auth", Some(env), NONE).await
    }

    /// Revokes one of the environment's tokens (`DELETE /api/v2/environment_auth/<jti>`).
    pub async fn revoke_environment_token(&self, env: Uuid, jti: &str) -> Result<()> {
        self.call(Method::DELETE, &format!("/api/v2/environment_auth/{}", encode(jti)), Some(env), NONE)
            .await
            .map(|_| ())
    }

    /// Every registered token the caller may manage (`GET /api/v2/token`).
    pub async fn tokens(&self) -> Result<Vec<crate::auth::Token>> {
        self.data(Method::GET, "/api/v2/token", None, NONE).await
    }

    pub async fn registered_token(&self, jti: &str) -> Result<crate::auth::Token> {
        self.data(Method::GET, &format!("/api/v2/token/{}", encode(jti)), None, NONE).await
    }

    /// Revokes a registered token: every server refuses it from its next request on.
    pub async fn revoke_token(&self, jti: &str) -> Result<()> {
        self.call(Method::DELETE, &format!("/api/v2/token/{}", encode(jti)), None, NONE).await.map(|_| ())
    }

    // Environment settings.

    /// Every setting's value (explicit ones only) and every definition.
    pub async fn environment_settings(&self, env: Uuid) -> Result<EnvironmentSettings> {
        self.data(Method::GET, "/api/v2/environment_settings", Some(env), NONE).await
    }

    /// One setting: its value (when set) and its definition.
    pub async fn environment_setting(&self, env: Uuid, name: &str) -> Result<EnvironmentSettings> {
        self.data(Method::GET, &format!("/api/v2/environment_settings/{}", encode(name)), Some(env), NONE).await
    }

    pub async fn set_environment_setting(&self, env: Uuid, name: &str, value: impl Into<SettingValue>) -> Result<()> {
        let value = serde_json::to_value(value.into())
            .map_err(|e| ClientError::Decode { url: self.base.clone(), message: e.to_string() })?;
        let path = format!("/api/v2/environment_settings/{}", encode(name));
        self.data(Method::POST, &path, Some(env), Some(&SettingSet { value })).await
    }

    /// Resets a setting to its default.
    pub async fn delete_environment_setting(&self, env: Uuid, name: &str) -> Result<()> {
        self.data(Method::DELETE, &format!("/api/v2/environment_settings/{}", encode(name)), Some(env), NONE).await
    }

    // Versions.

    pub async fn reserve_version(&self, env: Uuid) -> Result<i64> {
        self.data(Method::POST, "/api/v2/reserve_version", Some(env), NONE).await
    }

    /// `PUT /api/v1/version`: stores a (reserved) version.
    pub async fn put_version(&self, env: Uuid, version: &PutVersion) -> Result<()> {
        self.call(Method::PUT, "/api/v1/version", Some(env), Some(version)).await.map(|_| ())
    }

    /// `PUT /api/v2/version/partial`: the number of the new version.
    pub async fn put_partial(&self, env: Uuid, partial: &PutPartial) -> Result<i64> {
        self.data(Method::PUT, "/api/v2/version/partial", Some(env), Some(partial)).await
    }

    /// `POST /api/v1/version/<v>`: releases the version; the released model.
    pub async fn release_version(&self, env: Uuid, version: i64, push: bool) -> Result<ConfigurationModel> {
        let body = serde_json::json!({ "push": push });
        self.v1(Method::POST, &format!("/api/v1/version/{version}"), Some(env), Some(&body), "model").await
    }

    /// `GET /api/v1/version/<v>`: the model with its resources.
    pub async fn version(&self, env: Uuid, version: i64) -> Result<VersionWithResources> {
        let path = format!("/api/v1/version/{version}");
        let value = self.call(Method::GET, &path, Some(env), NONE).await?;
        self.decode(&path, value)
    }

    pub async fn delete_version(&self, env: Uuid, version: i64) -> Result<()> {
        self.call(Method::DELETE, &format!("/api/v1/version/{version}"), Some(env), NONE).await.map(|_| ())
    }

    /// `GET /api/v2/desiredstate`: one page of versions.
    pub async fn desired_state(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<DesiredStateVersion>>> {
        self.page(&format!("/api/v2/desiredstate{}", query.to_query()), Some(env)).await
    }

    /// `GET /api/v2/desiredstate/<v>`: one page of the resources of a version.
    pub async fn version_resources(
        &self,
        env: Uuid,
        version: i64,
        query: &ListQuery,
    ) -> Result<Envelope<Vec<VersionedResource>>> {
        self.page(&format!("/api/v2/desiredstate/{version}{}", query.to_query()), Some(env)).await
    }

    /// `GET /api/v2/desiredstate/<v>/resource/<rid>`: one resource of a version.
    pub async fn version_resource(
        &self,
        env: Uuid,
        version: i64,
        resource_id: &str,
    ) -> Result<VersionedResourceDetails> {
        let path = format!("/api/v2/desiredstate/{version}/resource/{}", encode(resource_id));
        self.data(Method::GET, &path, Some(env), NONE).await
    }

    /// What changes from version `from` to version `to`.
    pub async fn version_diff(&self, env: Uuid, from: i64, to: i64) -> Result<Vec<ResourceDiff>> {
        self.data(Method::GET, &format!("/api/v2/desiredstate/diff/{from}/{to}"), Some(env), NONE).await
    }

    // Resources.

    /// `GET /api/v2/resource`: one page of the released resources.
    pub async fn resources(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<LatestReleasedResource>>> {
        self.page(&format!("/api/v2/resource{}", query.to_query()), Some(env)).await
    }

    /// The number of released resources in each state (`deploy_summary` of the resource list).
    pub async fn deploy_summary(&self, env: Uuid) -> Result<ResourceDeploySummary> {
        #[derive(Deserialize)]
        struct Metadata {
            deploy_summary: ResourceDeploySummary,
        }
        let path = "/api/v2/resource?limit=1&deploy_summary=true";
        let page: Envelope<Vec<LatestReleasedResource>> = self.page(path, Some(env)).await?;
        let metadata: Metadata = self.decode(path, page.metadata.unwrap_or_default())?;
        Ok(metadata.deploy_summary)
    }

    /// `GET /api/v2/resource/<rid>`: a released resource.
    pub async fn resource(&self, env: Uuid, resource_id: &str) -> Result<ReleasedResourceDetails> {
        self.data(Method::GET, &format!("/api/v2/resource/{}", encode(resource_id)), Some(env), NONE).await
    }

    pub async fn resource_history(
        &self,
        env: Uuid,
        resource_id: &str,
        query: &ListQuery,
    ) -> Result<Envelope<Vec<ResourceHistory>>> {
        self.page(&format!("/api/v2/resource/{}/history{}", encode(resource_id), query.to_query()), Some(env)).await
    }

    pub async fn resource_logs(
        &self,
        env: Uuid,
        resource_id: &str,
        query: &ListQuery,
    ) -> Result<Envelope<Vec<ResourceLog>>> {
        self.page(&format!("/api/v2/resource/{}/logs{}", encode(resource_id), query.to_query()), Some(env)).await
    }

    /// `GET /api/v2/resource_actions`, newest first.
    pub async fn resource_actions(&self, env: Uuid, query: &ActionQuery) -> Result<Envelope<Vec<ResourceAction>>> {
        self.page(&format!("/api/v2/resource_actions{}", query.to_query()), Some(env)).await
    }

    // Discovered resources.

    /// `POST /api/v2/discovered`: what a discovery handler found (an agent's call).
    pub async fn report_discovered(&self, env: Uuid, found: &[DiscoveredResourceInput]) -> Result<()> {
        let body = serde_json::json!({ "discovered_resources": found });
        self.data(Method::POST, "/api/v2/discovered", Some(env), Some(&body)).await
    }

    pub async fn discovered_resources(
        &self,
        env: Uuid,
        query: &ListQuery,
    ) -> Result<Envelope<Vec<DiscoveredResource>>> {
        self.page(&format!("/api/v2/discovered{}", query.to_query()), Some(env)).await
    }

    pub async fn discovered_resource(&self, env: Uuid, id: &str) -> Result<DiscoveredResource> {
        self.data(Method::GET, &format!("/api/v2/discovered/{}", encode(id)), Some(env), NONE).await
    }

    pub async fn delete_discovered_resource(&self, env: Uuid, id: &str) -> Result<()> {
        self.data(Method::DELETE, &format!("/api/v2/discovered/{}", encode(id)), Some(env), NONE).await
    }

    /// Deletes these discovered resources; unknown ids are ignored.
    pub async fn delete_discovered_resources(&self, env: Uuid, ids: &[String]) -> Result<()> {
        let body = serde_json::json!({ "discovered_resource_ids": ids });
        self.data(Method::DELETE, "/api/v2/discovered", Some(env), Some(&body)).await
    }

    // Dry runs.

    /// Starts a dry run of the version; its id.
    pub async fn dry_run(&self, env: Uuid, version: i64) -> Result<Uuid> {
        self.data(Method::POST, &format!("/api/v2/dryrun/{version}"), Some(env), NONE).await
    }

    /// The dry runs of a version, newest first.
    pub async fn dry_runs(&self, env: Uuid, version: i64) -> Result<Vec<DryRun>> {
        self.data(Method::GET, &format!("/api/v2/dryrun/{version}"), Some(env), NONE).await
    }

    pub async fn dry_run_report(&self, env: Uuid, version: i64, id: Uuid) -> Result<DryRunReport> {
        self.data(Method::GET, &format!("/api/v2/dryrun/{version}/{id}"), Some(env), NONE).await
    }

    // Compiles.

    /// `POST /api/v1/notify/<env>`: asks for a compile.
    pub async fn notify(&self, env: Uuid, request: &NotifyChange) -> Result<CompileRequested> {
        let path = format!("/api/v1/notify/{env}");
        let value = self.call(Method::POST, &path, None, Some(request)).await?;
        self.decode(&path, value)
    }

    pub async fn compile_reports(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<CompileReport>>> {
        self.page(&format!("/api/v2/compilereport{}", query.to_query()), Some(env)).await
    }

    pub async fn compile_report(&self, env: Uuid, id: Uuid) -> Result<CompileDetails> {
        self.data(Method::GET, &format!("/api/v2/compilereport/{id}"), Some(env), NONE).await
    }

    // Parameters and facts.

    pub async fn set_parameter(&self, env: Uuid, name: &str, body: &SetParameter) -> Result<Parameter> {
        self.data(Method::PUT, &format!("/api/v2/parameters/{}", encode(name)), Some(env), Some(body)).await
    }

    pub async fn set_fact(&self, env: Uuid, name: &str, body: &SetParameter) -> Result<Fact> {
        self.data(Method::PUT, &format!("/api/v2/facts/{}", encode(name)), Some(env), Some(body)).await
    }

    /// `GET /api/v1/parameter/<name>`: a parameter, or with `resource_id` a fact.
    pub async fn parameter(&self, env: Uuid, name: &str, resource_id: Option<&str>) -> Result<Fact> {
        let mut path = format!("/api/v1/parameter/{}", encode(name));
        if let Some(rid) = resource_id {
            path.push_str(&format!("?resource_id={}", encode(rid)));
        }
        self.v1(Method::GET, &path, Some(env), NONE, "parameter").await
    }

    pub async fn parameters(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<Parameter>>> {
        self.page(&format!("/api/v2/parameters{}", query.to_query()), Some(env)).await
    }

    pub async fn facts(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<Fact>>> {
        self.page(&format!("/api/v2/facts{}", query.to_query()), Some(env)).await
    }

    /// The facts of one resource (`GET /api/v2/resource/<rid>/facts`), as agents read them.
    pub async fn resource_facts(&self, env: Uuid, resource_id: &str) -> Result<Vec<Fact>> {
        let path = format!("/api/v2/resource/{}/facts", encode(resource_id));
        self.data(Method::GET, &path, Some(env), NONE).await
    }

    // Agents.

    pub async fn agents(&self, env: Uuid, query: &ListQuery) -> Result<Envelope<Vec<Agent>>> {
        self.page(&format!("/api/v2/agents{}", query.to_query()), Some(env)).await
    }

    /// Pauses one agent, or with `None` every agent of the environment.
    pub async fn pause_agent(&self, env: Uuid, agent: Option<&str>) -> Result<()> {
        self.agent_action(env, agent, "pause").await
    }

    /// Unpauses one agent, or with `None` every agent of the environment.
    pub async fn unpause_agent(&self, env: Uuid, agent: Option<&str>) -> Result<()> {
        self.agent_action(env, agent, "unpause").await
    }

    async fn agent_action(&self, env: Uuid, agent: Option<&str>, action: &str) -> Result<()> {
        let path = match agent {
            Some(name) => format!("/api/v2/agent/{}/{action}", encode(name)),
            None => format!("/api/v2/agents/{action}"),
        };
        self.data(Method::POST, &path, Some(env), NONE).await
    }

    // Users.

    pub async fn users(&self) -> Result<Vec<UserWithRoles>> {
        self.data(Method::GET, "/api/v2/user", None, NONE).await
    }

    pub async fn create_user(&self, username: &str, password: &str) -> Result<User> {
        let body = Credentials { username: username.to_string(), password: password.to_string() };
        self.data(Method::POST, "/api/v2/user", None, Some(&body)).await
    }

    /// Makes a user an admin, or not.
    pub async fn set_is_admin(&self, username: &str, is_admin: bool) -> Result<()> {
        let body = serde_json::json!({ "username": username, "is_admin": is_admin });
        self.call(Method::PATCH, "/api/v2/is_admin", None, Some(&body)).await.map(|_| ())
    }

    pub async fn delete_user(&self, username: &str) -> Result<()> {
        self.call(Method::DELETE, &format!("/api/v2/user/{}", encode(username)), None, NONE).await.map(|_| ())
    }

    /// Sets a user's password; `current` is the current one when users change their own.
    pub async fn set_password(&self, username: &str, password: &str, current: Option<&str>) -> Result<()> {
        let body = serde_json::json!({ "password": password, "current_password": current });
        let path = format!("/api/v2/user/{}/password", encode(username));
        self.call(Method::PATCH, &path, None, Some(&body)).await.map(|_| ())
    }

    /// Logs in; the answer holds the token to send with [`Client::with_token`].
    pub async fn login(&self, username: &str, password: &str) -> Result<LoginReturn> {
        let body = Credentials { username: username.to_string(), password: password.to_string() };
        self.data(Method::POST, "/api/v2/login", None, Some(&body)).await
    }
}
