// `sqlx::migrate!` embeds the migration folders at compile time, but cargo does not know the
// crate reads them: without this a new or changed migration is missed by incremental builds.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
