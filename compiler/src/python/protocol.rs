//! The JSON lines of the bridge (the Python package's `protocol.py` and `serve.py` speak the other
//! end; its `__init__.py` describes them).
//!
//! The compiler sends a [`Request`], tagged by its `op`. Python then writes [`FromPython`] lines:
//! any number of [`Question`]s, each answered with a [`QuestionReply`], and one final [`Answer`],
//! whose `ok` value is the request's own (`Loaded` for `load`, and so on). Values inside (plugin
//! arguments, results, attributes) are the value encoding of [`super::encode`] and stay JSON here.
//! A line that is none of these is an error naming what was wrong with it.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value as Json};

/// The first line Python writes: its version.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Ready {
    pub ready: String,
}

/// A request of the compiler, by its `op`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request<'a> {
    /// Imports the modules' Python code (answer: [`Loaded`]).
    Load { modules: Vec<LoadModule>, config: LoadConfig<'a> },
    /// Calls a Python plugin (answer: its result, a value).
    Call { plugin: &'a str, args: Vec<Json>, kwargs: Map<String, Json> },
    /// inmanta-core's `to_id` of an instance (answer: the id without version, or null).
    ResourceId {
        entity: &'a str,
        instance: u32,
        #[serde(rename = "type")]
        ty: &'a str,
    },
    /// Exports one instance of a `@resource` entity (answer: [`Exported`]).
    Export {
        entity: &'a str,
        instance: u32,
        #[serde(rename = "type")]
        ty: &'a str,
    },
    /// Runs the `@dependency_manager`s over the exported resources, with their requires (answer:
    /// the requires of each resource whose requires they changed).
    Dependencies { requires: BTreeMap<String, Vec<String>> },
    /// Pairs the model dataclasses with their Python classes (answer: a [`Verdict`] each, up to
    /// the first refused).
    Dataclasses { entities: Vec<DataclassEntity> },
    /// A copy of the process as it is now serves the next requests, until its `Exit` (answer:
    /// [`Forked`], then, from the copy's parent once the copy has ended, [`Ready`]).
    Fork,
    /// Ends a forked copy.
    Exit,
}

/// The forked copy's first line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Forked {
    pub forked: u32,
}

/// A module whose Python code `load` imports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LoadModule {
    pub name: String,
    pub path: std::path::PathBuf,
    /// A v1 module (`plugins/__init__.py`).
    pub v1: bool,
}

/// What the modules' code sees of the project (inmanta-core's `Config` and `Project`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LoadConfig<'a> {
    pub environment: &'a str,
    pub project_dir: &'a std::path::Path,
    /// Every loaded module's directory (empty for a built-in one), for `Project.get().modules`.
    pub module_paths: BTreeMap<String, String>,
}

/// A model dataclass and what its pairing compares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DataclassEntity {
    pub entity: String,
    /// The Python module its class is looked up in (`inmanta_plugins.<namespace>`).
    pub module: String,
    pub name: String,
    pub location: String,
    pub attributes: Vec<DataclassAttribute>,
    pub relations: Vec<DataclassRelation>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DataclassAttribute {
    pub name: String,
    /// The DSL type text; `None` for a typedef, which is not compared.
    #[serde(rename = "type")]
    pub ty: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DataclassRelation {
    pub name: String,
    pub location: String,
}

/// A line Python writes while it serves a request: a question, or the request's final answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FromPython<T> {
    Question(Question),
    Answer(Answer<T>),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for FromPython<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FromPython<T>, D::Error> {
        let object = Map::<String, Json>::deserialize(deserializer)?;
        if ["ok", "error", "unset"].iter().any(|k| object.contains_key(*k)) {
            Answer::deserialize(Json::Object(object))
                .map(FromPython::Answer)
                .map_err(|e| D::Error::custom(format!("an answer: {e}")))
        } else {
            Question::from_object(object)
                .map(FromPython::Question)
                .map_err(|e| D::Error::custom(format!("a question: {e}")))
        }
    }
}

