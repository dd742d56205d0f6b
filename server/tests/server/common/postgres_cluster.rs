//! A PostgreSQL cluster of the test's own (initdb, pg_ctl) on a free loopback port, that a test
//! may stop and start at will: never the machine's shared cluster, which other tests use.
//! Removed when dropped. Needs PostgreSQL's server binaries under /usr/lib/postgresql.

use std::path::PathBuf;
use std::process::Command;

pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

pub struct PostgresCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl PostgresCluster {
    pub fn start_new() -> Result<PostgresCluster, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|e| format!("no PostgreSQL server binaries in /usr/lib/postgresql: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|b| b.join("initdb").exists())
            .max()
            .ok_or("no initdb under /usr/lib/postgresql/*/bin")?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        if is_root() {
            let status = Command::new("chown").arg("postgres").arg(dir.path()).status().map_err(|e| e.to_string())?;
            if !status.success() {
                return Err("cannot hand the cluster directory to the postgres user".into());
            }
        }
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?;
        let pg = PostgresCluster { dir, bin, port: port.port() };
        let data = pg.dir.path().join("data");
        pg.run("initdb", &["-D", &data.display().to_string(), "-A", "trust", "-U", "postgres"])?;
        pg.start()?;
        Ok(pg)
    }

    /// Runs one of the cluster's programs (as the postgres user when this is root).
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(program);
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command.args(args).output().map_err(|e| format!("cannot run {program}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    pub fn start(&self) -> Result<(), String> {
        let dir = self.dir.path().display().to_string();
        let options = format!("-p {} -k {dir} -c listen_addresses=127.0.0.1 -c fsync=off", self.port);
        self.run("pg_ctl", &["-D", &format!("{dir}/data"), "-l", &format!("{dir}/log"), "-w", "-o", &options, "start"])
    }

    /// A fast shutdown: every session is ended, as when an operator stops the database.
    pub fn stop(&self) {
        let data = format!("{}/data", self.dir.path().display());
        self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]).expect("stop PostgreSQL");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        let data = format!("{}/data", self.dir.path().display());
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "stop"]);
    }
}
