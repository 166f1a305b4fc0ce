//! `[clients.<name>]`: a tool set per MCP client. Each entry says which clients it is for (the
//! names they give in `clientInfo.name`, compared normalised, or authenticated principals such as
//! `oauth:<client_id>`), which tools, resources and prompts they see (globs, allowed and denied),
//! and the autonomy level their calls run under. The entry `"*"` is for every client no other
//! entry names. This file is the matching only: what a client then sees is decided by the daemon.

use std::collections::{BTreeMap, BTreeSet};

use openhuman_common::normalize_id;
use serde::{Deserialize, Serialize};

use crate::AutonomyLevel;

/// The key of the entry for every client that no other entry names.
pub const ANY_CLIENT: &str = "*";

/// Prefixes of a name that is an authenticated principal rather than a self-declared client name:
/// `oauth:<client_id>` (the OAuth client of an HTTP request's access token) and `token:<label>`
/// (a per-token profile). A normalised client name never holds a `:`, so the two cannot collide.
pub const PRINCIPAL_SCHEMES: &[&str] = &["oauth", "token"];

/// One `[clients.<name>]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ClientProfile {
    /// Whom the entry is for: `clientInfo.name`s (compared after normalisation, so
    /// "Visual Studio Code" and "visual-studio-code" are one name) and principals
    /// (`oauth:<client_id>`, compared exactly). Empty: the table's own name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Tool names or globs (`*`, `?`) the client sees; absent: every tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tool names or globs taken out of what `tools` allows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_tools: Vec<String>,
    /// Resource URIs or globs the client sees (templates by their URI template); absent: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_resources: Vec<String>,
    /// Prompt names or globs the client sees; absent: every prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_prompts: Vec<String>,
    /// The autonomy level of this client's calls, in place of `[autonomy].level`; absent: that one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<AutonomyLevel>,
}

/// What kind of item a set is asked about: it picks the entry's pair of lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Resource,
    Prompt,
}

impl Kind {
    /// The entry's keys for this kind: (allow, deny).
    pub fn keys(self) -> (&'static str, &'static str) {
        match self {
            Kind::Tool => ("tools", "deny_tools"),
            Kind::Resource => ("resources", "deny_resources"),
            Kind::Prompt => ("prompts", "deny_prompts"),
        }
    }
}

impl ClientProfile {
    fn lists(&self, kind: Kind) -> (Option<&[String]>, &[String]) {
        match kind {
            Kind::Tool => (self.tools.as_deref(), &self.deny_tools),
            Kind::Resource => (self.resources.as_deref(), &self.deny_resources),
            Kind::Prompt => (self.prompts.as_deref(), &self.deny_prompts),
        }
    }

    /// Whether the client sees `name`: allowed (no allow list allows everything) and not denied.
    pub fn allows(&self, kind: Kind, name: &str) -> bool {
        let (allow, deny) = self.lists(kind);
        allow.is_none_or(|a| a.iter().any(|p| glob_match(p, name))) && !deny.iter().any(|p| glob_match(p, name))
    }

    /// The names this entry is for, as they are compared: client names normalised, principals as
    /// written.
    fn keys_under(&self, table: &str) -> Vec<String> {
        let given: Vec<&str> =
            if self.names.is_empty() { vec![table] } else { self.names.iter().map(String::as_str).collect() };
        given.into_iter().map(match_key).collect()
    }
}

/// How a name is compared: a principal (`scheme:id`) as written, a client name normalised.
fn match_key(name: &str) -> String {
    match principal_parts(name) {
        Some((scheme, id)) => format!("{scheme}:{id}"),
        None => normalize_id(name),
    }
}

/// `(scheme, id)` when `name` is written as a principal of a known scheme.
fn principal_parts(name: &str) -> Option<(&str, &str)> {
    let (scheme, id) = name.split_once(':')?;
    PRINCIPAL_SCHEMES.contains(&scheme).then_some((scheme, id))
}

/// Who is asking, as far as the server knows: an authenticated principal (`oauth:<client_id>`)
/// when the transport established one, and the name the client gave in `clientInfo`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    pub principal: Option<&'a str>,
    pub client_name: Option<&'a str>,
}

/// The entry that applies to a caller and why it was chosen.
#[derive(Debug, Clone, Copy)]
pub struct Matched<'a> {
    /// The table's name (`cursor` for `[clients.cursor]`).
    pub entry: &'a str,
    pub profile: &'a ClientProfile,
    /// What matched it: the principal, the normalised client name, or `*`.
    pub by: &'a str,
}