/// What Python asks of the compiler before it answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Question {
    /// `{"get": [instance, attribute]}`: an attribute read (reply: [`GetReply`]).
    Get { instance: u32, attribute: String },
    /// `{"type": entity}`: the entity type's shape (reply: [`TypeReply`]).
    Type(String),
    /// `{"conforms": [typedef, value]}`: whether a value is of a typedef of the model (reply:
    /// `{"ok": bool}`, `{"ok": null}` when it is no typedef).
    Conforms { typedef: String, value: Json },
    /// `{"call": [plugin, args, kwargs]}`: a plugin the compiler runs, called from Python (Jinja
    /// filters, `Compiler.get_plugins()`) (reply: an [`Outcome`]).
    Call { plugin: String, args: Vec<Json>, kwargs: Map<String, Json> },
    /// `{"plugins": true}`: the plugins the compiler runs itself (reply: `{"ok": [name, ...]}`).
    Plugins,
    /// `{"file": sha1, "content": latin-1 text}`: a file a resource mapper uploads (reply: `{}`).
    File { hash: String, content: Vec<u8> },
}

/// The question forms, one key each (`file` has its `content` beside).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum QuestionForm {
    Get(u32, String),
    Type(String),
    Conforms(String, Json),
    Call(String, Vec<Json>, Map<String, Json>),
    Plugins(serde::de::IgnoredAny),
}

impl Question {
    fn from_object(mut object: Map<String, Json>) -> Result<Question, serde_json::Error> {
        if let Some(hash) = object.remove("file") {
            #[derive(Deserialize)]
            struct Upload {
                file: String,
                content: String,
            }
            object.insert("file".into(), hash);
            let upload = Upload::deserialize(Json::Object(object))?;
            // latin-1: one character per byte
            let content = upload.content.chars().map(|c| c as u32 as u8).collect();
            return Ok(Question::File { hash: upload.file, content });
        }
        Ok(match QuestionForm::deserialize(Json::Object(object))? {
            QuestionForm::Get(instance, attribute) => Question::Get { instance, attribute },
            QuestionForm::Type(entity) => Question::Type(entity),
            QuestionForm::Conforms(typedef, value) => Question::Conforms { typedef, value },
            QuestionForm::Call(plugin, args, kwargs) => Question::Call { plugin, args, kwargs },
            QuestionForm::Plugins(_) => Question::Plugins,
        })
    }
}

/// The compiler's reply to a question.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum QuestionReply {
    Get(GetReply),
    Type(TypeReply),
    Conforms {
        ok: Option<bool>,
    },
    Call(Outcome<Json>),
    Plugins {
        ok: Vec<String>,
    },
    /// The file is kept.
    File {},
}

/// An attribute as a read in the model gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum GetReply {
    /// The value.
    V(Json),
    /// Not set yet (always `true`): the call runs again once it is.
    Unset(bool),
    /// An optional attribute that is null (always `true`).
    None(bool),
    /// Unknown (always `true`).
    Unknown(bool),
    NotFound(String),
    Error(String),
}

/// An entity type as Python's stand-in for inmanta-core's `Entity` needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum TypeReply {
    Entity {
        /// Every parent entity.
        parents: Vec<String>,
        /// The direct parents (`std::Entity` for one without `extends`).
        bases: Vec<String>,
        /// The attributes it declares itself.
        own: Vec<String>,
        attributes: BTreeMap<String, AttributeShape>,
        /// Every index on it or a parent, its attribute names sorted.
        indices: Vec<Vec<String>>,
    },
    /// No entity of that name.
    NoEntity {},
}

/// An attribute of an entity type: a relation `[low, high (null when unbounded), the other end's
/// entity, the other end's name (null when one-way)]`, or `false` for a plain attribute.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum AttributeShape {
    Relation(u32, Option<u32>, String, Option<String>),
    /// Always `false`.
    Plain(bool),
}

/// The final answer of a request (or of a `call` question): its value, a Python exception, or
/// an attribute read that is not set yet. What a plugin printed comes with it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Answer<T> {
    #[serde(flatten)]
    pub outcome: Outcome<T>,
    #[serde(default)]
    pub printed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome<T> {
    Ok(T),
    Error(PyError),
    /// Always `true`.
    Unset(bool),
}

/// A Python exception (or a refusal of the bridge), as the bridge reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PyError {
    /// The exception's class name, or the Inmanta exception it stands for.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// Where it was raised, outside the bridge (`file:line in function`); empty when unknown.
    #[serde(default)]
    pub frame: String,
    /// The class an explicit `PluginException` was raised as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// An error of Inmanta's plugin loader, which gives no location.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlocated: bool,
    /// The module's file whose import failed, and its line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl PyError {
    pub(crate) fn new(kind: impl Into<String>, message: impl Into<String>) -> PyError {
        PyError {
            kind: kind.into(),
            message: message.into(),
            frame: String::new(),
            class: None,
            unlocated: false,
            file: None,
            line: None,
        }
    }
}

