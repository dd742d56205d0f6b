//! The migrations of SQLite and PostgreSQL are written once where they can be.
//!
//! sqlx embeds one folder per database (`migrations/sqlite`, `migrations/postgres`) and records
//! each applied migration's checksum, so a migration file can never change once released. A
//! shared folder would need a build step that writes both folders anyway; instead this test keeps
//! the pairs honest: every migration exists for both databases under the same name, and the two
//! files are byte-identical unless the migration is listed below with the reason they differ.

use std::collections::BTreeMap;
use std::path::Path;

/// The migrations whose SQL must differ between the databases, and why.
const DIALECT_SPECIFIC: &[(&str, &str)] = &[
    ("0002_file.sql", "binary content: BLOB on SQLite, BYTEA on PostgreSQL"),
    ("0021_ha.sql", "its comment says which tables SQLite leaves unused"),
    ("0041_resource_status_column.sql", "SQLite adds only VIRTUAL generated columns, PostgreSQL only STORED"),
    (
        "0044_resource_list_covering_indexes.sql",
        "SQLite tests filters on an index's extra columns; PostgreSQL would only pay for them on every deploy",
    ),
    (
        "0045_action_children_without_foreign_keys.sql",
        "PostgreSQL drops two foreign keys whose per-row check it paid on every deploy; SQLite would have to rebuild the tables",
    ),
    ("0049_resource_summary_index.sql", "SQLite adds only VIRTUAL generated columns, PostgreSQL only STORED"),
];

fn migrations(database: &str) -> BTreeMap<String, Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations").join(database);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap())
        })
        .collect()
}

#[test]
fn every_migration_exists_for_both_databases_and_is_the_same_unless_it_must_differ() {
    let sqlite = migrations("sqlite");
    let postgres = migrations("postgres");
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&sqlite), names(&postgres), "the two folders must hold the same migrations");
    for (name, text) in &sqlite {
        let listed = DIALECT_SPECIFIC.iter().any(|(n, _)| n == name);
        let same = postgres[name] == *text;
        assert!(
            same || listed,
            "migrations/sqlite/{name} and migrations/postgres/{name} differ: make them identical, or add \
             {name} to DIALECT_SPECIFIC with the reason"
        );
        assert!(!(same && listed), "{name} is identical on both databases: take it off DIALECT_SPECIFIC");
    }
    for (name, _) in DIALECT_SPECIFIC {
        assert!(sqlite.contains_key(*name), "DIALECT_SPECIFIC names {name}, which is not a migration");
    }
}
