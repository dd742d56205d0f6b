//! `inmanta policy-engine`: what an access policy is evaluated against (docs/security.md,
//! "Access policies"). Both commands work offline: they print what is built into this binary.

use clap::Subcommand;
use serde::Serialize;

use super::CliError;

#[derive(Subcommand)]
pub enum PolicyEngineCommand {
    /// Print the authorization metadata of every endpoint, which an access policy reads as
    /// `data` (`data.endpoints["GET /api/v2/resource"]`), as Inmanta prints it: JSON, keys sorted.
    PrintEndpointData,
    /// Print the built-in access policy (the legacy provider's grants in Rego), to start a policy
    /// of your own from: `inmanta policy-engine print-default-policy > policy.rego`.
    PrintDefaultPolicy,
}

pub fn run(command: PolicyEngineCommand) -> Result<(), CliError> {
    match command {
        PolicyEngineCommand::PrintEndpointData => {
            let document = orchestrator::auth::policy::endpoint_document(&crate::rest::endpoint_data());
            println!("{}", pretty(&document)?);
        }
        PolicyEngineCommand::PrintDefaultPolicy => print!("{}", orchestrator::auth::policy::DEFAULT_POLICY),
    }
    Ok(())
}

/// JSON indented by four spaces, as Python's `json.dumps(indent=4)`; objects come out in key
/// order (serde_json's maps are sorted).
fn pretty(value: &serde_json::Value) -> Result<String, CliError> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer).map_err(|e| CliError::Usage(format!("cannot write the endpoint data: {e}")))?;
    String::from_utf8(out).map_err(|e| CliError::Usage(format!("cannot write the endpoint data: {e}")))
}
