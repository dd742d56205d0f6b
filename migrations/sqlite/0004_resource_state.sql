-- What is known about each resource of an environment across versions: the state vector of
-- reference/deploy.md §2.2, written by release (intent) and by the scheduler (handler runs).
CREATE TABLE resource_persistent_state (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    resource_id TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    agent TEXT NOT NULL,
    id_attribute TEXT NOT NULL,
    id_value TEXT NOT NULL,
    first_generated_time TEXT NOT NULL,
    first_generated_version BIGINT NOT NULL,
    -- The latest released version that contains the resource, and its attribute hash there.
    current_intent_version BIGINT NOT NULL,
    current_intent_attribute_hash TEXT NOT NULL,
    -- JSON list of the plain ids it requires in that version (copied so lists need no join).
    current_intent_requires TEXT NOT NULL DEFAULT '[]',
    is_undefined BIGINT NOT NULL DEFAULT 0,
    is_orphan BIGINT NOT NULL DEFAULT 0,
    -- not_blocked, blocked, temporarily_blocked
    blocked TEXT NOT NULL DEFAULT 'not_blocked',
    -- new, successful, failed, skipped
    last_handler_run TEXT NOT NULL DEFAULT 'new',
    last_handler_run_at TEXT,
    is_deploying BIGINT NOT NULL DEFAULT 0,
    last_deploy TEXT,
    last_deployed_attribute_hash TEXT,
    last_deployed_version BIGINT,
    -- Status recorded by the last finished handler run: deployed, failed, skipped, unavailable, non_compliant.
    last_non_deploying_status TEXT,
    last_success TEXT,
    last_produced_events TEXT,
    PRIMARY KEY (environment, resource_id)
);

-- One handler run, dry run, fact collection or other action on one or more resources.
CREATE TABLE resource_action (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    action_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    action TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    -- JSON list of resource version ids.
    resource_version_ids TEXT NOT NULL,
    status TEXT,
    -- JSON {rvid: {attribute: {current, desired}}}
    changes TEXT,
    change TEXT,
    send_event BIGINT,
    PRIMARY KEY (environment, action_id)
);
CREATE INDEX resource_action_started ON resource_action(environment, started);

-- Which resources an action touched, for the per-resource views.
CREATE TABLE resource_action_resource (
    environment TEXT NOT NULL,
    action_id TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    PRIMARY KEY (environment, resource_id, action_id),
    FOREIGN KEY (environment, action_id) REFERENCES resource_action(environment, action_id) ON DELETE CASCADE
);

-- The log lines of an action, one row each, so logs page and filter in SQL.
CREATE TABLE resource_log (
    environment TEXT NOT NULL,
    action_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    -- Numeric level for "minimal level" filters: TRACE 5, DEBUG 10, INFO 20, WARNING 30, ERROR 40, CRITICAL 50.
    level_no BIGINT NOT NULL,
    level TEXT NOT NULL,
    msg TEXT NOT NULL,
    args TEXT NOT NULL DEFAULT '[]',
    kwargs TEXT NOT NULL DEFAULT '{}',
    timestamp TEXT NOT NULL,
    PRIMARY KEY (environment, action_id, seq),
    FOREIGN KEY (environment, action_id) REFERENCES resource_action(environment, action_id) ON DELETE CASCADE
);

-- Parameters (resource_id empty) and facts (resource_id set).
CREATE TABLE parameter (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    source TEXT NOT NULL,
    resource_id TEXT NOT NULL DEFAULT '',
    updated TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    expires BIGINT NOT NULL DEFAULT 1,
    UNIQUE (environment, name, resource_id)
);

CREATE TABLE notification (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    created TEXT NOT NULL,
    title TEXT NOT NULL,
    message TEXT NOT NULL,
    severity TEXT NOT NULL,
    uri TEXT,
    compile_id TEXT,
    read BIGINT NOT NULL DEFAULT 0,
    cleared BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX notification_created ON notification(environment, created);
