//! Who may use the HTTP transport. A loopback port is reachable by every local user, so HTTP
//! always needs a bearer token unless the config says `[mcp.http].allow_no_token = true`. The
//! token is, in this order: `OPENHUMAN_MCP_AUTH_TOKEN`, the file named by `--auth-token-file`,
//! the file `[mcp.http].auth_token_file`, or else the one the daemon generates at first need and
//! keeps 0600 in `<config dir>/http-token` (`openhumand-mcp http-token` prints it for client
//! registration). A bind beyond loopback needs a token the user chose (one of the first three).
//!
//! The token never travels in argv: every local user can read a process's arguments
//! (`/proc/<pid>/cmdline`, `ps`), so the daemon takes no token on its command line and nothing
//! the project writes (service units, client entries) carries one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use openhuman_common::Paths;
use openhuman_config::Config;

/// The variable that carries the token.
pub(crate) const TOKEN_ENV: &str = "OPENHUMAN_MCP_AUTH_TOKEN";
/// The generated token's file, in the config directory.
pub(crate) const TOKEN_FILE: &str = "http-token";

/// Where the token in force comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Env,
    File(PathBuf),
    FlagFile(PathBuf),
    Generated(PathBuf),
}

/// The token a user set (environment, `--auth-token-file`, `auth_token_file`), if any.
pub(crate) fn chosen(config: &Config, flag_file: Option<&Path>) -> Result<Option<(String, Source)>> {
    if let Ok(t) = std::env::var(TOKEN_ENV)
        && !t.trim().is_empty()
    {
        return Ok(Some((t.trim().to_string(), Source::Env)));
    }
    if let Some(f) = flag_file {
        let t = read_token_file(f)?;
        if t.is_empty() {
            anyhow::bail!("the HTTP token file {} (--auth-token-file) is empty", f.display());
        }
        return Ok(Some((t, Source::FlagFile(f.to_path_buf()))));
    }
    if let Some(f) = &config.mcp.http.auth_token_file {
        let t = read_token_file(f)?;
        if !t.is_empty() {
            return Ok(Some((t, Source::File(f.clone()))));
        }
    }
    Ok(None)
}

/// The token a user set, else the generated one (made now when there is none yet).
pub(crate) fn token(paths: &Paths, config: &Config, flag_file: Option<&Path>) -> Result<(String, Source)> {
    if let Some(chosen) = chosen(config, flag_file)? {
        return Ok(chosen);
    }
    let file = paths.config_dir.join(TOKEN_FILE);
    Ok((generated(&file)?, Source::Generated(file)))
}

/// Reads the generated token at `file`, creating it (0600, 256 random bits as hex) first when
/// it does not exist.
fn generated(file: &Path) -> Result<String> {
    if file.exists() {
        return read_token_file(file);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let mut options = std::fs::OpenOptions::new();
    // `create_new`: two daemons starting at once never overwrite each other's token.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(file) {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(format!("{token}\n").as_bytes())
                .with_context(|| format!("cannot write the HTTP token to {}", file.display()))?;
            tracing::info!(file = %file.display(), "generated the HTTP bearer token");
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_token_file(file),
        Err(e) => Err(e).with_context(|| format!("cannot create the HTTP token file {}", file.display())),
    }
}

/// A token file's content, trimmed. A file other users may read is refused: anyone who can
/// read the token can do everything the token allows.
pub(crate) fn read_token_file(file: &Path) -> Result<String> {
    let what = || format!("cannot read the HTTP token file {}", file.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file).with_context(what)?.permissions().mode();
        if mode & 0o077 != 0 {
            anyhow::bail!(
                "the HTTP token file {} can be read by other users (mode {:o}); make it private with `chmod 600 {}`",
                file.display(),
                mode & 0o777,
                file.display()
            );
        }
    }
    Ok(std::fs::read_to_string(file).with_context(what)?.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_token_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(TOKEN_FILE);
        let first = generated(&file).unwrap();
        assert_eq!(first.len(), 64);
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(generated(&file).unwrap(), first, "the same token on the next start");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = generated(&file).unwrap_err().to_string();
            assert!(err.contains("chmod 600"), "{err}");
        }
    }
}
