//! MCP protocol revisions: which one a request is served under, and what each lets a reply say.
//!
//! Two eras. The legacy one negotiates a revision once, in `initialize` (2024-11-05 to
//! 2025-11-25). The modern one (2026-07-28) has no handshake: every request names its revision
//! and the client's capabilities in `params._meta`, and `server/discover` says what the server
//! speaks. replay serves both on one stdin, request by request. Fields a revision does not know
//! are left out for it: a strict client of that revision must see nothing it cannot parse.

use serde_json::{json, Map, Value};

use crate::error::INVALID_PARAMS;
use crate::protocol::jsonrpc::RpcError;

/// The revisions replay speaks, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

/// Legacy revisions `initialize` may settle on, oldest first. 2026-07-28 is never offered
/// there: it is reached through `server/discover` only, and clients reject it in `initialize`.
pub const LEGACY: [Revision; 4] =
    [Revision::V2024_11_05, Revision::V2025_03_26, Revision::V2025_06_18, Revision::V2025_11_25];
pub const LATEST_LEGACY: Revision = Revision::V2025_11_25;
/// Revisions served without a handshake.
pub const MODERN: [Revision; 1] = [Revision::V2026_07_28];

/// The `_meta` keys of the modern era's per-request envelope.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The modern era's error for a revision the server does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

impl Revision {
    pub fn parse(text: &str) -> Option<Revision> {
        [LEGACY.as_slice(), MODERN.as_slice()].concat().into_iter().find(|r| r.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn is_modern(self) -> bool {
        self >= Revision::V2026_07_28
    }

    /// Tool annotations, audio content and progress messages came in 2025-03-26.
    pub fn has_annotations(self) -> bool {
        self >= Revision::V2025_03_26
    }

    /// Tool titles, `outputSchema` and `structuredContent` came in 2025-06-18.
    pub fn has_structured_output(self) -> bool {
        self >= Revision::V2025_06_18
    }
}

/// What `initialize` settles on: the client's revision if replay speaks it, else the latest.
pub fn negotiate(asked: &str) -> Revision {
    LEGACY.into_iter().find(|r| r.as_str() == asked).unwrap_or(LATEST_LEGACY)
}

/// A request's modern envelope, if it carries one: `Ok(None)` for a legacy request, the
/// revision it names when replay speaks it, else -32602 (malformed) or -32022 (unsupported).
pub fn envelope(params: &Value) -> Result<Option<Revision>, RpcError> {
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else { return Ok(None) };
    let Some(version) = meta.get(META_VERSION) else { return Ok(None) };
    let Some(version) = version.as_str() else {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("params._meta[{META_VERSION:?}] must be a string"),
        ));
    };
    if !meta.get(META_CAPABILITIES).is_some_and(Value::is_object) {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "params._meta must carry {META_CAPABILITIES:?} (an object) beside {META_VERSION:?}"
            ),
        ));
    }
    match Revision::parse(version).filter(|r| r.is_modern()) {
        Some(revision) => Ok(Some(revision)),
        None => Err(unsupported(version)),
    }
}

/// -32022 with the revisions a client can use without a handshake.
pub fn unsupported(requested: &str) -> RpcError {
    let supported: Vec<&str> = MODERN.iter().map(|r| r.as_str()).collect();
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({"supported": supported, "requested": requested}))
}

/// The server's name and version, as `initialize` and the modern `_meta` give them.
pub fn server_info() -> Value {
    json!({"name": "replay", "version": env!("CARGO_PKG_VERSION")})
}

/// What the host shows the model of replay before it loads any tool's schema: what it serves and
/// the habits that keep replies small. At most 120 o200k tokens (`tests`).
pub const INSTRUCTIONS: &str = "replay serves the files of its allowed directories: paths are \
absolute and inside them (list_allowed_directories). Read big files in pages with read_file's \
offset and limit; a reply over its token budget stops with a note saying how to get the rest. \
Change files with edit_file rather than rewriting them whole. Search contents with grep_files \
and names with glob_search.";

