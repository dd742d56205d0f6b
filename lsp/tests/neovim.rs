//! `inmanta-lsp` driven by an editor's own LSP client: Neovim's built-in one (Debian's `neovim`,
//! headless), started as docs/editors.md configures it. Neovim opens the file, sends its
//! changes as the user types them (through the buffer, not hand-written notifications) and
//! applies the server's rename edit to its buffer; a Lua script records what the editor saw.

mod client;

use std::path::Path;
use std::process::Command;

use client::project;
use serde_json::Value;

/// Lines 0..: an entity with a doc string, a relation, an implementation, a use of each.
const MAIN: &str = r#"import std::testing

entity Host:
    """A machine the model manages."""
    string name
    int port = 22
end

implementation files for Host:
    std::testing::NullResource(name=self.name)
end

implement Host using files

web = Host(name="web", port=80)
copy = web.name
"#;

/// The editor's session. `{main}` and `{out}` are replaced by paths, `{server}` by the command.
/// Cursor positions are Neovim's: line 1-based, column 0-based.
const SCRIPT: &str = r#"
local results = {}
local function done()
  local file = io.open("{out}", "w")
  file:write(vim.fn.json_encode(results))
  file:close()
  vim.cmd("qa!")
end
local ok, failure = pcall(function()
  vim.cmd("edit {main}")
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "inmanta", cmd = { "{server}", "lsp" }, root_dir = "{root}",
    on_exit = function(code) results.exit_code = code end,
  })
  vim.lsp.buf_attach_client(buf, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  results.initialized = vim.wait(30000, function() return client.initialized end, 20)

  -- The user types two broken lines: both errors are reported while typing, before any save.
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "broken = ", "other = Host(name=" })
  results.errors_seen = vim.wait(60000, function() return #vim.diagnostic.get(buf) >= 2 end, 20)
  results.error_lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do table.insert(results.error_lines, d.lnum) end
  -- ... and takes them out again: the diagnostics go.
  vim.api.nvim_buf_set_lines(buf, -3, -1, false, {})
  results.errors_cleared = vim.wait(60000, function() return #vim.diagnostic.get(buf) == 0 end, 20)

  local function at(line, col, method, extra)
    vim.api.nvim_win_set_cursor(0, { line, col })
    local params = vim.lsp.util.make_position_params()
    for k, v in pairs(extra or {}) do params[k] = v end
    local answers = vim.lsp.buf_request_sync(buf, method, params, 30000) or {}
    local answer = answers[client_id] or {}
    return answer.result
  end
  local definition = at(15, 7, "textDocument/definition")
  if definition and definition[1] then definition = definition[1] end
  results.definition_line = definition and definition.range.start.line
  local hover = at(3, 8, "textDocument/hover")
  results.hover = hover and hover.contents and (hover.contents.value or hover.contents)
  local completion = at(16, 11, "textDocument/completion")
  results.completion = {}
  for _, item in ipairs((completion and (completion.items or completion)) or {}) do
    table.insert(results.completion, item.label)
  end
  -- Rename the entity: the editor applies the server's edit to its buffer.
  local edit = at(3, 8, "textDocument/rename", { newName = "Machine" })
  if edit then vim.lsp.util.apply_workspace_edit(edit, client.offset_encoding) end
  results.lines_after_rename = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- Quitting the editor: shutdown, then exit, and the server ends cleanly.
  client.stop()
  vim.wait(10000, function() return results.exit_code ~= nil end, 20)
end)
if not ok then results.failure = tostring(failure) end
done()
"#;

/// Neovim's session on `root`'s main.cf; what its script recorded.
fn edit_in_neovim(nvim: &Path, root: &Path) -> Value {
    let out = root.join("editor.json");
    let script = SCRIPT
        .replace("{main}", &root.join("main.cf").display().to_string())
        .replace("{out}", &out.display().to_string())
        .replace("{root}", &root.display().to_string())
        // `inmanta-lsp lsp` is `inmanta lsp`, the command docs/editors.md configures.
        .replace("{server}", env!("CARGO_BIN_EXE_inmanta-lsp"));
    let script_path = root.join("session.lua");
    std::fs::write(&script_path, script).expect("write the script");
    let status = Command::new(nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "--noplugin", "-n", "-c"])
        .arg(format!("luafile {}", script_path.display()))
        .current_dir(root)
        .env("XDG_CACHE_HOME", root.join("cache"))
        .env("XDG_STATE_HOME", root.join("state"))
        .env_remove("INMANTA_COMPILER_PYTHON")
        .status()
        .expect("run nvim");
    assert!(status.success(), "nvim: {status}");
    let text = std::fs::read_to_string(&out).expect("the editor's record");
    serde_json::from_str(&text).expect("json")
}

#[test]
fn neovims_own_client_gets_diagnostics_as_it_types_navigation_and_a_rename_it_applies() {
    let Some(nvim) = test_support::program("Neovim (scripts/lib.sh ensure_neovim)", &["/usr/bin/nvim"]) else {
        return;
    };
    let dir = project(MAIN);
    let seen = edit_in_neovim(&nvim, dir.path());
    assert!(seen.get("failure").is_none(), "{seen}");
    assert_eq!(seen["initialized"], true, "{seen}");
    assert_eq!(seen["errors_seen"], true, "both typed errors reported: {seen}");
    let lines: Vec<u64> = seen["error_lines"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    assert!(lines.contains(&16) && lines.contains(&17), "an error on each typed line (16, 17): {lines:?}");
    assert_eq!(seen["errors_cleared"], true, "{seen}");
    assert_eq!(seen["definition_line"], 2, "Host in `web = Host(...)` goes to its entity: {seen}");
    let hover = seen["hover"].as_str().unwrap_or_default();
    for part in ["A machine the model manages.", "string name", "int port"] {
        assert!(hover.contains(part), "{part:?} not in the hover: {hover}");
    }
    let completion: Vec<&str> = seen["completion"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(completion.contains(&"name") && completion.contains(&"port"), "attributes after `web.`: {completion:?}");
    let renamed: Vec<&str> = seen["lines_after_rename"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(renamed[2], "entity Machine:", "{renamed:?}");
    assert!(renamed.contains(&"implementation files for Machine:"), "{renamed:?}");
    assert!(renamed.contains(&"implement Machine using files"), "{renamed:?}");
    assert!(renamed.contains(&"web = Machine(name=\"web\", port=80)"), "{renamed:?}");
    assert_eq!(seen["exit_code"], 0, "the server's exit after the editor's shutdown: {seen}");
}
