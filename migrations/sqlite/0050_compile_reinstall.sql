-- A compile asked to start from a clean slate (`reinstall`: a fresh checkout and a new virtual
-- environment, the console's "Cleanup project & recompile"), as Inmanta's
-- `reinstall_project_and_venv`.
ALTER TABLE compile ADD COLUMN reinstall BIGINT NOT NULL DEFAULT 0;
