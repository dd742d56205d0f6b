-- Projects, environments and their settings. Later tables (versions, resources, actions,
-- agents, compiles, users, sessions) hang off environment(id) with ON DELETE CASCADE; see
-- ARCHITECTURE.md for the whole schema plan.
CREATE TABLE project (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE environment (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES project(id),
    repo_url TEXT NOT NULL DEFAULT '',
    repo_branch TEXT NOT NULL DEFAULT '',
    -- JSON object of the settings that were set explicitly; absent ones take their default.
    settings TEXT NOT NULL DEFAULT '{}',
    -- JSON object setting name -> who protects it (e.g. "project.yml").
    protected_settings TEXT NOT NULL DEFAULT '{}',
    halted BIGINT NOT NULL DEFAULT 0,
    is_marked_for_deletion BIGINT NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT '',
    icon TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    UNIQUE (project_id, name)
);

CREATE INDEX environment_project ON environment(project_id);
