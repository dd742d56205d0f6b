-- Handler executables that modules ship (handlers/<namespace>__<Type>), per version: which
-- stored file handles which resource type. Deleted with the version.
CREATE TABLE version_handler (
    environment TEXT NOT NULL,
    version BIGINT NOT NULL,
    resource_type TEXT NOT NULL,
    -- sha1 of the executable in the file table
    file_hash TEXT NOT NULL,
    PRIMARY KEY (environment, version, resource_type),
    FOREIGN KEY (environment, version) REFERENCES version(environment, version) ON DELETE CASCADE
);
