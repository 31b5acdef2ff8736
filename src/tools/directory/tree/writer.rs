//! The tree's writer: the JSON (and, for `format: "text"`, the indented tree) in one pass over
//! the entries, and how each directory is marked when some of its entries are not shown.

use crate::policy::confined::Kind;
use crate::reply_size::JsonObject;
use crate::tools::{Output, Structured};
use crate::walk::levels;

/// How each shown directory is marked: whether some of its entries are not shown (`partial`),
/// none of them are (`none_shown`), or something at or below it is not (`incomplete`).
pub(super) struct Marks {
    /// Per node, then the root last.
    incomplete: Vec<bool>,
    partial: Vec<bool>,
    none_shown: Vec<bool>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Mark {
    partial: bool,
    none_shown: bool,
    incomplete: bool,
}

impl Marks {
    pub(super) fn new(levels: &levels::Levels) -> Marks {
        let n = levels.nodes.len();
        let children = |i: usize| if i == n { levels.root } else { levels.nodes[i].children };
        let partial: Vec<bool> = (0..=n).map(|i| children(i).more).collect();
        let none_shown: Vec<bool> = (0..=n).map(|i| children(i).taken() == 0).collect();
        // Children come after their parents: one backward pass carries the mark up.
        let mut incomplete = partial.clone();
        for i in (0..n).rev() {
            if incomplete[i] {
                incomplete[levels.nodes[i].parent().unwrap_or(n)] = true;
            }
        }
        Marks { incomplete, partial, none_shown }
    }

    pub(super) fn of(&self, i: usize) -> Mark {
        Mark {
            partial: self.partial[i],
            none_shown: self.none_shown[i] && self.partial[i],
            incomplete: self.incomplete[i],
        }
    }

    pub(super) fn root(&self) -> Mark {
        self.of(self.partial.len() - 1)
    }
}

/// The end of a directory node none of whose entries are shown: the depth limit kept it from
/// being read, or maxEntries left them all out. Every directory node has `children` (clients
/// such as replay v2.1's own tests expect it), and `truncated` tells this one from an empty one.
const CUT_OFF: &str = ",\"children\":[],\"truncated\":true}";

/// Writes the tree in one pass over the entries, depth-first: always the JSON (the text of
/// the json format, and the structured content of both), and the indented text when asked for.
pub(super) struct TreeWriter {
    json: JsonObject,
    text: Option<String>,
    depth: Option<usize>,
    /// Per directory whose children array is open (the root first): whether a child has been
    /// written yet, and whether the directory gets `"truncated": true` when it closes.
    open: Vec<(bool, bool)>,
}

impl TreeWriter {
    /// A writer sized for the entries `levels` took, so that its buffers are not copied as
    /// they grow. The JSON is written inside `{"tree":…}`, the structured content, from the
    /// start.
    pub(super) fn new(text: bool, depth: Option<usize>, levels: &levels::Levels) -> TreeWriter {
        let n = levels.nodes.len();
        let names = levels.names_len();
        // `{"name":…,"type":"directory","children":[…]},` at most, plus a 32nd for escapes.
        let json = 4096 + names + 44 * n;
        let indent: usize = levels.nodes.iter().map(|node| 2 * node.depth()).sum();
        let text_len = 4096 + names + indent + 6 * n;
        let mut writer = TreeWriter {
            json: JsonObject::with_capacity(json + json / 32),
            text: text.then(|| String::with_capacity(text_len + text_len / 32)),
            depth,
            open: Vec::new(),
        };
        writer.json.field("tree");
        writer
    }

    pub(super) fn root(&mut self, name: &str, mark: Mark) {
        self.json.raw("{\"name\":").string(name).raw(",\"type\":\"directory\"");
        let unlisted = self.depth == Some(0);
        if let Some(text) = &mut self.text {
            push_text_name(text, name);
            text.push('/');
            if unlisted || mark.partial {
                text.push_str(" ...");
            }
        }
        if unlisted || mark.none_shown {
            self.json.raw(CUT_OFF);
        } else {
            self.json.raw(",\"children\":[");
            self.open.push((false, mark.incomplete));
        }
    }

    pub(super) fn entry(&mut self, name: &str, kind: Kind, depth: usize, mark: Mark) {
        while self.open.len() > depth {
            self.close();
        }
        if let Some((has_child, _)) = self.open.last_mut() {
            if *has_child {
                self.json.raw(",");
            }
            *has_child = true;
        }
        self.json.raw("{\"name\":").string(name);
        let at_limit = self.depth == Some(depth);
        let json = &mut self.json;
        match kind {
            Kind::Dir if at_limit || mark.none_shown => {
                json.raw(",\"type\":\"directory\"");
                json.raw(CUT_OFF);
            }
            Kind::Dir => {
                json.raw(",\"type\":\"directory\",\"children\":[");
                self.open.push((false, mark.incomplete));
            }
            Kind::File | Kind::Other => {
                json.raw(",\"type\":\"file\"}");
            }
            Kind::Symlink => {
                json.raw(",\"type\":\"symlink\"}");
            }
        }
        if let Some(text) = &mut self.text {
            text.push('\n');
            for _ in 0..depth {
                text.push_str("  ");
            }
            push_text_name(text, name);
            match kind {
                Kind::Dir if at_limit || mark.partial => text.push_str("/ ..."),
                Kind::Dir => text.push('/'),
                Kind::Symlink => text.push('@'),
                Kind::File | Kind::Other => {}
            }
        }
    }

    fn close(&mut self) {
        if let Some((_, incomplete)) = self.open.pop() {
            self.json.raw("]");
            if incomplete {
                self.json.raw(",\"truncated\":true");
            }
            self.json.raw("}");
        }
    }

    /// `{"tree":…}` and the text tree, if asked for.
    pub(super) fn finish(mut self) -> (String, Option<String>) {
        while !self.open.is_empty() {
            self.close();
        }
        (self.json.finish(), self.text)
    }
}

/// A name on its own line of the text tree: control characters (a newline in a name) escaped,
/// so one line stays one entry.
fn push_text_name(text: &mut String, name: &str) {
    if !name.chars().any(char::is_control) {
        text.push_str(name);
        return;
    }
    for c in name.chars() {
        if c.is_control() {
            text.extend(c.escape_debug());
        } else {
            text.push(c);
        }
    }
}

/// What the structured content's JSON starts with; the tree's own JSON follows, then `}`.
const TREE_OPEN: &str = "{\"tree\":";

/// The tree's JSON (or, for the text format, the indented tree) as the text, and
/// `{"tree": <the JSON>}` as the structured content, spliced into the reply unparsed: parsing
/// a 45,000-node tree back into values and writing it again doubled the call's time.
pub(super) fn tree_output(structured: String, text: Option<String>) -> Output {
    let text = text.unwrap_or_else(|| structured[TREE_OPEN.len()..structured.len() - 1].to_owned());
    Output { structured: Some(Structured::Json(structured)), ..Output::text(text) }
}
