//! What differs between SQLite and PostgreSQL, in one place, and the macros that run one
//! body of sqlx code on either engine.
//!
//! Every operation of the store is written once (`store/sql/`), in SQL both engines accept:
//! `$N` placeholders (sqlx-sqlite binds `$N` by its number, as PostgreSQL does), `RETURNING`,
//! `ON CONFLICT … DO UPDATE`, `CAST(x AS TEXT)` rather than `x::text`, `data ->> 'key'`
//! (SQLite ≥ 3.38 reads it as `'$.key'`). Where the SQL really differs, the statement takes a
//! fragment from `d`: this file's [`sqlite`] or [`postgres`] module, the same names in both.
//!
//! The macros expand their body once per engine (the idea of vaultwarden's `db_run!`): in
//! each arm the connection is that engine's concrete type and `d` is that engine's dialect,
//! so the same tokens type-check against `SqlitePool` and `PgPool` without generic sqlx
//! bounds, and the compiler checks both.
//! - [`read!`]: `|c|` a pool (SQLite: the read-only pool; PostgreSQL: the pool).
//! - [`write!`]: `|tx|` a write transaction (SQLite: on the one writer, under its mutex;
//!   PostgreSQL: holding the log's advisory lock, see `postgres/mod.rs`); the body returns
//!   `(value, events)`, the macro commits and then publishes `events` (SQLite before the
//!   mutex is released; PostgreSQL through the feed), so seq order stays publish order.
//! - [`write_one!`]: `|c|` a connection for one statement without a transaction (SQLite:
//!   the writer; PostgreSQL: one of the pool's, so the statement takes any lock it needs
//!   itself).
//! - [`snapshot!`]: `|tx|` a read-only transaction on one snapshot.
//! - [`on!`] and [`on_pool!`]: for helpers that run inside a write (`|c|` the [`Conn`]'s
//!   connection) or on a pool without the store (`|c|` the [`Pool`]).

use sqlx::{PgConnection, PgPool, SqliteConnection, SqlitePool};

/// A write transaction's connection on either engine, for the helpers a write calls.
pub(in crate::store) enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

impl Conn<'_> {
    /// The same connection for one more helper, keeping this one for the next.
    pub(in crate::store) fn reborrow(&mut self) -> Conn<'_> {
        match self {
            Conn::Sqlite(c) => Conn::Sqlite(c),
            Conn::Postgres(c) => Conn::Postgres(c),
        }
    }
}

