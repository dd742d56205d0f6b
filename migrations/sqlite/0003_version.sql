-- Versions of the desired state and their resources.
ALTER TABLE environment ADD COLUMN last_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE version (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    date TEXT NOT NULL,
    released BIGINT NOT NULL DEFAULT 0,
    released_at TEXT,
    total BIGINT NOT NULL,
    version_info TEXT,
    unknowns TEXT NOT NULL DEFAULT '[]',
    module_version_info TEXT,
    pip_config TEXT,
    project_constraints TEXT,
    undeployable TEXT NOT NULL DEFAULT '[]',
    skipped_for_undeployable TEXT NOT NULL DEFAULT '[]',
    partial_base BIGINT,
    PRIMARY KEY (environment, version)
);

CREATE TABLE resource (
    environment TEXT NOT NULL,
    version BIGINT NOT NULL,
    resource_id TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    agent TEXT NOT NULL,
    id_attribute TEXT NOT NULL,
    id_value TEXT NOT NULL,
    -- The exported fields without id and requires, as JSON.
    attributes TEXT NOT NULL,
    attribute_hash TEXT NOT NULL,
    -- JSON list of plain resource ids.
    requires TEXT NOT NULL,
    resource_set TEXT,
    -- available or undefined as exported, or skipped_for_undefined when it depends on an undefined one.
    state TEXT NOT NULL,
    PRIMARY KEY (environment, version, resource_id),
    FOREIGN KEY (environment, version) REFERENCES version(environment, version) ON DELETE CASCADE
);

CREATE INDEX resource_by_id ON resource(environment, resource_id);
