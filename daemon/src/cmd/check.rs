//! `config check`: what `serve` would refuse, what would run degraded, and what the README calls
//! invalid (bad globs of a watched folder included; `[clients]` patterns that match nothing),
//! found from the config and the environment alone (no network). Errors make the check fail;
//! warnings are printed and pass.

use openhuman_common::Paths;
use openhuman_config::{Config, EmbeddingProvider, LlmProvider, MemoryEngineKind};
use openhuman_providers::embed::HttpEmbedder;

use crate::agents::Registry;
use crate::http_auth;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Error,
    Warning,
}

/// One thing `config check` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub level: Level,
    pub text: String,
}

fn error(text: impl Into<String>) -> Finding {
    Finding { level: Level::Error, text: text.into() }
}

fn warning(text: impl Into<String>) -> Finding {
    Finding { level: Level::Warning, text: text.into() }
}

/// True when `var` names a variable this process does not have: the daemon may still have it
/// (a service manager's environment), so a setting that needs it is a warning here.
fn unset(var: Option<&String>) -> bool {
    var.is_some_and(|v| std::env::var(v).map_or(true, |x| x.trim().is_empty()))
}

/// `[mcp.http.oauth]` beyond what loading checks: a public resource should be HTTPS and should
/// not also take the static token; the issuer should be HTTPS off loopback.
fn oauth_findings(o: &openhuman_config::OAuthConfig, out: &mut Vec<Finding>) {
    let host_of =
        |url: &str| url.split_once("://").map_or("", |(_, r)| r).split(['/', '?']).next().unwrap_or("").to_string();
    let is_local = |url: &str| {
        let h = host_of(url);
        let name = if h.starts_with('[') {
            h.split(']').next().unwrap_or("").trim_start_matches('[').to_string()
        } else {
            h.rsplit_once(':').map_or(h.clone(), |(n, _)| n.to_string())
        };
        openhuman_common::is_loopback_host(&name)
    };
    if let Some(r) = &o.resource
        && !is_local(r)
    {
        if r.starts_with("http://") {
            out.push(warning(format!(
                "HTTP: [mcp.http.oauth].resource {r:?} is public but not https://: put HTTPS in front (the tunnel's), \
                 access tokens must never cross the network in clear"
            )));
        }
        if o.accept_static_token {
            out.push(warning(
                "HTTP: [mcp.http.oauth].accept_static_token = true with a public resource: the static token works \
                 through the tunnel too; set it to false so only OAuth tokens reach this server from outside",
            ));
        }
    }
    if o.issuer.starts_with("http://") && !is_local(&o.issuer) {
        out.push(warning(format!(
            "HTTP: [mcp.http.oauth].issuer {:?} is not https://: its keys could be replaced on the way",
            o.issuer
        )));
    }
}

/// Everything wrong or doubtful in `config` (and the agents loaded beside it).
pub(crate) fn findings(paths: &Paths, config: &Config, agents: &Registry) -> Vec<Finding> {
    let mut out = Vec::new();
    let h = &config.mcp.http;
    let oauth_only = h.oauth.as_ref().is_some_and(|o| !o.accept_static_token);
    if h.enabled && !oauth_only {
        let loopback = openhuman_common::is_loopback_host(&h.host);
        match http_auth::chosen(config, None) {
            Err(e) => out.push(error(format!("HTTP: {e:#}"))),
            Ok(None) if !loopback => out.push(error(format!(
                "HTTP: `serve` refuses [mcp.http].host = {:?} (not loopback) without a token you chose: set \
                 OPENHUMAN_MCP_AUTH_TOKEN or [mcp.http].auth_token_file",
                h.host
            ))),
            Ok(None) if h.allow_no_token => out.push(warning(
                "HTTP: [mcp.http].allow_no_token = true: every user of this machine can use the HTTP port",
            )),
            Ok(None) => {
                // The generated token, when there is one already, must be usable.
                let file = paths.config_dir.join(http_auth::TOKEN_FILE);
                if file.exists()
                    && let Err(e) = http_auth::read_token_file(&file)
                {
                    out.push(error(format!("HTTP: {e:#}")));
                }
            }
            Ok(Some(_)) => {}
        }
    }
    if let Some(o) = &h.oauth {
        oauth_findings(o, &mut out);
    }
    let e = &config.memory.embeddings;
    if config.memory.engine == MemoryEngineKind::Embedded
        && e.provider != EmbeddingProvider::Builtin
        && let Err(why) = HttpEmbedder::check(e)
    {
        let text = format!("memory: the store would not open: {why}");
        out.push(if unset(e.api_key_env.as_ref()) { warning(text) } else { error(text) });
    }
    if config.llm.provider != LlmProvider::None
        && let Err(why) = openhuman_providers::llm::usable(config)
    {
        let text = format!("llm: {why}");
        out.push(if unset(config.llm.api_key_env.as_ref()) { warning(text) } else { error(text) });
    }
    for e in &agents.load_errors {
        out.push(error(format!("agent: {e}")));
    }
    for (i, source) in config.memory.sources.iter().enumerate() {
        if let Err(e) = crate::watch::scan::Matcher::new(source, Vec::new()) {
            out.push(error(format!("memory.sources[{i}]: {e}; the daemon would not watch {}", source.path.display())));
        } else if !source.path.exists() {
            out.push(warning(format!(
                "memory.sources[{i}]: {} does not exist; it is watched once it does and the config is reloaded",
                source.path.display()
            )));
        }
    }
    out.extend(client_findings(config, agents));
    out
}