/// One tool definition as `revision` knows tools: no annotations before 2025-03-26, no title or
/// `outputSchema` before 2025-06-18.
pub fn tool_definition(definition: &Value, revision: Revision) -> Value {
    let Value::Object(fields) = definition else { return definition.clone() };
    let kept: Map<String, Value> = fields
        .iter()
        .filter(|(key, _)| match key.as_str() {
            "annotations" => revision.has_annotations(),
            "title" | "outputSchema" => revision.has_structured_output(),
            _ => true,
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}

/// A `tools/call` content item as `revision` knows content: audio from 2025-03-26 (before that,
/// the same bytes as an embedded resource). `structuredContent` came in 2025-06-18
/// (`Revision::has_structured_output`).
pub fn tool_content(item: Value, revision: Revision) -> Value {
    if revision.has_annotations() || item["type"] != "audio" {
        return item;
    }
    let uri = format!("data:{}", item["mimeType"].as_str().unwrap_or_default());
    json!({
        "type": "resource",
        "resource": {"uri": uri, "mimeType": item["mimeType"], "blob": item["data"]},
    })
}

/// Marks a result for the modern era: every result says it is complete and who answered.
pub fn modern_result(mut result: Value) -> Value {
    if let Some(fields) = result.as_object_mut() {
        fields.insert("resultType".into(), json!("complete"));
        let meta = fields.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(META_SERVER_INFO.into(), server_info());
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hosts that load schemas on demand show the model only tool names and the instructions.
    #[test]
    fn the_instructions_fit_in_120_tokens() {
        let bpe = tiktoken_rs::o200k_base().expect("o200k_base ships with tiktoken-rs");
        let n = bpe.encode_ordinary(INSTRUCTIONS).len();
        assert!(n <= 120, "the instructions take {n} tokens, over 120");
        for named in
            ["list_allowed_directories", "offset", "edit_file", "grep_files", "glob_search"]
        {
            assert!(INSTRUCTIONS.contains(named), "the instructions do not name {named}");
        }
    }

    #[track_caller]
    fn check_envelope(params: Value, expect: &str) {
        let got = match envelope(&params) {
            Ok(None) => "legacy".to_string(),
            Ok(Some(r)) => r.as_str().to_string(),
            Err(e) => format!("{} {}", e.code, e.data.map(|d| d.to_string()).unwrap_or_default()),
        };
        assert_eq!(got, expect, "{params}");
    }

    #[test]
    fn envelopes() {
        let caps = json!({});
        check_envelope(json!({}), "legacy");
        check_envelope(json!({"_meta": {"progressToken": 1}}), "legacy");
        check_envelope(
            json!({"_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: caps}}),
            "2026-07-28",
        );
        check_envelope(
            json!({"_meta": {META_VERSION: "2025-11-25", META_CAPABILITIES: caps}}),
            r#"-32022 {"requested":"2025-11-25","supported":["2026-07-28"]}"#,
        );
        check_envelope(
            json!({"_meta": {META_VERSION: "1900-01-01", META_CAPABILITIES: caps}}),
            r#"-32022 {"requested":"1900-01-01","supported":["2026-07-28"]}"#,
        );
        check_envelope(json!({"_meta": {META_VERSION: "2026-07-28"}}), "-32602 ");
        check_envelope(json!({"_meta": {META_VERSION: 7, META_CAPABILITIES: caps}}), "-32602 ");
    }

    #[test]
    fn negotiation_never_offers_the_modern_revision() {
        assert_eq!(negotiate("2024-11-05"), Revision::V2024_11_05);
        assert_eq!(negotiate("2025-06-18"), Revision::V2025_06_18);
        assert_eq!(negotiate("2026-07-28"), LATEST_LEGACY);
        assert_eq!(negotiate("bogus"), LATEST_LEGACY);
    }

    #[test]
    fn definitions_lose_what_a_revision_does_not_know() {
        let def = json!({"name": "t", "title": "T", "description": "d", "annotations": {},
                         "inputSchema": {}, "outputSchema": {}});
        let keys = |r| {
            let v = tool_definition(&def, r);
            v.as_object().unwrap().keys().cloned().collect::<Vec<_>>().join(",")
        };
        assert_eq!(keys(Revision::V2024_11_05), "description,inputSchema,name");
        assert_eq!(keys(Revision::V2025_03_26), "annotations,description,inputSchema,name");
        assert_eq!(
            keys(Revision::V2025_06_18),
            "annotations,description,inputSchema,name,outputSchema,title"
        );
    }

    #[test]
    fn results_lose_what_a_revision_does_not_know() {
        let audio = json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"});
        let old = tool_content(audio.clone(), Revision::V2024_11_05);
        assert_eq!(old["type"], "resource");
        assert_eq!(old["resource"]["blob"], "AA==");
        assert_eq!(old["resource"]["uri"], "data:audio/wav");
        assert_eq!(tool_content(audio.clone(), Revision::V2025_03_26), audio);
        let text = json!({"type": "text", "text": "t"});
        assert_eq!(tool_content(text.clone(), Revision::V2024_11_05), text);
        let modern = modern_result(json!({"tools": []}));
        assert_eq!(modern["resultType"], "complete");
        assert_eq!(modern["_meta"][META_SERVER_INFO]["name"], "replay");
    }
}
