//! Resource mappings: how an entity becomes a resource (the built-in ones and those modules
//! declare in module.yml).

/// How an entity maps to a resource: the built-in ones below, and those modules declare under
/// `resources:` in their module.yml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// The full entity name, which is also the resource type.
    pub entity: String,
    /// The attribute path of the agent name, e.g. `host.name`.
    pub agent: String,
    /// The attribute that identifies the resource on its agent.
    pub id_attr: String,
    /// The exported attributes (the base resource attributes are always added).
    pub fields: Vec<String>,
    /// One of ours, whose fields follow the conventions of its handler (`permissions` from
    /// `mode`, `hash` of the content, ...).
    pub builtin: bool,
    /// A Python `@resource` class: its id and attributes come from Python (`get_<field>`
    /// mappers, inherited fields), see [`export_python_resources`].
    pub python: bool,
}

/// The built-in mappings as constants; [`BUILTIN`] holds them as [`Mapping`]s.
struct StaticMapping {
    entity: &'static str,
    agent: &'static str,
    id_attr: &'static str,
    fields: &'static [&'static str],
}

pub(super) static BUILTIN: std::sync::LazyLock<Vec<Mapping>> = std::sync::LazyLock::new(|| {
    BUILTIN_MAPPINGS
        .iter()
        .map(|m| Mapping {
            entity: m.entity.into(),
            agent: m.agent.into(),
            id_attr: m.id_attr.into(),
            fields: m.fields.iter().map(|f| f.to_string()).collect(),
            builtin: true,
            python: false,
        })
        .collect()
});

const BUILTIN_MAPPINGS: &[StaticMapping] = &[
    StaticMapping {
        entity: "std::testing::NullResource",
        agent: "agentname",
        id_attr: "name",
        fields: &["name", "agentname", "fail", "value", "int_value"],
    },
    StaticMapping {
        entity: "fs::File",
        agent: "host.name",
        id_attr: "path",
        fields: &["path", "owner", "group", "permissions", "hash", "content", "via"],
    },
    StaticMapping {
        entity: "fs::Directory",
        agent: "host.name",
        id_attr: "path",
        fields: &["path", "owner", "group", "permissions", "via"],
    },
    StaticMapping { entity: "fs::Symlink", agent: "host.name", id_attr: "dst", fields: &["src", "dst", "via"] },
    StaticMapping {
        entity: "fs::JsonFile",
        agent: "host.name",
        id_attr: "uri",
        fields: &["path", "permissions", "owner", "group", "uri", "indent", "format", "values", "via"],
    },
    StaticMapping {
        entity: "exec::Run",
        agent: "host.name",
        id_attr: "command",
        fields: &[
            "command",
            "creates",
            "cwd",
            "environment",
            "onlyif",
            "path",
            "reload",
            "reload_only",
            "returns",
            "timeout",
            "unless",
            "skip_on_fail",
            "via",
        ],
    },
];
