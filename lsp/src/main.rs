//! `inmanta-lsp`: the language server alone, what `inmanta lsp` runs; the crate's tests and its
//! bench drive it as an editor does without building the whole `inmanta` binary.

use std::process::ExitCode;

fn main() -> ExitCode {
    // `inmanta-lsp lsp` and `--stdio`, as editors' configurations pass them, are the same server
    match lsp::run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
