//! `inmanta lsp`: the Language Server Protocol over stdin/stdout, on the `compiler` crate.
//!
//! Diagnostics on every change (the syntax errors of every open file at once, then what a
//! compile of the project with the unsaved buffers says), go to definition, references, hover,
//! completion, document and workspace symbols and rename. Editors: docs/editors.md.

mod complete;
mod diagnose;
mod features;
mod plugins;
mod project;
mod text;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crossbeam_channel::Sender;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument, Notification as _,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, References, Rename, Request as _,
    WorkspaceSymbolRequest,
};
use lsp_types::{
    CompletionOptions, InitializeParams, OneOf, Position, ServerCapabilities, TextDocumentPositionParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions, Url,
};

use project::Project;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the server can do, as told to the editor in `initialize`.
fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            save: Some(lsp_types::TextDocumentSyncSaveOptions::Supported(true)),
            ..TextDocumentSyncOptions::default()
        })),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![":".into(), ".".into(), "(".into(), ",".into()]),
            ..CompletionOptions::default()
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// Serves one editor on stdin/stdout until it says `exit`.
pub fn run_stdio() -> Result<(), Error> {
    let (connection, io) = Connection::stdio();
    serve(&connection)?;
    drop(connection);
    io.join()?;
    Ok(())
}

/// Serves one editor on `connection`: the handshake, then every message until `shutdown`.
pub fn serve(connection: &Connection) -> Result<(), Error> {
    let params = connection.initialize(serde_json::to_value(capabilities())?)?;
    let params: InitializeParams = serde_json::from_value(params)?;
    let mut server = Server::new(connection.sender.clone(), workspace_root(&params));
    for message in &connection.receiver {
        match message {
            Message::Request(req) => {
                if connection.handle_shutdown(&req)? {
                    return Ok(());
                }
                let response = server.request(req);
                connection.sender.send(Message::Response(response))?;
            }
            Message::Notification(n) => server.notification(n),
            Message::Response(_) => {}
        }
    }
    Ok(())
}

#[allow(deprecated)] // `root_uri` is what older editors send
fn workspace_root(params: &InitializeParams) -> Option<PathBuf> {
    let folder = params.workspace_folders.as_ref().and_then(|f| f.first()).map(|f| f.uri.clone());
    folder.or_else(|| params.root_uri.clone()).and_then(|u| u.to_file_path().ok())
}

/// The directory of the project a file is in: the nearest one above it with a `project.yml`.
fn project_dir_of(path: &Path) -> Option<PathBuf> {
    path.ancestors().skip(1).find(|d| d.join("project.yml").is_file()).map(Path::to_path_buf)
}

/// Where the built-in modules' sources are written for the editor to open.
fn builtin_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("inmanta").join("lsp").join(format!("builtin-{}", env!("CARGO_PKG_VERSION")))
}

struct Server {
    sender: Sender<Message>,
    root: Option<PathBuf>,
    project: Option<Project>,
    /// The files the editor has open (their text is the editor's, not the disk's).
    open: Vec<PathBuf>,
    compiles: Sender<diagnose::Job>,
}

impl Server {
    fn new(sender: Sender<Message>, root: Option<PathBuf>) -> Server {
        let compiles = diagnose::spawn(sender.clone());
        let root = root.filter(|r| r.join("project.yml").is_file());
        Server { sender, root, project: None, open: Vec::new(), compiles }
    }

    /// The project, loaded the first time a file is opened (from the workspace, else from the
    /// project the file is in).
    fn project_for(&mut self, path: &Path) -> &mut Project {
        if self.project.is_none() {
            let root = self
                .root
                .clone()
                .or_else(|| project_dir_of(path))
                .or_else(|| path.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from("."));
            tracing::info!(root = %root.display(), "loading the project");
            self.project = Some(Project::load(&root, &builtin_dir()));
        }
        self.project.get_or_insert_with(|| Project::load(Path::new("."), &builtin_dir()))
    }

    fn notification(&mut self, n: Notification) {
        let result = match n.method.as_str() {
            DidOpenTextDocument::METHOD => serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                .map(|p| self.changed(&p.text_document.uri, |_| Some(p.text_document.text))),
            DidChangeTextDocument::METHOD => serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                .map(|p| {
                    let changes = p.content_changes;
                    self.changed(&p.text_document.uri, move |old| {
                        let mut text = old?;
                        for c in changes {
                            match c.range {
                                Some(r) => text::apply_change(&mut text, r, &c.text),
                                None => text = c.text,
                            }
                        }
                        Some(text)
                    })
                }),
            DidSaveTextDocument::METHOD => {
                self.schedule_compile();
                Ok(())
            }
            DidCloseTextDocument::METHOD => serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                .map(|p| {
                    if let Ok(path) = p.text_document.uri.to_file_path() {
                        self.open.retain(|o| *o != path);
                        let on_disk = std::fs::read_to_string(&path).ok();
                        if let (Some(text), Some(project)) = (on_disk, self.project.as_mut()) {
                            project.set_text(&path, text);
                        }
                        self.schedule_compile();
                    }
                }),
            _ => Ok(()),
        };
        if let Err(e) = result {
            tracing::warn!("a notification the server could not read: {e}");
        }
    }

