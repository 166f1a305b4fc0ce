//! A throwaway PostgreSQL server for the shared-store tests and benchmark: `PgServer` runs `initdb`
//! into a temp directory and the postmaster (a child of the test process) on a free loopback port
//! with its Unix socket in that directory, creates a database per test, stops, starts again,
//! crashes it (`kill9`) and makes it unreachable (`freeze`) on request, and answers SQL through the
//! bundled `psql`. No system cluster is touched. The programs of PostgreSQL 15 (no pgvector) come
//! from `OPENHUMAN_TEST_PG_BIN` (printed by `tests/fixtures/ensure-postgres.sh`), else Debian's
//! directory; those of PostgreSQL 18 or 16 with pgvector ([`PgServer::start_pgvector`]) from
//! `OPENHUMAN_TEST_PGVECTOR_BIN` (`tests/fixtures/ensure-pgvector.sh`).
//! PostgreSQL refuses to run as root, so under root the server's own commands run as an
//! unprivileged user (Debian's `postgres`, else one created here) who owns the directory. Every
//! wait is bounded; when a test fails, the server's log is printed.

use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::WAIT;
use crate::process::{exit_within, kill, wait_exit};

/// The role every test connects as (trusted on loopback, superuser of the throwaway cluster).
pub const ROLE: &str = "openhuman";
/// Debian's directory of PostgreSQL 15's server programs.
const DEBIAN_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The unprivileged user created to run the server when a root machine has no `postgres` user.
const FALLBACK_USER: &str = "openhuman-pg";

/// A PostgreSQL cluster of one test, in a temp directory; stopped (and removed) on drop.
pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// The unprivileged user (uid, gid) the server runs as when the tests run as root.
    owner: Option<(u32, u32)>,
    /// The postmaster, a child of this process: so that it is reaped when it dies (this
    /// machine's init may leave an orphan a zombie, which PostgreSQL's restart takes for a
    /// server still running).
    postmaster: Mutex<Option<Child>>,
    /// The server's processes while `freeze` holds them stopped.
    frozen: Mutex<Vec<u32>>,
}

impl PgServer {
    /// A fresh cluster, started, set for tests (no fsync). Without PostgreSQL's programs on this
    /// machine (found or installed by `tests/fixtures/ensure-postgres.sh`) the test fails saying
    /// so, unless the user skipped it (`OPENHUMAN_TEST_SKIP=postgres`): then None.
    pub fn start() -> Option<PgServer> {
        PgServer::start_with("")
    }

