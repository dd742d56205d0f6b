//! The file store: contents addressed by the sha1 hex of their bytes, stored once.

use crate::auth::Principal;
use crate::store::now;
use crate::{Error, Orchestrator, Result};

pub fn sha1_hex(content: &[u8]) -> String {
    sha1_smol::Sha1::from(content).digest().to_string()
}

fn check_hash(hash: &str) -> Result<()> {
    if hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(Error::BadRequest(format!("{hash:?} is not a file id: expected the 40-character sha1 hex of the content")))
    }
}

impl Orchestrator {
    /// [`Orchestrator::upload_file`] for a caller of the API: only principals that export may
    /// write to the store, and the store holds at most `quota` bytes in all.
    pub async fn upload_file_as(&self, caller: &Principal, hash: &str, content: &[u8], quota: u64) -> Result<()> {
        if !caller.may_write_files() {
            return Err(Error::Forbidden(
                "only principals that export may upload files: an admin, a user with a role that writes the desired \
                 state, or a compiler or API token"
                    .into(),
            ));
        }
        check_hash(hash)?;
        if self.file_exists(hash).await? {
            return Ok(());
        }
        // PostgreSQL sums BIGINT to NUMERIC: cast back so both databases answer an integer.
        let used: i64 = sqlx::query_scalar("SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM file")
            .fetch_one(self.store.pool())
            .await?;
        let used = used.max(0) as u64;
        if used.saturating_add(content.len() as u64) > quota {
            return Err(Error::Conflict(format!(
                "the file store is full: {used} of {quota} bytes used, this file needs {}; \
                 raise [server] file-store-quota or delete old versions",
                content.len()
            )));
        }
        self.upload_file(hash, content).await
    }

    /// Stores `content` under `hash`, which must be its sha1. Storing the same file twice is fine.
    pub async fn upload_file(&self, hash: &str, content: &[u8]) -> Result<()> {
        check_hash(hash)?;
        let actual = sha1_hex(content);
        if !actual.eq_ignore_ascii_case(hash) {
            return Err(Error::BadRequest(format!("the content does not match its id {hash}: its sha1 is {actual}")));
        }
        sqlx::query(
            "INSERT INTO file (hash, content, size, created) VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING",
        )
        .bind(actual)
        .bind(content.to_vec())
        .bind(content.len() as i64)
        .bind(now())
        .execute(self.store.pool())
        .await?;
        Ok(())
    }

    /// Stores a batch of files in one transaction (one commit, a few multi-row statements):
    /// what an export uploads after asking [`Orchestrator::missing_files`]. Every content must
    /// match its id; a mismatch stores nothing of the batch.
    pub async fn upload_files(&self, files: &[(String, Vec<u8>)]) -> Result<usize> {
        for (hash, content) in files {
            check_hash(hash)?;
            let actual = sha1_hex(content);
            if !actual.eq_ignore_ascii_case(hash) {
                return Err(Error::BadRequest(format!(
                    "the content of file {hash} does not match its id: its sha1 is {actual}"
                )));
            }
        }
        if files.is_empty() {
            return Ok(0);
        }
        let created = now();
        let mut tx = self.store.begin_write().await?;
        // Four values a row; 200 rows stay far below every database's limit of bound values.
        for chunk in files.chunks(200) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| format!("(${}, ${}, ${}, ${})", 4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4))
                .collect();
            let sql = format!(
                "INSERT INTO file (hash, content, size, created) VALUES {} ON CONFLICT (hash) DO NOTHING",
                rows.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for (hash, content) in chunk {
                query = query
                    .bind(hash.to_ascii_lowercase())
                    .bind(content.clone())
                    .bind(content.len() as i64)
                    .bind(&created);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(files.len())
    }

    pub async fn file_exists(&self, hash: &str) -> Result<bool> {
        check_hash(hash)?;
        let found: Option<String> = sqlx::query_scalar("SELECT hash FROM file WHERE hash = $1")
            .bind(hash.to_ascii_lowercase())
            .fetch_optional(self.store.pool())
            .await?;
        Ok(found.is_some())
    }

    pub async fn get_file(&self, hash: &str) -> Result<Vec<u8>> {
        check_hash(hash)?;
        let content: Option<Vec<u8>> = sqlx::query_scalar("SELECT content FROM file WHERE hash = $1")
            .bind(hash.to_ascii_lowercase())
            .fetch_optional(self.store.pool())
            .await?;
        content.ok_or_else(|| Error::NotFound(format!("file {hash} does not exist")))
    }

    /// The content of file `hash` for a handler about to write it: a read that fails because
    /// the database cannot be reached for the moment (an outage, a failover) is tried again,
    /// pausing up to 2 s, for at most `patience`. A handler that failed on it left its resource
    /// failed, and everything that requires it skipped, until the next repair, long after the
    /// database was back (the fault-injection harness, server/tests/server/chaos.rs, found it).
    pub async fn get_file_for_deploy(&self, hash: &str, patience: std::time::Duration) -> Result<Vec<u8>> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(100);
        loop {
            match self.get_file(hash).await {
                Err(e) if e.is_transient() && started.elapsed() < patience => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                read => return read,
            }
        }
    }

    /// The ids among `hashes` that the store does not have, in the order given, each once.
    pub async fn missing_files(&self, hashes: &[String]) -> Result<Vec<String>> {
        let mut missing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        // One query per chunk keeps the number of bound parameters under every database's limit.
        for chunk in hashes.chunks(500) {
            for hash in chunk {
                check_hash(hash)?;
            }
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!("SELECT hash FROM file WHERE hash IN ({})", marks.join(", "));
            let mut query = sqlx::query_scalar::<_, String>(&sql);
            for hash in chunk {
                query = query.bind(hash.to_ascii_lowercase());
            }
            let present: std::collections::HashSet<String> =
                query.fetch_all(self.store.pool()).await?.into_iter().collect();
            for hash in chunk {
                if !present.contains(&hash.to_ascii_lowercase()) && seen.insert(hash.clone()) {
                    missing.push(hash.clone());
                }
            }
        }
        Ok(missing)
    }

    /// A unified diff between two stored files, line by line (Inmanta's `diff` call). An empty
    /// id (or all zeros) stands for an empty file, so creations and deletions diff too.
    pub async fn diff_files(&self, a: &str, b: &str) -> Result<Vec<String>> {
        let load = |hash: &str| {
            let hash = hash.to_string();
            async move {
                if hash.is_empty() || hash.bytes().all(|c| c == b'0') {
                    Ok(String::new())
                } else {
                    Ok::<String, Error>(String::from_utf8_lossy(&self.get_file(&hash).await?).into_owned())
                }
            }
        };
        let (old, new) = (load(a).await?, load(b).await?);
        Ok(unified_diff(&old, &new, a, b))
    }
}

/// The unified diff (3 lines of context) of two texts, one line per element, headed by the
/// names `from` and `to`.
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff.unified_diff().context_radius(3).header(from, to).to_string();
    text.lines().map(str::to_string).collect()
}
