//! PostgreSQL as the shared store: a throwaway PostgreSQL 15 server (`openhuman_tests::postgres`)
//! and several daemons, each in its own home, pointed at one database. A write on one is found
//! on the others; a daemon that was down catches up, and `reindex` rebuilds from PostgreSQL
//! alone; concurrent upserts and ingests store one copy; reads go on while PostgreSQL is down,
//! writes fail clearly and work again once it is back; `kill -9` of the server or of a daemon
//! during writes loses no acknowledged write or audit row; `migrate-store` moves a store both
//! ways with checked counts; the policy's rate limit and the audit log span machines. The first
//! test checks the server harness itself. Without PostgreSQL's programs the tests say they skip
//! (under `CI` they fail).

use openhuman_tests::postgres::PgServer;

#[test]
fn the_throwaway_server_starts_answers_survives_a_crash_and_restarts() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("harness");
    assert!(url.starts_with("postgres://") && url.ends_with("/harness?sslmode=disable"), "{url}");
    assert_eq!(pg.psql("harness", "SELECT 1"), "1");
    pg.psql("harness", "CREATE TABLE t (v int); INSERT INTO t VALUES (41), (1)");
    pg.kill9();
    assert!(pg.postmaster_pid().is_none(), "the server is gone after kill9");
    pg.start_again();
    assert_eq!(pg.psql("harness", "SELECT 1"), "1");
    assert_eq!(pg.psql("harness", "SELECT sum(v) FROM t"), "42", "committed rows survive the crash");
    pg.stop();
    assert!(pg.postmaster_pid().is_none());
    pg.start_again();
    assert_eq!(pg.psql("harness", "SELECT count(*) FROM t"), "2");
}
