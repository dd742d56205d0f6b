-- Server-side compiles (reference/api.md §4.2, §5.6): one row per compile request of an
-- environment, queued until `started` is set, finished when `completed` is set.
CREATE TABLE compile (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    requested TEXT NOT NULL,
    started TEXT,
    completed TEXT,
    do_export BIGINT NOT NULL DEFAULT 1,
    force_update BIGINT NOT NULL DEFAULT 0,
    -- JSON object
    metadata TEXT NOT NULL DEFAULT '{}',
    -- JSON objects: variables that make a request distinct, and ones that merge
    requested_environment_variables TEXT NOT NULL DEFAULT '{}',
    mergeable_environment_variables TEXT NOT NULL DEFAULT '{}',
    partial BIGINT NOT NULL DEFAULT 0,
    -- JSON list of resource set names
    removed_resource_sets TEXT NOT NULL DEFAULT '[]',
    exporter_plugin TEXT,
    notify_failed_compile BIGINT,
    failed_compile_message TEXT,
    success BIGINT,
    version BIGINT,
    -- JSON CompileData {"errors": [...]}
    compile_data TEXT,
    -- JSON {name: [url]}
    links TEXT NOT NULL DEFAULT '{}',
    -- how many requests were merged into this one (1 = none)
    merged BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX compile_environment_requested ON compile (environment, requested);
CREATE INDEX compile_pending ON compile (completed, started);

-- The stages of one compile, in run order.
CREATE TABLE compile_report (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    compile TEXT NOT NULL REFERENCES compile(id) ON DELETE CASCADE,
    started TEXT NOT NULL,
    completed TEXT,
    command TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    errstream TEXT NOT NULL DEFAULT '',
    outstream TEXT NOT NULL DEFAULT '',
    returncode BIGINT
);
CREATE INDEX compile_report_compile ON compile_report (compile, started);
