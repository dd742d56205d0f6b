//! Compile a project and print the exported resources (or the errors).
//!
//! Usage: `cargo run -p compiler --example cfc -- PROJECT_DIR [--json]`

// the allocator of the `inmanta` binary (server/src/main.rs): profiles of this example should
// show the compiler as it runs there
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| ".".into());
    let json = args.any(|a| a == "--json");
    let start = std::time::Instant::now();
    match compiler::compile_project(std::path::Path::new(&dir)) {
        Ok(out) => {
            for w in &out.warnings {
                eprint!("{w}");
            }
            for p in &out.printed {
                println!("{p}");
            }
            if json {
                println!("{}", out.export_json());
            }
            let s = &out.stats;
            eprintln!(
                "{} resources, {} instances, {} statements in {:?} (parse {:?}, types {:?}, eval {:?}, export {:?})",
                out.resources.len(),
                s.instances,
                s.statements_run,
                start.elapsed(),
                s.parse_time,
                s.build_time,
                s.eval_time,
                s.export_time
            );
        }
        Err(d) => {
            eprint!("{d}");
            std::process::exit(1);
        }
    }
}
