-- Agents of an environment: the names resources are grouped by; each works on one resource at
-- a time. Created when a released version names them; pause state survives restarts.
CREATE TABLE agent (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    paused BIGINT NOT NULL DEFAULT 0,
    unpause_on_resume BIGINT,
    -- 1 while a scheduler session serves it (in-process or remote); reset at server start.
    up BIGINT NOT NULL DEFAULT 0,
    -- 1 once an `inmanta agent` process claimed the name: it never runs in-process then.
    remote BIGINT NOT NULL DEFAULT 0,
    last_seen TEXT,
    PRIMARY KEY (environment, name)
);
