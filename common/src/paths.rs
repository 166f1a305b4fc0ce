//! Where every file lives. With a home directory (`--home` or `OPENHUMAN_HOME`) everything sits
//! under it; without one the platform's directories for the application `openhuman` are used.

use std::io;
use std::path::{Path, PathBuf};

/// Environment variable equivalent to `--home`.
pub const HOME_ENV: &str = "OPENHUMAN_HOME";

/// Resolved locations of config, data, socket and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The directory holding `config.toml`, prompt overrides and `agents/`.
    pub config_dir: PathBuf,
    /// The config file (may be overridden by `--config`).
    pub config_file: PathBuf,
    /// Store and indexes.
    pub data_dir: PathBuf,
    /// Directory of the socket and the autostart lock (0700).
    pub run_dir: PathBuf,
    /// The daemon's local socket.
    pub socket: PathBuf,
    /// Rolling log files.
    pub log_dir: PathBuf,
}

impl Paths {
    /// Resolves paths from an explicit home, else `OPENHUMAN_HOME`, else platform directories.
    pub fn resolve(home: Option<&Path>) -> io::Result<Paths> {
        let env_home = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        match home.map(Path::to_path_buf).or(env_home) {
            Some(home) => Ok(Paths::under_home(&absolute(&home)?)),
            None => Paths::platform(),
        }
    }

    /// Every path under one directory: the layout tests and portable installs use.
    pub fn under_home(home: &Path) -> Paths {
        let run_dir = home.join("run");
        Paths {
            config_dir: home.to_path_buf(),
            config_file: home.join("config.toml"),
            data_dir: home.join("data"),
            socket: run_dir.join("mcp.sock"),
            run_dir,
            log_dir: home.join("logs"),
        }
    }

    fn platform() -> io::Result<Paths> {
        let dirs = directories::ProjectDirs::from("", "", "openhuman").ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "cannot find a home directory; set OPENHUMAN_HOME or pass --home DIR",
            )
        })?;
        let data_dir = dirs.data_dir().to_path_buf();
        // One rule for the socket and the store: the socket lives beside the data, never in
        // XDG_RUNTIME_DIR. That variable is unset for cron, launchers, su and some ssh sessions,
        // and a client started there must still find the daemon that owns the store.
        let run_dir = data_dir.join("run");
        let log_dir = dirs.state_dir().unwrap_or(dirs.cache_dir()).join("logs");
        Ok(Paths {
            config_dir: dirs.config_dir().to_path_buf(),
            config_file: dirs.config_dir().join("config.toml"),
            socket: run_dir.join("mcp.sock"),
            run_dir,
            data_dir,
            log_dir,
        })
    }

    /// Replaces the config file (for `--config FILE`).
    pub fn with_config_file(mut self, file: Option<&Path>) -> io::Result<Paths> {
        if let Some(file) = file {
            self.config_file = absolute(file)?;
        }
        Ok(self)
    }

    /// Replaces the socket path (for `--socket PATH`).
    pub fn with_socket(mut self, socket: Option<&Path>) -> io::Result<Paths> {
        if let Some(socket) = socket {
            let socket = absolute(socket)?;
            if let Some(parent) = socket.parent() {
                self.run_dir = parent.to_path_buf();
            }
            self.socket = socket;
        }
        Ok(self)
    }

    /// Lock file that serialises daemon autostart between shims.
    pub fn autostart_lock(&self) -> PathBuf {
        self.run_dir.join("autostart.lock")
    }
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    if path.is_absolute() { Ok(path.to_path_buf()) } else { Ok(std::env::current_dir()?.join(path)) }
}

/// The name the daemon listens on and the shim connects to. Unix: the socket file path.
/// Windows: a per-user named pipe `openhuman-mcp-<user>`.
pub fn socket_name(path: &Path) -> io::Result<interprocess::local_socket::Name<'static>> {
    #[cfg(unix)]
    {
        use interprocess::local_socket::{GenericFilePath, ToFsName};
        let len = path.as_os_str().len();
        // sun_path is 108 bytes on Linux and 104 on macOS, including the terminating NUL.
        if len >= 104 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "socket path is {len} bytes, longer than the platform allows (103); \
                     choose a shorter --home or --socket: {}",
                    path.display()
                ),
            ));
        }
        path.to_path_buf().to_fs_name::<GenericFilePath>()
    }
    #[cfg(windows)]
    {
        use interprocess::local_socket::{GenericNamespaced, ToNsName};
        let _ = path;
        let user = std::env::var("USERNAME").unwrap_or_else(|_| "user".to_string());
        format!("openhuman-mcp-{user}").to_ns_name::<GenericNamespaced>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_layout() {
        let p = Paths::under_home(Path::new("/h"));
        assert_eq!(p.config_file, Path::new("/h/config.toml"));
        assert_eq!(p.data_dir, Path::new("/h/data"));
        assert_eq!(p.socket, Path::new("/h/run/mcp.sock"));
        assert_eq!(p.log_dir, Path::new("/h/logs"));
    }

    /// The socket's place follows the data's, whatever XDG_RUNTIME_DIR says.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_socket_sits_beside_the_data_whatever_the_runtime_dir() {
        let p = Paths::platform().unwrap();
        assert_eq!(p.run_dir, p.data_dir.join("run"));
        assert_eq!(p.socket, p.data_dir.join("run/mcp.sock"));
    }

    #[test]
    fn overlong_socket_path_is_refused_with_advice() {
        let long = PathBuf::from(format!("/{}", "a".repeat(120)));
        let err = socket_name(&long).unwrap_err();
        assert!(err.to_string().contains("shorter --home"), "{err}");
    }
}