    /// `start` with `settings` (postgresql.conf lines) after the test ones, which they override:
    /// the benchmark turns fsync back on.
    pub fn start_with(settings: &str) -> Option<PgServer> {
        let Some(bin) = bin_dir() else {
            if crate::fixtures::skipped(crate::fixtures::POSTGRES) {
                eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): PostgreSQL");
                return None;
            }
            panic!("PostgreSQL 15's server programs: {}", bin_dir_error());
        };
        Some(PgServer::start_in(bin, settings))
    }

    /// A fresh PostgreSQL 18 (16 on a CPU without AVX-512) cluster whose server has the pgvector
    /// extension (from `tests/fixtures/ensure-pgvector.sh`); the test fails when it cannot be had, unless the user
    /// skipped it (`OPENHUMAN_TEST_SKIP=pgvector`): then None.
    pub fn start_pgvector() -> Option<PgServer> {
        PgServer::start_pgvector_with("")
    }

    /// `start_pgvector` with extra settings, as `start_with`.
    pub fn start_pgvector_with(settings: &str) -> Option<PgServer> {
        let found = crate::fixtures::path(crate::fixtures::PGVECTOR).and_then(|d| {
            if has_programs(&d) { Ok(d) } else { Err(format!("{} lacks the server programs", d.display())) }
        });
        let bin = match found {
            Ok(d) => d,
            Err(e) => {
                if crate::fixtures::skipped(crate::fixtures::PGVECTOR) {
                    eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): PostgreSQL with pgvector");
                    return None;
                }
                panic!("PostgreSQL with pgvector: {e}");
            }
        };
        Some(PgServer::start_in(bin, settings))
    }

    fn start_in(bin: PathBuf, settings: &str) -> PgServer {
        let dir = tempfile::Builder::new().prefix("oh-pg-").tempdir_in("/tmp").expect("tempdir for PostgreSQL");
        let owner = server_user();
        let mut pg =
            PgServer { bin, dir, port: 0, owner, postmaster: Mutex::new(None), frozen: Mutex::new(Vec::new()) };
        pg.init(settings);
        // A port picked free can be taken before the server binds it: try a few.
        for attempt in 1..=3 {
            pg.port = free_port();
            pg.write_port();
            match pg.try_start() {
                Ok(()) => return pg,
                Err(e) if attempt == 3 => panic!("PostgreSQL did not start: {e}\n{}", pg.log()),
                Err(_) => continue,
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// The libpq URL of database `db` (TCP on loopback, no TLS).
    pub fn url(&self, db: &str) -> String {
        self.url_as(ROLE, db)
    }

    /// The URL of database `db` for another role (one a test created: `CREATE ROLE … LOGIN`).
    pub fn url_as(&self, role: &str, db: &str) -> String {
        format!("postgres://{role}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates database `name` and returns its URL.
    pub fn create_db(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// Runs `sql` in database `db` with `psql`; its output, unaligned and without headers
    /// (`SELECT 1` gives `1`). Panics with psql's error when it fails.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.psql_as(ROLE, db, sql)
    }

    /// `psql` connected as `role`, which row-level security then applies to.
    pub fn psql_as(&self, role: &str, db: &str, sql: &str) -> String {
        let port = self.port.to_string();
        run_psql(&self.bin, &["-h", "127.0.0.1", "-U", role, "-p", &port, "-d", db], sql)
    }

    /// A clean shutdown (SIGINT, PostgreSQL's "fast" mode): open connections are ended, nothing
    /// committed is lost. Bounded.
    pub fn stop(&self) {
        let mut slot = self.postmaster.lock().unwrap_or_else(PoisonError::into_inner);
        let mut child = slot.take().expect("stop: the server is not running");
        kill(child.id(), libc::SIGINT);
        let status = wait_exit(&mut child, WAIT);
        assert!(status.success(), "PostgreSQL exited with {status} on a fast shutdown\n{}", self.log());
    }

    /// Starts the server again on the same port, after `stop` or `kill9` (crash recovery runs).
    pub fn start_again(&self) {
        self.try_start().unwrap_or_else(|e| panic!("PostgreSQL did not start again: {e}\n{}", self.log()));
    }

    /// A crash of the whole server: SIGKILL to the postmaster, then to each of its processes
    /// (backends, WAL writer, checkpointer), and a bounded wait until none of them runs.
    pub fn kill9(&self) {
        let mut slot = self.postmaster.lock().unwrap_or_else(PoisonError::into_inner);
        let mut child = slot.take().expect("kill9: the server is not running");
        let pid = child.id();
        let children = processes_with_parent(pid);
        kill(pid, libc::SIGKILL);
        for c in &children {
            kill(*c, libc::SIGKILL);
        }
        wait_exit(&mut child, WAIT);
        let deadline = Instant::now() + WAIT;
        while children.iter().any(|c| running(*c)) {
            assert!(Instant::now() < deadline, "the killed server's processes are still there after {WAIT:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// An unreachable server: every one of its processes stopped (SIGSTOP), so connections
    /// open and requests sent get no answer, as behind a dropped network link. `thaw` resumes.
    pub fn freeze(&self) {
        let pid = self.postmaster_pid().expect("freeze: the server is not running");
        let mut frozen = self.frozen.lock().unwrap_or_else(PoisonError::into_inner);
        // The postmaster first, so that it forks no new process meanwhile.
        kill(pid, libc::SIGSTOP);
        frozen.push(pid);
        for c in processes_with_parent(pid) {
            kill(c, libc::SIGSTOP);
            frozen.push(c);
        }
    }

    /// Resumes a server `freeze` stopped.
    pub fn thaw(&self) {
        for pid in self.frozen.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
            kill(pid, libc::SIGCONT);
        }
    }

    /// Whether the server accepts connections (`pg_isready`, waiting at most two seconds).
    pub fn answers(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", ROLE, "-d", "postgres", "-t", "2"])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The postmaster's pid while it runs.
    pub fn postmaster_pid(&self) -> Option<u32> {
        let slot = self.postmaster.lock().unwrap_or_else(PoisonError::into_inner);
        slot.as_ref().map(Child::id).filter(|p| running(*p))
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A command for one of the server programs, run as the server's user.
    fn server_cmd(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.current_dir(self.dir.path()).stdin(Stdio::null()).env_remove("PGDATA").env("LC_ALL", "C");
        if let Some((uid, gid)) = self.owner {
            // std drops root's supplementary groups when it sets the uid.
            c.uid(uid).gid(gid);
        }
        c
    }

    /// `initdb`, a loopback-only trust configuration, and settings for a test server.
    fn init(&self, extra: &str) {
        let root = self.dir.path();
        if let Some((uid, gid)) = self.owner {
            assert_traversable(root);
            chown(root, uid, gid);
        }
        let out = self
            .server_cmd("initdb")
            .args(["--no-sync", "--auth=trust", "--encoding=UTF8", "--locale=C", "-U", ROLE, "-D"])
            .arg(self.data())
            .output()
            .expect("run initdb");
        assert!(out.status.success(), "initdb failed: {}", text(&out));
        let sock = root.join("sock");
        std::fs::create_dir(&sock).expect("socket dir");
        if let Some((uid, gid)) = self.owner {
            chown(&sock, uid, gid);
        }
        // Only loopback, and only trust there: nothing outside this machine can connect.
        std::fs::write(
            self.data().join("pg_hba.conf"),
            "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n",
        )
        .expect("write pg_hba.conf");
        let settings = format!(
            "\n# openhuman tests\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nsynchronous_commit = on\nfull_page_writes = off\nshared_buffers = 32MB\n\
             max_connections = 200\nlogging_collector = off\n",
            sock.display()
        );
        append(&self.data().join("postgresql.conf"), &(settings + extra + "\n"));
    }

    /// The port goes into the configuration, so that `start_again` keeps it.
    fn write_port(&self) {
        append(&self.data().join("postgresql.conf"), &format!("port = {}\n", self.port));
    }

    /// Starts the postmaster as a child of this process (in a process group of its own, so a
    /// signal to the test's group does not reach it), then polls `pg_isready` until it accepts
    /// connections (bounded).
    fn try_start(&self) -> Result<(), String> {
        let mut slot = self.postmaster.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(slot.is_none(), "the server is already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .map_err(|e| format!("open the server log: {e}"))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut child = self
            .server_cmd("postgres")
            .arg("-D")
            .arg(self.data())
            .process_group(0)
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("spawn postgres: {e}"))?;
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                return Err(format!("postgres exited with {status} before accepting connections"));
            }
            if self.answers() {
                *slot = Some(child);
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("not accepting connections on port {} after {WAIT:?}", self.port));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("==== PostgreSQL log for failed test ====\n{}", self.log());
        }
        self.thaw();
        let slot = self.postmaster.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut child) = slot.take() {
            // SIGQUIT: PostgreSQL's immediate shutdown; the data goes with the directory.
            kill(child.id(), libc::SIGQUIT);
            if exit_within(&mut child, WAIT).is_err() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Runs `sql` with `psql` against `url` (one [`PgServer::url`] or [`PgServer::url_as`] gave), as
/// the URL's role, so row-level security applies as it does to a daemon given that URL; the
/// output as [`PgServer::psql`] gives it. Panics when no `psql` is found or the statement fails.
pub fn psql_url(url: &str, sql: &str) -> String {
    let bin = bin_dir().unwrap_or_else(|| panic!("psql: {}", bin_dir_error()));
    run_psql(&bin, &["-d", url], sql)
}

/// `psql` of `bin` connected by `target` (host, role, port and database, or a URL), running
/// `sql`: its output, unaligned and without headers. Panics with psql's error when it fails.
fn run_psql(bin: &Path, target: &[&str], sql: &str) -> String {
    let out = Command::new(bin.join("psql"))
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .args(target)
        .args(["-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "psql {sql:?} ({}) failed ({}): {}",
        target.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Where the server programs are: `OPENHUMAN_TEST_PG_BIN` (or, unset, what
/// `tests/fixtures/ensure-postgres.sh` finds or installs), else Debian's PostgreSQL 15.
fn bin_dir() -> Option<PathBuf> {
    let candidates = crate::fixtures::value(crate::fixtures::POSTGRES).ok().map(PathBuf::from).into_iter();
    candidates.chain([PathBuf::from(DEBIAN_BIN)]).find(|d| has_programs(d))
}

fn has_programs(dir: &Path) -> bool {
    ["initdb", "postgres", "pg_isready", "psql"].iter().all(|p| dir.join(p).is_file())
}

/// Why no server programs were found, with what to do.
fn bin_dir_error() -> String {
    match crate::fixtures::value(crate::fixtures::POSTGRES) {
        Ok(dir) => format!("{dir} does not hold initdb, postgres, pg_isready and psql"),
        Err(e) => e,
    }
}

/// The (uid, gid) to run the server as: none unless the tests run as root; then Debian's
/// `postgres` user, else a system user created once for the purpose.
fn server_user() -> Option<(u32, u32)> {
    static USER: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *USER.get_or_init(|| {
        // SAFETY: geteuid(2) cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        if let Some(ids) = lookup_user("postgres") {
            return Some(ids);
        }
        if lookup_user(FALLBACK_USER).is_none() {
            let out = Command::new("useradd")
                .args(["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_USER])
                .output()
                .expect("run useradd");
            // 9: another test process created it first.
            assert!(out.status.success() || out.status.code() == Some(9), "useradd failed: {}", text(&out));
        }
        Some(lookup_user(FALLBACK_USER).unwrap_or_else(|| panic!("no user {FALLBACK_USER} after useradd")))
    })
}

fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let name = CString::new(name).ok()?;
    // SAFETY: getpwnam(3) with a valid C string; the fields are copied out at once, and the
    // lookup runs once per process (under `server_user`'s OnceLock).
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// The server's user must be able to reach its directory: every ancestor needs the execute
/// bit for others (root-only directories would make initdb fail with a confusing message).
fn assert_traversable(dir: &Path) {
    for parent in dir.ancestors().skip(1) {
        let mode = std::fs::metadata(parent).map(|m| m.permissions().mode()).unwrap_or(0);
        assert!(
            mode & 0o001 != 0,
            "{} is not traversable by other users (mode {mode:o}): the PostgreSQL server's user cannot reach {}",
            parent.display(),
            dir.display()
        );
    }
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {} to {uid}:{gid}: {e}", path.display()));
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f =
        std::fs::OpenOptions::new().append(true).open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    f.write_all(text.as_bytes()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

fn text(out: &Output) -> String {
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    format!("{}{}", o, e)
}

/// The children of `parent`, from /proc.
fn processes_with_parent(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the parenthesised command name: state, then the parent's pid.
            let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// Whether `pid` is a running process (not gone, not a zombie).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_some_and(|s| !matches!(s, "Z" | "X"))
}