    /// A buffer changed: its new text (from the old one), its syntax errors at once, a compile.
    fn changed(&mut self, uri: &Url, new_text: impl FnOnce(Option<String>) -> Option<String>) {
        let Ok(path) = uri.to_file_path() else { return };
        let project = self.project_for(&path);
        let old = project.file(&path).map(|f| project.files[f].text.clone());
        let Some(text) = new_text(old) else { return };
        let file = project.set_text(&path, text);
        let syntax = diagnose::syntax_diagnostics(&project.files[file]);
        if !self.open.contains(&path) {
            self.open.push(path.clone());
        }
        diagnose::publish(&self.sender, &path, syntax);
        self.schedule_compile();
    }

    fn schedule_compile(&mut self) {
        let Some(project) = &self.project else { return };
        if !project.root.join("project.yml").is_file() {
            return; // a file of no project: its syntax is all that can be checked
        }
        let open: HashMap<PathBuf, diagnose::OpenFile> = self
            .open
            .iter()
            .filter_map(|p| project.file(p).map(|f| (p.clone(), diagnose::OpenFile::of(&project.files[f]))))
            .collect();
        let job = diagnose::Job { root: project.root.clone(), main: project.root.join("main.cf"), open };
        if self.compiles.send(job).is_err() {
            tracing::error!("the compile thread has stopped");
        }
    }

    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        match self.answer(req) {
            Ok(value) => Response::new_ok(id, value),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        }
    }

    /// The file and byte offset of a position in a request.
    fn place(&self, p: &TextDocumentPositionParams) -> Option<(usize, usize)> {
        let project = self.project.as_ref()?;
        let file = project.file(&p.text_document.uri.to_file_path().ok()?)?;
        let source = &project.files[file];
        Some((file, source.lines.offset(&source.text, p.position)))
    }

    fn answer(&mut self, req: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        fn params<P: serde::de::DeserializeOwned>(req: &Request) -> Result<P, (ErrorCode, String)> {
            serde_json::from_value(req.params.clone()).map_err(|e| (ErrorCode::InvalidParams, e.to_string()))
        }
        let json =
            |v: Result<serde_json::Value, serde_json::Error>| v.map_err(|e| (ErrorCode::InternalError, e.to_string()));
        let null = serde_json::Value::Null;
        let method = req.method.as_str();
        if method == WorkspaceSymbolRequest::METHOD {
            let p: lsp_types::WorkspaceSymbolParams = params(&req)?;
            let found = self.project.as_ref().map(|pr| features::workspace_symbols(pr, &p.query)).unwrap_or_default();
            return json(serde_json::to_value(found));
        }
        let position: TextDocumentPositionParams = match method {
            GotoDefinition::METHOD => params::<lsp_types::GotoDefinitionParams>(&req)?.text_document_position_params,
            References::METHOD => params::<lsp_types::ReferenceParams>(&req)?.text_document_position,
            HoverRequest::METHOD => params::<lsp_types::HoverParams>(&req)?.text_document_position_params,
            Completion::METHOD => params::<lsp_types::CompletionParams>(&req)?.text_document_position,
            Rename::METHOD => params::<lsp_types::RenameParams>(&req)?.text_document_position,
            DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = params(&req)?;
                TextDocumentPositionParams { text_document: p.text_document, position: Position::default() }
            }
            _ => return Err((ErrorCode::MethodNotFound, format!("{method} is not supported"))),
        };
        let (Some((file, offset)), Some(project)) = (self.place(&position), self.project.as_ref()) else {
            return Ok(null);
        };
        match method {
            GotoDefinition::METHOD => json(serde_json::to_value(features::definition(project, file, offset))),
            References::METHOD => {
                let p: lsp_types::ReferenceParams = params(&req)?;
                json(serde_json::to_value(features::references(project, file, offset, p.context.include_declaration)))
            }
            HoverRequest::METHOD => json(serde_json::to_value(features::hover(project, file, offset))),
            Completion::METHOD => json(serde_json::to_value(complete::complete(project, file, offset))),
            Rename::METHOD => {
                let p: lsp_types::RenameParams = params(&req)?;
                let edit =
                    features::rename(project, file, offset, &p.new_name).map_err(|m| (ErrorCode::InvalidRequest, m))?;
                json(serde_json::to_value(edit))
            }
            _ => json(serde_json::to_value(features::document_symbols(project, file))),
        }
    }
}
