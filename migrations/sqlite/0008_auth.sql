-- Users, roles, environment tokens, console sessions and the server's signing key (DESIGN.md §7).
CREATE TABLE auth_user (
    username TEXT PRIMARY KEY,
    -- argon2id in PHC string format; never leaves the orchestrator crate.
    password_hash TEXT NOT NULL,
    auth_method TEXT NOT NULL DEFAULT 'database',
    is_admin BIGINT NOT NULL DEFAULT 0,
    -- 1 for the generated first admin: only a password change is allowed until then.
    must_change_password BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE auth_role (
    name TEXT PRIMARY KEY
);
INSERT INTO auth_role (name) VALUES
    ('read-only'), ('noc'), ('operator'), ('environment-admin'), ('environment-expert-admin');

CREATE TABLE auth_role_assignment (
    username TEXT NOT NULL REFERENCES auth_user(username) ON DELETE CASCADE,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    role TEXT NOT NULL REFERENCES auth_role(name),
    PRIMARY KEY (username, environment, role)
);
CREATE INDEX auth_role_assignment_environment ON auth_role_assignment (environment);

-- Environment tokens: only the claims are kept, never the token itself.
CREATE TABLE auth_token (
    jti TEXT PRIMARY KEY,
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    client_types TEXT NOT NULL,
    created_by TEXT,
    issued_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    last_used TEXT
);
CREATE INDEX auth_token_environment ON auth_token (environment);

-- tower-sessions records of console logins.
CREATE TABLE auth_session (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_session_expires ON auth_session (expires_at);

-- Server-wide secrets (the JWT signing key), created at first start.
CREATE TABLE auth_secret (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
