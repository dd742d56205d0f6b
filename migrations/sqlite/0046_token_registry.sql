-- The token registry (Inmanta's, since 19.0): every token this server issues, not only the
-- environment tokens of auth_token. Login, environment, compile and bootstrap tokens carry a jti
-- that must be here and not revoked, so a revocation reaches every server on the database at
-- its next request. Only the claims are kept, never the token itself.
CREATE TABLE token_registry (
    jti TEXT PRIMARY KEY,
    -- login, environment, compile or bootstrap (api::auth::TokenKind).
    kind TEXT NOT NULL,
    -- Set for environment and compile tokens only.
    environment TEXT REFERENCES environment(id) ON DELETE CASCADE,
    client_types TEXT NOT NULL,
    created_by TEXT,
    issued_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    last_used TEXT
);
INSERT INTO token_registry (jti, kind, environment, client_types, created_by, issued_at, expires_at, revoked_at, last_used)
    SELECT jti, 'environment', environment, client_types, created_by, issued_at, expires_at, revoked_at, last_used
    FROM auth_token;
DROP TABLE auth_token;
CREATE INDEX token_registry_environment ON token_registry (environment);
CREATE INDEX token_registry_created_by ON token_registry (created_by);
CREATE INDEX token_registry_expires_at ON token_registry (expires_at);