/// What `load` found in the modules' code.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Loaded {
    pub plugins: Vec<PluginSignature>,
    pub resources: Vec<ResourceClass>,
    #[serde(default)]
    pub python: String,
}

/// A Python plugin's signature (only what the compiler uses is read).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct PluginSignature {
    pub name: String,
    #[serde(default)]
    pub allow_unknown: bool,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub line: u64,
    #[serde(default)]
    pub model_types: Vec<String>,
}

/// A `@resource` class: the entity it maps and how.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ResourceClass {
    pub entity: String,
    pub agent: String,
    pub id_attribute: String,
    pub fields: Vec<String>,
}

/// What the export of one instance gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Exported {
    /// `{"id": [entity type, agent, attribute, value], "attributes": {...}}`.
    Resource { id: [String; 4], attributes: Map<String, Json> },
    /// `{"ignored": true}`: the mapper raised `IgnoreResourceException`.
    Ignored,
    /// `{"$u": 1}`: the mapper met an unknown.
    Unknown,
}

impl<'de> Deserialize<'de> for Exported {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Exported, D::Error> {
        #[derive(Deserialize)]
        struct Resource {
            id: [String; 4],
            attributes: Map<String, Json>,
        }
        let object = Map::<String, Json>::deserialize(deserializer)?;
        if object.contains_key("$u") {
            Ok(Exported::Unknown)
        } else if object.contains_key("ignored") {
            Ok(Exported::Ignored)
        } else {
            let r = Resource::deserialize(Json::Object(object))
                .map_err(|e| D::Error::custom(format!("an exported resource: {e}")))?;
            Ok(Exported::Resource { id: r.id, attributes: r.attributes })
        }
    }
}

/// Inmanta's verdict on one dataclass's pairing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// No Python object of its name: not paired.
    Absent,
    Paired,
    Refused {
        #[serde(rename = "type")]
        kind: String,
        message: String,
    },
}

/// One line of Python, or what is wrong with it (the line is quoted). Read as JSON first, so
/// that numbers keep their exact value inside tagged and flattened types.
pub(crate) fn parse_line<T: DeserializeOwned>(line: &str) -> Result<T, String> {
    let line = line.trim_end();
    serde_json::from_str::<Json>(line)
        .and_then(T::deserialize)
        .map_err(|e| format!("the Python process wrote a line that is not the protocol ({e}): {line}"))
}

