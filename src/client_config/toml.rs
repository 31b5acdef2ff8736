//! Codex's `config.toml`: the `[mcp_servers.replay]` table put in or taken out through
//! toml_edit, which keeps the rest of the document (comments, order, spacing) as written.

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::{json_value, Edit, Entry, Field, NAME};

const KEY: &str = "mcp_servers";

/// The table alone, as `print-config codex` shows it.
pub fn render(entry: &Entry) -> String {
    let mut doc = DocumentMut::new();
    servers_or_create(&mut doc).expect("a new document has no mcp_servers");
    if let Some(servers) = doc[KEY].as_table_mut() {
        servers.insert(NAME, Item::Table(table(entry)));
    }
    doc.to_string()
}

/// `text` with `entry` as `[mcp_servers.replay]`.
pub fn put(text: &str, entry: &Entry) -> Result<Edit, String> {
    let mut doc = parse(text)?;
    let servers = servers_or_create(&mut doc)?;
    let replaces = match servers.get(NAME) {
        Some(held) if item_json(held).as_ref() == Some(&json_value(entry)) => {
            return Ok(Edit::Same)
        }
        Some(_) => true,
        None => false,
    };
    let mut new = table(entry);
    if let Some(position) = servers.get(NAME).and_then(Item::as_table).and_then(Table::position) {
        new.set_position(Some(position));
    }
    servers.insert(NAME, Item::Table(new));
    let new_text = doc.to_string();
    Ok(if replaces { Edit::Replace(new_text) } else { Edit::Write(new_text) })
}

/// `text` without `[mcp_servers.replay]`, or `None` when it has none.
pub fn take(text: &str) -> Result<Option<String>, String> {
    let mut doc = parse(text)?;
    let Some(servers) = doc.get_mut(KEY) else {
        return Ok(None);
    };
    let servers = servers.as_table_like_mut().ok_or_else(not_a_table)?;
    if servers.remove(NAME).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string()))
}

fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>().map_err(|e| format!("it is not valid TOML: {e}"))
}

/// `[mcp_servers]`, made implicit (no header of its own) when the file has none.
fn servers_or_create(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    let item = doc.entry(KEY).or_insert_with(|| {
        let mut servers = Table::new();
        servers.set_implicit(true);
        Item::Table(servers)
    });
    item.as_table_mut().ok_or_else(not_a_table)
}

fn not_a_table() -> String {
    format!("its {KEY:?} is not a table; fix or remove it, then run again")
}

fn table(entry: &Entry) -> Table {
    let mut table = Table::new();
    for (name, field) in entry {
        let value = match field {
            Field::Text(text) => Value::from(text.as_str()),
            Field::Bool(flag) => Value::from(*flag),
            Field::List(items) => Value::Array(items.iter().map(String::as_str).collect::<Array>()),
        };
        table.insert(name, Item::Value(value));
    }
    table
}

/// A TOML item as JSON, to compare with the entry; `None` for what an entry never holds.
fn item_json(item: &Item) -> Option<serde_json::Value> {
    match item {
        Item::Value(value) => value_json(value),
        Item::Table(table) => {
            let fields = table.iter().map(|(k, v)| Some((k.to_string(), item_json(v)?)));
            Some(serde_json::Value::Object(fields.collect::<Option<_>>()?))
        }
        _ => None,
    }
}

fn value_json(value: &Value) -> Option<serde_json::Value> {
    match value {
        Value::String(text) => Some(text.value().as_str().into()),
        Value::Boolean(flag) => Some((*flag.value()).into()),
        Value::Integer(n) => Some((*n.value()).into()),
        Value::Array(items) => {
            Some(items.iter().map(value_json).collect::<Option<Vec<_>>>()?.into())
        }
        Value::InlineTable(table) => {
            let fields = table.iter().map(|(k, v)| Some((k.to_string(), value_json(v)?)));
            Some(serde_json::Value::Object(fields.collect::<Option<_>>()?))
        }
        _ => None,
    }
}
