//! Human output of client commands: tables that fit the terminal (`comfy-table`), progress bars
//! (`indicatif`, drawn only on a terminal), colours only on a terminal and never with `NO_COLOR`;
//! `--json` prints the API's JSON instead.

use api::ResourceState;
use std::io::IsTerminal;
use std::time::Duration;

use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Colours on stdout: a terminal, and `NO_COLOR` unset or empty (no-color.org).
pub fn colors() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// A table under a header, columns wrapped to the terminal's width (no limit in a pipe).
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let rows: Vec<Vec<Cell>> = rows.iter().map(|row| row.iter().map(Cell::new).collect()).collect();
    styled_table(header, rows);
}

/// A table whose cells may carry colours (see [`state_cell`]).
pub fn styled_table(header: &[&str], rows: Vec<Vec<Cell>>) {
    if rows.is_empty() {
        println!("{}", header.join("  "));
        println!("(none)");
        return;
    }
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().map(Cell::new))
        .add_rows(rows);
    for line in table.lines() {
        println!("{}", line.trim_end());
    }
}

/// A resource state, red when it failed and green when deployed (on a colour terminal).
pub fn state_cell(state: ResourceState) -> Cell {
    let cell = Cell::new(state);
    if !colors() {
        return cell;
    }
    match state {
        ResourceState::Failed | ResourceState::Unavailable => cell.fg(Color::Red),
        ResourceState::Deployed => cell.fg(Color::Green),
        ResourceState::Skipped
        | ResourceState::SkippedForUndefined
        | ResourceState::Undefined
        | ResourceState::Cancelled => cell.fg(Color::Yellow),
        _ => cell,
    }
}

/// Prints `key: value` lines, keys aligned.
pub fn fields(pairs: &[(&str, String)]) {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in pairs {
        println!("{key:<width$}  {value}");
    }
}

/// A list as the CLI prints it: the items as JSON with `--json`, otherwise a table under
/// `header` with one row per item.
pub fn list<T: serde::Serialize>(as_json: bool, items: &[T], header: &[&str], row: impl Fn(&T) -> Vec<String>) {
    if as_json {
        json(&items);
        return;
    }
    let rows: Vec<Vec<String>> = items.iter().map(row).collect();
    table(header, &rows);
}

pub fn json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("error: cannot print JSON: {e}"),
    }
}

/// A progress bar of `total` steps on stderr with rate and ETA; hidden when stderr is not a
/// terminal, so pipes and logs get no control characters.
pub fn progress(total: u64, unit: &str) -> ProgressBar {
    let target =
        if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    let template = format!("{{bar:30.green/red}} {{pos}}/{{len}} {unit} {{msg}} ({{per_sec}}, ETA {{eta}})");
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template").progress_chars("#>-"));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