/// A reading pool of either engine, for the reads that run without a [`crate::store::Store`]
/// (PostgreSQL's feed).
#[derive(Clone, Copy)]
pub(in crate::store) enum Pool<'p> {
    Sqlite(&'p SqlitePool),
    Postgres(&'p PgPool),
}

impl<'c> From<&'c mut SqliteConnection> for Conn<'c> {
    fn from(conn: &'c mut SqliteConnection) -> Conn<'c> {
        Conn::Sqlite(conn)
    }
}

impl<'c> From<&'c mut PgConnection> for Conn<'c> {
    fn from(conn: &'c mut PgConnection) -> Conn<'c> {
        Conn::Postgres(conn)
    }
}

impl<'p> From<&'p SqlitePool> for Pool<'p> {
    fn from(pool: &'p SqlitePool) -> Pool<'p> {
        Pool::Sqlite(pool)
    }
}

impl<'p> From<&'p PgPool> for Pool<'p> {
    fn from(pool: &'p PgPool) -> Pool<'p> {
        Pool::Postgres(pool)
    }
}

/// SQLite's side: one file, one writer, FTS5, JSON as text.
pub(in crate::store) mod sqlite {
    /// After a parameter stored in a `json` column (SQLite keeps JSON as text).
    pub const JSON: &str = "";

    /// The database's clock in Unix milliseconds (the same machine as the daemon's).
    pub const NOW_MS: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

    /// `column IN` the ids bound at `param` (bind [`list`]).
    pub fn in_list(column: &str, param: &str) -> String {
        format!("{column} IN (SELECT value FROM json_each({param}))")
    }

    /// `column NOT IN` the ids bound at `param` (bind [`list`]).
    pub fn not_in_list(column: &str, param: &str) -> String {
        format!("{column} NOT IN (SELECT value FROM json_each({param}))")
    }

    /// A list of ids as [`in_list`] binds it: a JSON array.
    pub fn list(ids: &[String]) -> String {
        serde_json::Value::from(ids.to_vec()).to_string()
    }

    /// Whether this engine's store is its database's only writer (the home's lock), in SQL.
    pub const EXCLUSIVE: &str = "TRUE";

    /// The larger of two values (a scalar `MAX` on SQLite).
    pub const GREATEST: &str = "MAX";

    /// Full-text search, FTS5 (contentless tables kept by triggers): what to bind for
    /// `words`, one phrase each, quoted so it is matched, never parsed as FTS syntax.
    pub fn search_words(words: &[String]) -> Vec<String> {
        let any = words
            .iter()
            .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR ");
        vec![any]
    }

    /// Memories `m` of agent `$1` matching the words bound from `$3`, best first, `$2` at
    /// most.
    pub fn memories_matching(_words: usize) -> String {
        "SELECT m.key, m.text FROM memories_fts f JOIN memories m ON m.id = f.rowid \
         WHERE memories_fts MATCH $3 AND m.agent_id = $1 ORDER BY f.rank LIMIT $2"
            .to_owned()
    }

    /// Events `e` whose conversation text matches the words bound from `$first`.
    pub fn conversation_matching(first: usize, _words: usize) -> String {
        format!(
            "FROM conversation_fts f JOIN events e ON e.seq = f.rowid \
             WHERE conversation_fts MATCH ${first}"
        )
    }

    /// The size of an event's stored data (SQLite's `length` of its text).
    pub const DATA_LENGTH: &str = "length(data)";
    /// What opens and closes the append-only trigger's one door (retention's rewrite).
    pub const REWRITE_OPEN: &[&str] = &["INSERT INTO events_rewrite (id) VALUES (1)"];
    pub const REWRITE_CLOSE: &[&str] = &["DELETE FROM events_rewrite"];

    /// Before a one-statement append: nothing, the writer's mutex orders appends.
    pub const LOCK: &str = "";
    /// After its `SELECT` list, and before its first table.
    pub const FROM_LOCK: &str = "";
    pub const LOCK_JOIN: &str = "";
}

/// PostgreSQL's side: several daemons, the log's advisory lock, `tsvector`, `json` columns.
pub(in crate::store) mod postgres {
    /// After a parameter stored in a `json` column: the text is cast, kept as written.
    pub const JSON: &str = "::json";

    /// The database server's clock in Unix milliseconds: leases are computed and compared
    /// on it, so daemons on machines with skewed clocks agree on when one expires.
    pub const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

    /// `column IN` the ids bound at `param` (bind [`list`]).
    pub fn in_list(column: &str, param: &str) -> String {
        format!("{column} = ANY({param})")
    }

    /// `column NOT IN` the ids bound at `param` (bind [`list`]).
    pub fn not_in_list(column: &str, param: &str) -> String {
        format!("{column} <> ALL({param})")
    }

    /// A list of ids as [`in_list`] binds it: a `TEXT[]`.
    pub fn list(ids: &[String]) -> &[String] {
        ids
    }

    /// Whether this engine's store is its database's only writer: never, others may share it.
    pub const EXCLUSIVE: &str = "FALSE";

    /// The larger of two values.
    pub const GREATEST: &str = "GREATEST";

    /// Full-text search, a generated `tsvector` with a GIN index (the `simple`
    /// configuration: words lower-cased, no stemming, like FTS5's default tokenizer): what
    /// to bind for `words`, at most [`MAX_WORDS`], each one parameter.
    pub fn search_words(words: &[String]) -> Vec<String> {
        words[..words.len().min(MAX_WORDS)].to_vec()
    }

    /// The most words a search ORs together.
    const MAX_WORDS: usize = 64;

    /// A `tsquery` matching any of `count` words bound from `$first` on: each word goes
    /// through `plainto_tsquery`, so it is matched as words, never parsed as query syntax.
    fn any_word(first: usize, count: usize) -> String {
        (first..first + count.clamp(1, MAX_WORDS))
            .map(|n| format!("plainto_tsquery('simple', ${n})"))
            .collect::<Vec<_>>()
            .join(" || ")
    }

    /// Memories `m` of agent `$1` matching the words bound from `$3`, best first, `$2` at
    /// most.
    pub fn memories_matching(words: usize) -> String {
        format!(
            "SELECT m.key, m.text FROM memories m, (SELECT {} AS q) w \
             WHERE m.agent_id = $1 AND m.tsv @@ w.q \
             ORDER BY ts_rank(m.tsv, w.q) DESC, m.id LIMIT $2",
            any_word(3, words)
        )
    }

    /// Events `e` whose conversation text matches the words bound from `$first`.
    pub fn conversation_matching(first: usize, words: usize) -> String {
        format!(
            "FROM events e, (SELECT {} AS q) w \
             WHERE e.conversation_tsv IS NOT NULL AND e.conversation_tsv @@ w.q",
            any_word(first, words)
        )
    }

    /// The size of an event's stored data in bytes.
    pub const DATA_LENGTH: &str = "octet_length(data::text)";
    /// What opens the append-only trigger's one door for this transaction (retention's
    /// rewrite); it closes with the transaction.
    pub const REWRITE_OPEN: &[&str] = &["SET LOCAL lazyboy.rewrite = 'on'"];
    pub const REWRITE_CLOSE: &[&str] = &[];

    /// Before a one-statement append: the log's lock (`postgres::LOG_LOCK`), taken in a
    /// materialized CTE, which runs before the row and its seq are made.
    pub const LOCK: &str =
        "WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock(21499276878311289)) ";
    /// After its `SELECT` list (`FROM lock`), and before its first table (`lock, `).
    pub const FROM_LOCK: &str = " FROM lock";
    pub const LOCK_JOIN: &str = "lock, ";
}

/// Runs `$body` with `$c` a reading pool of the store's engine (and `d` its dialect).
macro_rules! read {
    ($store:expr, |$c:ident| $body:expr) => {
        $crate::store::dialect::on_pool!($store.reader(), |$c| $body)
    };
}
pub(in crate::store) use read;

/// Runs `$body` (which gives `(value, events)`) in a write transaction `$tx`, commits,
/// publishes the events in order, and gives the value.
macro_rules! write {
    ($store:expr, |$tx:ident| $body:expr) => {
        match $store.backend() {
            $crate::store::Backend::Sqlite(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::sqlite as d;
                let mut writer = db.writer.lock().await;
                #[allow(unused_mut)]
                let mut $tx = sqlx::Connection::begin(&mut *writer).await?;
                let (value, events) = $body;
                $tx.commit().await?;
                db.publish(events);
                value
            }
            $crate::store::Backend::Postgres(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::postgres as d;
                #[allow(unused_mut)]
                let mut $tx = db.begin().await?;
                let (value, events) = $body;
                $tx.commit().await?;
                db.feed.committed(events);
                value
            }
        }
    };
}
pub(in crate::store) use write;

/// Runs `$body` (which gives `(value, events)`) as one statement on `$c`, then publishes.
macro_rules! write_one {
    ($store:expr, |$c:ident| $body:expr) => {
        match $store.backend() {
            $crate::store::Backend::Sqlite(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::sqlite as d;
                let mut writer = db.writer.lock().await;
                let $c = &mut *writer;
                let (value, events) = $body;
                db.publish(events);
                value
            }
            $crate::store::Backend::Postgres(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::postgres as d;
                let mut conn = db.pool.acquire().await?;
                let $c = &mut *conn;
                let (value, events) = $body;
                db.feed.committed(events);
                value
            }
        }
    };
}
pub(in crate::store) use write_one;

/// Runs `$body` with `$tx` a read-only transaction on one snapshot (SQLite: a read
/// transaction of the reader pool, one WAL snapshot from its first statement; PostgreSQL:
/// `REPEATABLE READ`), and gives its value.
macro_rules! snapshot {
    ($store:expr, |$tx:ident| $body:expr) => {
        match $store.backend() {
            $crate::store::Backend::Sqlite(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::sqlite as d;
                let mut conn = db.reader.acquire().await?;
                let mut $tx = sqlx::Connection::begin(&mut *conn).await?;
                let value = $body;
                $tx.commit().await?;
                value
            }
            $crate::store::Backend::Postgres(db) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::postgres as d;
                let mut $tx = db.snapshot().await?;
                let value = $body;
                $tx.commit().await?;
                value
            }
        }
    };
}
pub(in crate::store) use snapshot;