/// The entry for `caller` among `clients`: first one naming its principal, then one naming its
/// client name (normalised), then the `"*"` entry; None when there is none (the client then gets
/// what a config without `[clients]` gives everyone). Names are unique across entries (checked
/// when the config loads), so at most one entry matches each way.
pub fn resolve<'a>(clients: &'a BTreeMap<String, ClientProfile>, caller: Caller<'_>) -> Option<Matched<'a>> {
    let find = |key: &str| {
        clients.iter().find_map(|(entry, profile)| {
            if entry == ANY_CLIENT {
                return None;
            }
            let names = profile.keys_under(entry);
            let i = names.iter().position(|n| n == key)?;
            let by: &'a str = if profile.names.is_empty() { entry.as_str() } else { profile.names[i].as_str() };
            Some(Matched { entry: entry.as_str(), profile, by })
        })
    };
    if let Some(p) = caller.principal
        && let Some(m) = find(p)
    {
        return Some(m);
    }
    if let Some(name) = caller.client_name.map(normalize_id).filter(|n| !n.is_empty())
        && let Some(m) = find(&name)
    {
        return Some(m);
    }
    clients.get_key_value(ANY_CLIENT).map(|(entry, profile)| Matched { entry: entry.as_str(), profile, by: ANY_CLIENT })
}

/// A glob over names and URIs: `*` any run of characters (`/` included), `?` one character,
/// everything else itself. Case-sensitive, as tool names and URIs are.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic two-pointer match with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some('?') => {
                pi += 1;
                ti += 1;
            }
            Some(c) if *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The semantic checks of `[clients]`: blank patterns, names that normalise to nothing, a name two
/// entries claim, names on the `"*"` entry.
pub(crate) fn validate(clients: &BTreeMap<String, ClientProfile>) -> Result<(), String> {
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    for (entry, profile) in clients {
        let key = format!("clients.{}", toml_key(entry));
        for kind in [Kind::Tool, Kind::Resource, Kind::Prompt] {
            let (allow, deny) = profile.lists(kind);
            let (allow_key, deny_key) = kind.keys();
            for (list_key, list) in [(allow_key, allow.unwrap_or_default()), (deny_key, deny)] {
                if list.iter().any(|p| p.trim().is_empty()) {
                    return Err(format!("key `{key}.{list_key}` must not hold a blank pattern"));
                }
            }
        }
        if entry == ANY_CLIENT {
            if !profile.names.is_empty() {
                return Err(format!(
                    "key `{key}.names`: the \"*\" entry is for every client no other entry names, so it takes no names"
                ));
            }
            continue;
        }
        let written: Vec<&str> = if profile.names.is_empty() {
            vec![entry.as_str()]
        } else {
            profile.names.iter().map(String::as_str).collect()
        };
        for name in written {
            let what = if profile.names.is_empty() { format!("key `{key}`") } else { format!("key `{key}.names`") };
            if let Some((_, id)) = principal_parts(name) {
                if id.trim().is_empty() {
                    return Err(format!("{what}: the principal {name:?} names no id after the `:`"));
                }
            } else if normalize_id(name).is_empty() {
                return Err(format!(
                    "{what}: {name:?} has no letter or digit, so no client name can match it (client names are compared \
                     lowercased, with every run of other characters as one `-`)"
                ));
            }
            let k = match_key(name);
            if let Some(other) = claimed.insert(k.clone(), entry.clone())
                && other != *entry
            {
                return Err(format!(
                    "{what}: {name:?} (compared as `{k}`) is also claimed by [clients.{}]; a client must match one entry",
                    toml_key(&other)
                ));
            }
        }
    }
    Ok(())
}

/// A table name as it is written in TOML: bare when it can be, quoted otherwise.
pub fn toml_key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare { name.to_string() } else { format!("{name:?}") }
}

