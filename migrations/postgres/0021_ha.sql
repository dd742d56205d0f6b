-- Several servers on one database (docs/ha.md). Times in these tables are milliseconds since
-- the Unix epoch read from the database's clock, so servers with skewed clocks agree.

-- The running servers. Each holds a session-level advisory lock (class 1768, key lock_key) on a
-- connection of its own for as long as it lives: the others probe pg_locks to notice its death
-- at once, without waiting for its leases to expire.
CREATE TABLE server_node (
    id TEXT PRIMARY KEY,
    hostname TEXT NOT NULL,
    lock_key BIGINT NOT NULL UNIQUE,
    started TEXT NOT NULL,
    heartbeat BIGINT NOT NULL
);

-- Who runs the scheduler of an environment. Every takeover increments the epoch; every write of
-- a scheduler is committed only while its (holder, epoch) is still here and unexpired.
CREATE TABLE scheduler_lease (
    environment TEXT PRIMARY KEY REFERENCES environment(id) ON DELETE CASCADE,
    holder TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    acquired BIGINT NOT NULL,
    expires BIGINT NOT NULL
);

-- Deploys and repairs asked through a server that does not own the environment's scheduler;
-- the owner takes them out of this table.
CREATE TABLE scheduler_request (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    requested TEXT NOT NULL,
    -- JSON {"repair": bool, "agents": [...] | null, "resources": [...] | null}
    request TEXT NOT NULL
);

-- A running compile is claimed by a server until `claim_expires`; the claim is renewed while the
-- compile runs and only an expired claim (or one of a dead server) is put back in the queue.
ALTER TABLE compile ADD COLUMN claim_holder TEXT;
ALTER TABLE compile ADD COLUMN claim_expires BIGINT;
-- At most one compile runs per environment, whichever server runs it.
CREATE UNIQUE INDEX compile_one_running ON compile (environment) WHERE started IS NOT NULL AND completed IS NULL;

-- Each firing of an environment's auto_full_compile schedule, so only one server requests it.
CREATE TABLE compile_schedule_fire (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    fire_at TEXT NOT NULL,
    PRIMARY KEY (environment, fire_at)
);

-- The scheduler epoch a deploy result was written under (NULL: a single server without leases).
ALTER TABLE resource_action ADD COLUMN epoch BIGINT;

-- Tasks for a remote agent whose session lives on another server than the scheduler that hands
-- them out: the server holding the session claims them, passes them on and stores the outcome,
-- which the scheduler's server reads back. Tasks carry the epoch of the scheduler that made them;
-- only those of the current epoch are passed on.
CREATE TABLE agent_task (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    -- JSON task as sent to the agent
    task TEXT NOT NULL,
    created TEXT NOT NULL,
    claimed_by TEXT,
    -- JSON outcome once the agent answered
    outcome TEXT
);
CREATE INDEX agent_task_open ON agent_task (environment, agent);