/// `[clients]` patterns that match nothing this version has (a typo hides a tool from nobody),
/// and entries that lift a readonly `[autonomy].level` for clients known only by the name they
/// give themselves.
fn client_findings(config: &Config, agents: &Registry) -> Vec<Finding> {
    use openhuman_config::AutonomyLevel;
    use openhuman_config::clients::glob_match;
    let tools: Vec<&str> = crate::tools::all_tools().iter().map(|t| t.name).collect();
    let prompts: Vec<String> = crate::prompts::list(agents).into_iter().map(|p| p.name).collect();
    let mut out = Vec::new();
    for (entry, p) in &config.clients {
        let key = crate::clients::entry_key(entry);
        let lists = [
            ("tools", p.tools.as_deref().unwrap_or_default(), "tool", &tools[..]),
            ("deny_tools", &p.deny_tools[..], "tool", &tools[..]),
        ];
        for (list, patterns, what, names) in lists {
            for pattern in patterns {
                if !names.iter().any(|n| glob_match(pattern, n)) {
                    out.push(warning(format!(
                        "{key}.{list}: `{pattern}` matches no {what} of this version (`tools/list` names them)"
                    )));
                }
            }
        }
        for (list, patterns) in
            [("prompts", p.prompts.as_deref().unwrap_or_default()), ("deny_prompts", &p.deny_prompts[..])]
        {
            for pattern in patterns {
                if !prompts.iter().any(|n| glob_match(pattern, n)) {
                    out.push(warning(format!(
                        "{key}.{list}: `{pattern}` matches no prompt (`prompts/list` names them)"
                    )));
                }
            }
        }
        let by_name_only = entry == openhuman_config::clients::ANY_CLIENT
            || p.names.is_empty()
            || p.names.iter().any(|n| !n.contains(':'));
        if config.autonomy.level == AutonomyLevel::Readonly
            && p.level.is_some_and(|l| l != AutonomyLevel::Readonly)
            && by_name_only
        {
            out.push(warning(format!(
                "{key}.level lifts [autonomy].level = \"readonly\" for a client matched by the name it gives itself; \
                 any program that can reach the daemon can give that name"
            )));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toml_text: &str) -> Vec<Finding> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, toml_text).unwrap();
        let config = openhuman_config::load(&file).unwrap().config;
        let paths = Paths::under_home(dir.path());
        findings(&paths, &config, &Registry::load(&paths.config_dir))
    }

    fn levels(f: &[Finding]) -> Vec<Level> {
        f.iter().map(|f| f.level).collect()
    }

    #[test]
    fn what_serve_refuses_or_runs_degraded_is_an_error() {
        assert!(check("").is_empty(), "defaults are fine");
        let f = check("[mcp.http]\nenabled = true\nhost = \"0.0.0.0\"\n");
        assert_eq!(levels(&f), [Level::Error]);
        assert!(f[0].text.contains("without a token"), "{f:?}");
        let f = check("[memory.embeddings]\nprovider = \"ollama\"\n");
        assert_eq!(levels(&f), [Level::Error]);
        assert!(f[0].text.contains("[memory.embeddings].model"), "{f:?}");
        let f = check("[llm]\nprovider = \"anthropic\"\nmodel = \"claude\"\n");
        assert_eq!(levels(&f), [Level::Error]);
        assert!(f[0].text.contains("api_key_env"), "{f:?}");
        let f = check("[mcp.http]\nenabled = true\nallow_no_token = true\n");
        assert_eq!(levels(&f), [Level::Warning]);
        assert!(check("[mcp.http]\nenabled = true\n").is_empty(), "a token will be generated");
    }

    #[test]
    fn client_entries_that_match_nothing_or_lift_readonly_are_warned_of() {
        assert!(
            check("[clients.cursor]\ntools = [\"memory.*\", \"core.list_tools\"]\nprompts = [\"agent.*\"]\n")
                .is_empty()
        );
        let f = check("[clients.cursor]\ntools = [\"memroy.*\"]\ndeny_prompts = [\"nope\"]\n");
        assert_eq!(levels(&f), [Level::Warning, Level::Warning], "{f:?}");
        assert!(f[0].text.contains("clients.cursor.tools") && f[0].text.contains("memroy.*"), "{f:?}");
        let f = check("[autonomy]\nlevel = \"readonly\"\n[clients.agent]\nlevel = \"supervised\"\n");
        assert_eq!(levels(&f), [Level::Warning]);
        assert!(f[0].text.contains("clients.agent.level"), "{f:?}");
        assert!(
            check("[autonomy]\nlevel = \"readonly\"\n[clients.agent]\nnames = [\"oauth:abc\"]\nlevel = \"full\"\n")
                .is_empty()
        );
    }

    #[test]
    fn oauth_behind_a_tunnel_warns_about_clear_text_and_the_static_token() {
        let base = "[mcp.http]\nenabled = true\n[mcp.http.oauth]\nissuer = \"https://as.example\"\n";
        assert!(check(base).is_empty(), "{:?}", check(base));
        let public = format!("{base}resource = \"http://mcp.example/mcp\"\n");
        let f = check(&public);
        assert_eq!(levels(&f), [Level::Warning, Level::Warning], "{f:?}");
        assert!(f[0].text.contains("https") && f[1].text.contains("accept_static_token"), "{f:?}");
        let safe = format!("{base}resource = \"https://mcp.example/mcp\"\naccept_static_token = false\n");
        assert!(check(&safe).is_empty(), "{:?}", check(&safe));
        let far = "[mcp.http]\nenabled = true\nhost = \"0.0.0.0\"\n[mcp.http.oauth]\nissuer = \"https://as.example\"\n\
                   resource = \"https://mcp.example/mcp\"\naccept_static_token = false\n";
        assert!(check(far).is_empty(), "OAuth alone needs no static token: {:?}", check(far));
    }
}