/// Every name any entry claims, normalised, with its entry (for `config check` and `status`).
pub fn claimed_names(clients: &BTreeMap<String, ClientProfile>) -> BTreeSet<(String, String)> {
    clients
        .iter()
        .filter(|(e, _)| *e != ANY_CLIENT)
        .flat_map(|(e, p)| p.keys_under(e).into_iter().map(move |k| (k, e.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(names: &[&str]) -> ClientProfile {
        ClientProfile { names: names.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    fn clients(entries: &[(&str, ClientProfile)]) -> BTreeMap<String, ClientProfile> {
        entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn named(name: &str) -> Caller<'_> {
        Caller { principal: None, client_name: Some(name) }
    }

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("memory.*", "memory.search", true),
            ("memory.*", "memory.", true),
            ("memory.*", "tree.tag", false),
            ("*", "", true),
            ("memory.s?arch", "memory.search", true),
            ("memory.s?arch", "memory.sarch", false),
            ("*.forget", "memory.forget", true),
            ("openhuman://prompts/*", "openhuman://prompts/agents/orchestrator", true),
            ("openhuman://memory*", "openhuman://memory/{id}", true),
            ("memory.search", "memory.search", true),
            ("memory.search", "Memory.search", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
        ] {
            assert_eq!(glob_match(p, t), want, "{p} ~ {t}");
        }
    }

    #[test]
    fn names_are_compared_normalised_and_the_table_name_is_the_default() {
        let c = clients(&[
            ("claude-code", ClientProfile::default()),
            ("vscode", profile(&["Visual Studio Code"])),
            ("cursor", profile(&["cursor-vscode", "Cursor"])),
        ]);
        assert_eq!(resolve(&c, named("claude-code")).unwrap().entry, "claude-code");
        assert_eq!(resolve(&c, named("Claude Code")).unwrap().entry, "claude-code", "case and spaces fold");
        let m = resolve(&c, named("visual studio code")).unwrap();
        assert_eq!((m.entry, m.by), ("vscode", "Visual Studio Code"));
        assert_eq!(resolve(&c, named("cursor-vscode")).unwrap().entry, "cursor");
        assert_eq!(resolve(&c, named("CURSOR")).unwrap().entry, "cursor");
        assert!(resolve(&c, named("vscode")).is_none(), "a table with names is not matched by its own name");
        assert!(resolve(&c, named("claude")).is_none(), "no prefix matching");
        assert!(resolve(&c, named("claude-code-2")).is_none());
        assert!(resolve(&c, Caller::default()).is_none());
    }

    #[test]
    fn the_star_entry_takes_the_rest_and_principals_come_first() {
        let c = clients(&[
            ("*", ClientProfile { level: Some(AutonomyLevel::Readonly), ..Default::default() }),
            ("agent", profile(&["oauth:AbC123"])),
            ("cursor", profile(&["cursor-vscode"])),
        ]);
        assert_eq!(resolve(&c, named("someone")).unwrap().entry, "*");
        assert_eq!(resolve(&c, Caller::default()).unwrap().by, "*");
        let both = Caller { principal: Some("oauth:AbC123"), client_name: Some("cursor-vscode") };
        assert_eq!(resolve(&c, both).unwrap().entry, "agent", "an authenticated principal outranks a name");
        let other = Caller { principal: Some("oauth:zzz"), client_name: Some("cursor-vscode") };
        assert_eq!(resolve(&c, other).unwrap().entry, "cursor", "an unknown principal falls back to the name");
        let wrong_case = Caller { principal: Some("oauth:abc123"), client_name: None };
        assert_eq!(resolve(&c, wrong_case).unwrap().entry, "*", "client ids compare exactly");
        // A client cannot claim a principal by its name: `oauth:AbC123` normalises to `oauth-abc123`.
        assert_eq!(resolve(&c, named("oauth:AbC123")).unwrap().entry, "*");
    }

    #[test]
    fn allow_and_deny_lists() {
        let p = ClientProfile {
            tools: Some(vec!["memory.*".into(), "core.list_tools".into()]),
            deny_tools: vec!["memory.forget".into()],
            prompts: Some(vec![]),
            ..Default::default()
        };
        assert!(p.allows(Kind::Tool, "memory.search"));
        assert!(p.allows(Kind::Tool, "core.list_tools"));
        assert!(!p.allows(Kind::Tool, "memory.forget"), "deny wins");
        assert!(!p.allows(Kind::Tool, "tree.tag"));
        assert!(p.allows(Kind::Resource, "openhuman://memory"), "no list: everything");
        assert!(!p.allows(Kind::Prompt, "recall_context"), "an empty list: nothing");
    }

    #[test]
    fn validation_names_the_key() {
        let dup = clients(&[("a", profile(&["Cursor"])), ("b", profile(&["cursor"]))]);
        let err = validate(&dup).unwrap_err();
        assert!(err.contains("clients.b.names") && err.contains("[clients.a]"), "{err}");
        let blank = clients(&[("a", ClientProfile { deny_tools: vec![" ".into()], ..Default::default() })]);
        assert!(validate(&blank).unwrap_err().contains("clients.a.deny_tools"));
        let star = clients(&[("*", profile(&["x"]))]);
        assert!(validate(&star).unwrap_err().contains("clients.\"*\".names"));
        let nothing = clients(&[("会议", ClientProfile::default())]);
        assert!(validate(&nothing).unwrap_err().contains("no letter or digit"));
        let principal = clients(&[("a", profile(&["oauth:"]))]);
        assert!(validate(&principal).unwrap_err().contains("names no id"));
        assert!(validate(&clients(&[("a", profile(&["oauth:x", "Zed"])), ("*", ClientProfile::default())])).is_ok());
    }
}
