-- Dry runs of a version: what the handlers would change, per resource.
CREATE TABLE dryrun (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    date TEXT NOT NULL,
    total BIGINT NOT NULL
);
CREATE INDEX dryrun_by_version ON dryrun(environment, version);

CREATE TABLE dryrun_resource (
    environment TEXT NOT NULL,
    dryrun TEXT NOT NULL REFERENCES dryrun(id) ON DELETE CASCADE,
    resource_id TEXT NOT NULL,
    -- NULL until reported: added, deleted, modified, unmodified, undefined,
    -- skipped_for_undefined, agent_down, skipped_for_dependency, failed.
    diff_status TEXT,
    -- JSON {attribute: {current, desired}}
    changes TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (dryrun, resource_id)
);
