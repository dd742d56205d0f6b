# The access policy this server uses with `[server] authorization-provider = policy-engine` when
# no `[policy_engine] policy-file` is configured. It grants users exactly what the legacy
# provider grants them (docs/security.md, "Roles"); copy it with
# `inmanta policy-engine print-default-policy` and edit the copy to change who may do what.
#
# The server asks for `data.policy.allow` on every call a user makes. The data document holds the
# metadata of every endpoint (`inmanta policy-engine print-endpoint-data`); the input holds the
# call (`input.request`) and the caller (`input.token`).
package policy

# The roles this policy knows; they are offered when roles are assigned.
roles := ["read-only", "noc", "operator", "environment-admin", "environment-expert-admin"]

# What the called endpoint is.
endpoint_data := data.endpoints[input.request.endpoint_id]

# The environment the call is about, or null for a server-wide call.
request_environment := input.request.parameters[endpoint_data.environment_param] if {
	endpoint_data.environment_param != null
} else := null

# Nothing is allowed unless a rule below allows it.
default allow := false

# Users reach only the endpoints meant for API clients (not those only agents and the compiler
# call).
user_endpoint if "api" in endpoint_data.client_types

### Everyone who is signed in ###

# Server-wide endpoints every signed-in user may call: reads that reveal no environment's content,
# changing one's own password, their own user (`user.read`), the file store by hash
# (`file.read`, `file.write`), GraphQL (`graphql.read`; its queries are checked per environment),
# their own tokens in the token registry (`token`) and the console's checks of a signed-in user
# (`authenticated`).
open_server_labels := {
	"project.read",
	"environment.read",
	"status.read",
	"docs.read",
	"role.read",
	"feature.read",
	"metrics.read",
	"user.change-password",
	"user.read",
	"file.read",
	"file.write",
	"graphql.read",
	"token",
	"authenticated",
}

allow if {
	user_endpoint
	endpoint_data.environment_param == null
	endpoint_data.auth_label in open_server_labels
}

### Roles in one environment ###

# Everything a role may read.
read_labels := {
	"agent.read",
	"compile-report.read",
	"compiler.status.read",
	"desired-state.read",
	"discovered-resources.read",
	"docs.read",
	"dryrun.read",
	"environment.read",
	"environment.setting.read",
	"fact.read",
	"file.read",
	"graphql.read",
	"metrics.read",
	"notification.read",
	"parameter.read",
	"pip-config.read",
	"project.read",
	"report.read",
	"resource.read",
	"status.read",
	"user.read",
	"role.read",
	"role-assignment.read",
	"feature.read",
}

# noc: operate the environment without changing its desired state or settings. Triggering a
# compile is `compiler.execute`; one that first pulls the model's source is
# `compiler.execute.update`.
noc_labels := read_labels | {
	"deploy",
	"dryrun.write",
	"agent.pause-resume",
	"environment.halt-resume",
	"notification.write",
	"compiler.execute",
}

# environment-admin: everything in the environment but the expert actions.
environment_admin_labels := noc_labels | {
	"desired-state.write",
	"environment.modify",
	"environment.setting.write",
	"compiler.execute.update",
	"parameter.write",
	"fact.write",
	"agent.write",
}

# environment-expert-admin: the expert actions too.
environment_expert_admin_labels := environment_admin_labels | {
	"environment.clear",
	"environment.delete",
	"token",
}

# operator reads only: its writes are those of a service inventory, which this server has not.
role_labels := {
	"read-only": read_labels,
	"operator": read_labels,
	"noc": noc_labels,
	"environment-admin": environment_admin_labels,
	"environment-expert-admin": environment_expert_admin_labels,
}

# A compile that pulls the model's source first (`update` true) needs `compiler.execute.update`
# where the compile endpoints' label is `compiler.execute`. The server asks about such a compile
# as `POST /api/v1/notify/<id>` with `update` true.
needed_label := "compiler.execute.update" if {
	endpoint_data.auth_label == "compiler.execute"
	input.request.parameters.update == true
} else := endpoint_data.auth_label

allow if {
	user_endpoint
	request_environment != null
	some role in input.token["urn:inmanta:roles"][request_environment]
	needed_label in role_labels[role]
}

### Global admins ###

allow if {
	user_endpoint
	input.token["urn:inmanta:is_admin"] == true
}
