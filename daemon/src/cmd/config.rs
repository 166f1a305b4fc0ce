//! `config path|show|check`: where the config file is, the effective config (file, defaults and
//! environment overrides) as TOML, and what `serve` would refuse or run degraded (`check`).

use anyhow::Result;
use openhuman_common::Paths;
use openhuman_config as config;

use super::{check, out};
use crate::cli::ConfigAction;
use crate::{EXIT_FAILURE, EXIT_OK, agents};

pub(crate) fn run(paths: &Paths, action: &ConfigAction) -> Result<i32> {
    match action {
        ConfigAction::Path => out(&paths.config_file.display().to_string()),
        ConfigAction::Show => {
            let loaded = config::load(&paths.config_file)?;
            out(&format!(
                "# effective config: {} (file {})",
                paths.config_file.display(),
                if loaded.file_exists { "present" } else { "absent: defaults" }
            ));
            if !loaded.env_overrides.is_empty() {
                out(&format!("# overridden by environment: {}", loaded.env_overrides.join(", ")));
            }
            out(&config::to_toml(&loaded.config)?);
        }
        ConfigAction::Check => {
            let loaded = config::load(&paths.config_file)?;
            let agents = agents::Registry::load(&paths.config_dir);
            let findings = check::findings(paths, &loaded.config, &agents);
            for f in &findings {
                let level = if f.level == check::Level::Error { "error" } else { "warning" };
                out(&format!("{level}: {}", f.text));
            }
            if findings.iter().any(|f| f.level == check::Level::Error) {
                out(&format!("config has errors: {}", paths.config_file.display()));
                return Ok(EXIT_FAILURE);
            }
            out(&format!(
                "config OK: {} ({}), {} agents",
                paths.config_file.display(),
                if loaded.file_exists { "file present" } else { "no file: defaults" },
                agents.agents.len()
            ));
        }
    }
    Ok(EXIT_OK)
}
