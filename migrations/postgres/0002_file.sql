-- Content-addressed file store: resource file contents and handler code, shared by all
-- environments and deduplicated by the sha1 of the raw bytes.
CREATE TABLE file (
    hash TEXT PRIMARY KEY,
    content BYTEA NOT NULL,
    size BIGINT NOT NULL,
    created TEXT NOT NULL
);