/// A line the compiler writes, without its newline; it fails only on a path that is no UTF-8.
pub(crate) fn to_line(message: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(message).map_err(|e| format!("a line for the Python process can not be written: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(line: &str) -> Json {
        serde_json::from_str(line).unwrap()
    }

    /// A line the compiler writes is the JSON the Python side reads.
    fn written(ours: &impl Serialize, line: &str) {
        assert_eq!(value(&to_line(ours).unwrap()), value(line));
    }

    #[test]
    fn requests() {
        let load = Request::Load {
            modules: vec![LoadModule { name: "std".into(), path: "/p/libs/std".into(), v1: false }],
            config: LoadConfig {
                environment: "6c66ca44-da58-4924-ad17-151abc2f3726",
                project_dir: std::path::Path::new("/p"),
                module_paths: [("std".to_string(), "/p/libs/std".to_string()), ("__config__".into(), String::new())]
                    .into(),
            },
        };
        written(
            &load,
            r#"{"op": "load", "modules": [{"name": "std", "path": "/p/libs/std", "v1": false}],
                "config": {"environment": "6c66ca44-da58-4924-ad17-151abc2f3726", "project_dir": "/p",
                           "module_paths": {"std": "/p/libs/std", "__config__": ""}}}"#,
        );
        let kwargs = json!({"sep": ","}).as_object().unwrap().clone();
        written(
            &Request::Call { plugin: "std::join", args: vec![json!(["a", "b"])], kwargs },
            r#"{"op": "call", "plugin": "std::join", "args": [["a", "b"]], "kwargs": {"sep": ","}}"#,
        );
        written(
            &Request::ResourceId { entity: "std::testing::NullResource", instance: 4, ty: "mod::Null" },
            r#"{"op": "resource_id", "entity": "std::testing::NullResource", "instance": 4, "type": "mod::Null"}"#,
        );
        written(
            &Request::Export { entity: "files::File", instance: 12, ty: "files::File" },
            r#"{"op": "export", "entity": "files::File", "instance": 12, "type": "files::File"}"#,
        );
        written(
            &Request::Dependencies { requires: [("a::B[h,n=1]".to_string(), vec!["a::B[h,n=2]".to_string()])].into() },
            r#"{"op": "dependencies", "requires": {"a::B[h,n=1]": ["a::B[h,n=2]"]}}"#,
        );
        written(
            &Request::Dataclasses {
                entities: vec![DataclassEntity {
                    entity: "dc::Point".into(),
                    module: "inmanta_plugins.dc".into(),
                    name: "Point".into(),
                    location: "/p/libs/dc/model/_init.cf:3:8".into(),
                    attributes: vec![
                        DataclassAttribute { name: "x".into(), ty: Some("int".into()) },
                        DataclassAttribute { name: "n".into(), ty: None },
                    ],
                    relations: vec![DataclassRelation { name: "other".into(), location: "/p/main.cf:9:1".into() }],
                }],
            },
            r#"{"op": "dataclasses", "entities": [{"entity": "dc::Point", "module": "inmanta_plugins.dc",
                "name": "Point", "location": "/p/libs/dc/model/_init.cf:3:8",
                "attributes": [{"name": "x", "type": "int"}, {"name": "n", "type": null}],
                "relations": [{"name": "other", "location": "/p/main.cf:9:1"}]}]}"#,
        );
    }

    #[test]
    fn ready_line() {
        assert_eq!(parse_line::<Ready>(r#"{"ready":"3.13.0"}"#).unwrap(), Ready { ready: "3.13.0".into() });
    }

    fn question(line: &str) -> Question {
        match parse_line::<FromPython<Json>>(line).unwrap() {
            FromPython::Question(q) => q,
            FromPython::Answer(a) => panic!("{line} read as an answer {a:?}"),
        }
    }

    fn answer<T: DeserializeOwned>(line: &str) -> Answer<T> {
        match parse_line::<FromPython<T>>(line).unwrap() {
            FromPython::Answer(a) => a,
            FromPython::Question(q) => panic!("{line} read as a question {q:?}"),
        }
    }

    /// Python's questions, as `Channel.send` writes them (`separators=(",", ":")`).
    #[test]
    fn questions() {
        assert_eq!(question(r#"{"get":[3,"name"]}"#), Question::Get { instance: 3, attribute: "name".into() });
        assert_eq!(question(r#"{"type":"std::Host"}"#), Question::Type("std::Host".into()));
        assert_eq!(
            question(r#"{"conforms":["mod::port",{"$d":[["a",1]]}]}"#),
            Question::Conforms { typedef: "mod::port".into(), value: json!({"$d": [["a", 1]]}) }
        );
        assert_eq!(
            question(r#"{"call":["std::upper",["x"],{"n":1}]}"#),
            Question::Call {
                plugin: "std::upper".into(),
                args: vec![json!("x")],
                kwargs: json!({"n": 1}).as_object().unwrap().clone()
            }
        );
        assert_eq!(question(r#"{"plugins":true}"#), Question::Plugins);
        assert_eq!(
            question(r#"{"file":"3f786850e387550fdab836ed7e6dc881de23001b","content":"caf\u00e9\n"}"#),
            Question::File { hash: "3f786850e387550fdab836ed7e6dc881de23001b".into(), content: b"caf\xe9\n".to_vec() }
        );
    }

    #[test]
    fn question_replies() {
        written(
            &QuestionReply::Get(GetReply::V(json!({"$i": 2, "$t": "std::Host", "$a": {}}))),
            r#"{"v": {"$i": 2, "$t": "std::Host", "$a": {}}}"#,
        );
        written(&QuestionReply::Get(GetReply::Unset(true)), r#"{"unset": true}"#);
        written(&QuestionReply::Get(GetReply::None(true)), r#"{"none": true}"#);
        written(&QuestionReply::Get(GetReply::Unknown(true)), r#"{"unknown": true}"#);
        written(&QuestionReply::Get(GetReply::NotFound("no instance 9".into())), r#"{"notfound": "no instance 9"}"#);
        written(&QuestionReply::Get(GetReply::Error("boom".into())), r#"{"error": "boom"}"#);
        written(
            &QuestionReply::Type(TypeReply::Entity {
                parents: vec!["std::Entity".into()],
                bases: vec!["std::Entity".into()],
                own: vec!["name".into(), "os".into()],
                attributes: [
                    ("name".to_string(), AttributeShape::Plain(false)),
                    ("os".to_string(), AttributeShape::Relation(1, Some(1), "std::OS".into(), None)),
                    ("files".to_string(), AttributeShape::Relation(0, None, "files::File".into(), Some("host".into()))),
                ]
                .into(),
                indices: vec![vec!["name".into()]],
            }),
            r#"{"parents": ["std::Entity"], "bases": ["std::Entity"], "own": ["name", "os"],
                "attributes": {"name": false, "os": [1, 1, "std::OS", null], "files": [0, null, "files::File", "host"]},
                "indices": [["name"]]}"#,
        );
        written(&QuestionReply::Type(TypeReply::NoEntity {}), "{}");
        written(&QuestionReply::Conforms { ok: Some(true) }, r#"{"ok": true}"#);
        written(&QuestionReply::Conforms { ok: None }, r#"{"ok": null}"#);
        written(&QuestionReply::Call(Outcome::Ok(json!("X"))), r#"{"ok": "X"}"#);
        written(&QuestionReply::Call(Outcome::Unset(true)), r#"{"unset": true}"#);
        written(
            &QuestionReply::Call(Outcome::Error(PyError::new("NotFoundException", "no plugin a::b"))),
            r#"{"error": {"type": "NotFoundException", "message": "no plugin a::b", "frame": ""}}"#,
        );
        written(&QuestionReply::Plugins { ok: vec!["std::print".into()] }, r#"{"ok": ["std::print"]}"#);
        written(&QuestionReply::File {}, "{}");
    }

    /// Final answers, as bridge.py, errors.py and paired.py write them.
    #[test]
    fn answers() {
        let loaded = answer::<Loaded>(
            r#"{"ok":{"plugins":[{"file":"/p/libs/m/plugins/__init__.py","line":5,"model_types":["m::T"],"name":"m::f","args":["x"],"kwonly":[],"varargs":false,"varkw":false,"allow_unknown":true}],"resources":[{"entity":"m::R","agent":"host","id_attribute":"name","fields":["name","value"]}],"python":"3.13.0"}}"#,
        );
        assert_eq!(
            loaded.outcome,
            Outcome::Ok(Loaded {
                plugins: vec![PluginSignature {
                    name: "m::f".into(),
                    allow_unknown: true,
                    file: "/p/libs/m/plugins/__init__.py".into(),
                    line: 5,
                    model_types: vec!["m::T".into()],
                }],
                resources: vec![ResourceClass {
                    entity: "m::R".into(),
                    agent: "host".into(),
                    id_attribute: "name".into(),
                    fields: vec!["name".into(), "value".into()],
                }],
                python: "3.13.0".into(),
            })
        );
        let failed = answer::<Loaded>(
            r#"{"error":{"type":"CompilerException","message":"Unable to load all plug-ins for module m","frame":"/p/libs/m/plugins/__init__.py:3 in <module>","file":"/p/libs/m/plugins/__init__.py","line":3}}"#,
        );
        let Outcome::Error(e) = failed.outcome else { panic!("{failed:?}") };
        assert_eq!(
            (e.kind.as_str(), e.file.as_deref(), e.line),
            ("CompilerException", Some("/p/libs/m/plugins/__init__.py"), Some(3))
        );
        let unlocated = answer::<Loaded>(
            r#"{"error":{"type":"InvalidTypeAnnotation","message":"Union type must be subscripted","frame":"","unlocated":true}}"#,
        );
        assert!(matches!(unlocated.outcome, Outcome::Error(PyError { unlocated: true, .. })));

        let called = answer::<Json>(r#"{"ok":{"$d":[["b",1],["a",2]]},"printed":"hello\n"}"#);
        assert_eq!(
            called,
            Answer { outcome: Outcome::Ok(json!({"$d": [["b", 1], ["a", 2]]})), printed: Some("hello\n".into()) }
        );
        assert_eq!(answer::<Json>(r#"{"unset":true}"#).outcome, Outcome::Unset(true));
        assert_eq!(answer::<Json>(r#"{"ok":{"$u":1}}"#).outcome, Outcome::Ok(json!({"$u": 1})));
        let raised = answer::<Json>(
            r#"{"error":{"type":"PluginException","message":"nope","frame":"/p/libs/m/plugins/__init__.py:9 in f","class":"inmanta_plugins.m.Nope"}}"#,
        );
        let Outcome::Error(e) = raised.outcome else { panic!("{raised:?}") };
        assert_eq!(e.class.as_deref(), Some("inmanta_plugins.m.Nope"));
        assert_eq!(e.frame, "/p/libs/m/plugins/__init__.py:9 in f");

        assert_eq!(
            answer::<Option<String>>(r#"{"ok":"a::B[h,n=1]"}"#).outcome,
            Outcome::Ok(Some("a::B[h,n=1]".into()))
        );
        assert_eq!(answer::<Option<String>>(r#"{"ok":null}"#).outcome, Outcome::Ok(None));

        assert_eq!(
            answer::<Exported>(r#"{"ok":{"id":["m::R","host","name","a"],"attributes":{"name":"a","requires":[]}}}"#)
                .outcome,
            Outcome::Ok(Exported::Resource {
                id: ["m::R".into(), "host".into(), "name".into(), "a".into()],
                attributes: json!({"name": "a", "requires": []}).as_object().unwrap().clone(),
            })
        );
        assert_eq!(answer::<Exported>(r#"{"ok":{"ignored":true}}"#).outcome, Outcome::Ok(Exported::Ignored));
        assert_eq!(answer::<Exported>(r#"{"ok":{"$u":1}}"#).outcome, Outcome::Ok(Exported::Unknown));

        assert_eq!(
            answer::<BTreeMap<String, Vec<String>>>(r#"{"ok":{"a::B[h,n=1]":["a::B[h,n=2]"]}}"#).outcome,
            Outcome::Ok([("a::B[h,n=1]".to_string(), vec!["a::B[h,n=2]".to_string()])].into())
        );
        assert_eq!(
            answer::<Vec<Verdict>>(
                r#"{"ok":[{"status":"absent"},{"status":"paired"},{"status":"refused","type":"DataClassMismatchException","message":"is not frozen"}]}"#
            )
            .outcome,
            Outcome::Ok(vec![
                Verdict::Absent,
                Verdict::Paired,
                Verdict::Refused { kind: "DataClassMismatchException".into(), message: "is not frozen".into() }
            ])
        );
    }

    #[test]
    fn malformed_lines_name_what_is_wrong() {
        let err = parse_line::<FromPython<Json>>(r#"{"ask":[1,"x"]}"#).unwrap_err();
        assert!(err.contains("a question: unknown variant `ask`"), "{err}");
        assert!(err.ends_with(r#": {"ask":[1,"x"]}"#), "{err}");
        let err = parse_line::<FromPython<Json>>(r#"{"get":["x","name"]}"#).unwrap_err();
        assert!(err.contains("a question: invalid type: string \"x\", expected u32"), "{err}");
        let err = parse_line::<FromPython<Json>>(r#"{"file":"abc"}"#).unwrap_err();
        assert!(err.contains("a question: missing field `content`"), "{err}");
        let err = parse_line::<FromPython<Json>>(r#"{"error":"boom"}"#).unwrap_err();
        assert!(err.contains("an answer: invalid type: string \"boom\", expected struct PyError"), "{err}");
        let err = parse_line::<FromPython<Exported>>(r#"{"ok":{"id":["m::R","host"],"attributes":{}}}"#).unwrap_err();
        assert!(err.contains("an answer: an exported resource: invalid length 2"), "{err}");
        let err = parse_line::<FromPython<Vec<Verdict>>>(r#"{"ok":[{"status":"maybe"}]}"#).unwrap_err();
        assert!(err.contains("an answer: unknown variant `maybe`"), "{err}");
        let err = parse_line::<FromPython<Json>>("Traceback (most recent call last):").unwrap_err();
        assert!(err.starts_with("the Python process wrote a line that is not the protocol (expected value"), "{err}");
    }
}