/// Runs `$body` once per engine, with `$c` what `$value` holds (its `$kind`, [`Conn`] or
/// [`Pool`], says which) and `d` that engine's dialect.
macro_rules! each {
    ($kind:ident, $value:expr, |$c:ident| $body:expr) => {
        match $crate::store::dialect::$kind::from($value) {
            $crate::store::dialect::$kind::Sqlite($c) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::sqlite as d;
                $body
            }
            $crate::store::dialect::$kind::Postgres($c) => {
                #[allow(unused_imports)]
                use $crate::store::dialect::postgres as d;
                $body
            }
        }
    };
}
pub(in crate::store) use each;

/// Runs `$body` with `$c` the connection of `$conn` (a [`Conn`]) and `d` its dialect.
macro_rules! on {
    ($conn:expr, |$c:ident| $body:expr) => {
        $crate::store::dialect::each!(Conn, $conn, |$c| $body)
    };
}
pub(in crate::store) use on;

/// Runs `$body` with `$c` the pool of `$pool` (a [`Pool`]) and `d` its dialect.
macro_rules! on_pool {
    ($pool:expr, |$c:ident| $body:expr) => {
        $crate::store::dialect::each!(Pool, $pool, |$c| $body)
    };
}
pub(in crate::store) use on_pool;
