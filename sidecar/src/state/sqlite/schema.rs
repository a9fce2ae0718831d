//! The SQLite schema, as the migrations that build it.

/// Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
pub(super) const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        key_hash    TEXT NOT NULL UNIQUE,
        name        TEXT NOT NULL,
        plan        TEXT NOT NULL,
        allow_ips   TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
    );
    CREATE TABLE usage (
        key_id  TEXT NOT NULL,
        day     TEXT NOT NULL,
        count   INTEGER NOT NULL,
        PRIMARY KEY (key_id, day)
    );
",
    "
    CREATE TABLE burst (
        key_id  TEXT NOT NULL,
        at_ms   INTEGER NOT NULL
    );
    CREATE INDEX burst_by_key ON burst (key_id, at_ms);
",
    "
    CREATE TABLE review_items (
        domain      TEXT PRIMARY KEY,
        reason      TEXT NOT NULL,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL,
        lookups     INTEGER NOT NULL
    );
    CREATE TABLE review_decisions (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        domain    TEXT NOT NULL,
        decision  TEXT NOT NULL,
        reviewer  TEXT NOT NULL,
        note      TEXT NOT NULL,
        at        INTEGER NOT NULL
    );
    CREATE INDEX review_decisions_by_domain ON review_decisions (domain, seq);
    CREATE TABLE infra (
        kind        TEXT NOT NULL,
        value       TEXT NOT NULL,
        domain      TEXT NOT NULL,
        disposable  INTEGER NOT NULL,
        PRIMARY KEY (kind, value, domain)
    );
",
    "
    CREATE TABLE rechecks (
        domain   TEXT PRIMARY KEY,
        last_at  INTEGER NOT NULL
    );
",
    "
    ALTER TABLE review_items ADD COLUMN sources TEXT NOT NULL DEFAULT '';
    ALTER TABLE review_items ADD COLUMN listed_as TEXT NOT NULL DEFAULT '';
",
    "
    CREATE TABLE warmup (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        cursor      TEXT NOT NULL,
        resolved    INTEGER NOT NULL,
        learned     INTEGER NOT NULL,
        failed      INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
    );
",
    // Issue 24: facts with the owner of the host they came through and when they were seen
    // (the old ones count as seen now, through an unknown owner); reviewers' marks on servers.
    "
    CREATE TABLE infra_facts (
        kind        TEXT NOT NULL,
        value       TEXT NOT NULL,
        domain      TEXT NOT NULL,
        via         TEXT NOT NULL,
        disposable  INTEGER NOT NULL,
        seen        INTEGER NOT NULL,
        PRIMARY KEY (kind, value, domain, via)
    );
    CREATE INDEX infra_facts_by_domain ON infra_facts (domain);
    INSERT INTO infra_facts (kind, value, domain, via, disposable, seen)
        SELECT kind, value, domain, '', disposable, CAST(strftime('%s', 'now') AS INTEGER) FROM infra;
    DROP TABLE infra;
    CREATE TABLE infra_marks (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        kind      TEXT NOT NULL,
        value     TEXT NOT NULL,
        decision  TEXT NOT NULL,
        reviewer  TEXT NOT NULL,
        note      TEXT NOT NULL,
        at        INTEGER NOT NULL
    );
    CREATE INDEX infra_marks_by_server ON infra_marks (kind, value, seq);
",
    // Issue 24: the queue ordered and bounded (`state/queue.rs`); `decided` is kept by
    // `decide` (set for the entries a decision covers; the fix-up below sets it for the
    // decisions made before).
    "
    ALTER TABLE review_items ADD COLUMN likelihood INTEGER NOT NULL DEFAULT 100;
    ALTER TABLE review_items ADD COLUMN priority INTEGER NOT NULL DEFAULT 100;
    ALTER TABLE review_items ADD COLUMN servers TEXT NOT NULL DEFAULT '';
    ALTER TABLE review_items ADD COLUMN decided INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX review_items_by_rank ON review_items (decided, priority, last_seen);
    CREATE TABLE review_dropped (
        reason  TEXT PRIMARY KEY,
        count   INTEGER NOT NULL
    );
",
    // Issue 31: the bound kept without scanning the queue. Its size is kept by triggers (every
    // insert and delete, from any process), and the eviction order has an index of its own, so
    // a new entry past the bound costs one indexed read and one delete, whatever the queue holds.
    "
    DROP INDEX review_items_by_rank;
    CREATE INDEX review_items_by_eviction ON review_items (decided DESC, priority, last_seen, domain);
    CREATE TABLE review_size (
        id  INTEGER PRIMARY KEY CHECK (id = 1),
        n   INTEGER NOT NULL
    );
    INSERT INTO review_size (id, n) SELECT 1, COUNT(*) FROM review_items;
    CREATE TRIGGER review_items_added AFTER INSERT ON review_items
        BEGIN UPDATE review_size SET n = n + 1 WHERE id = 1; END;
    CREATE TRIGGER review_items_removed AFTER DELETE ON review_items
        BEGIN UPDATE review_size SET n = n - 1 WHERE id = 1; END;
",
    // Issue 31: the units given back to a key in a day under the cap (`StateStore::refund`).
    "
    ALTER TABLE usage ADD COLUMN refunded INTEGER NOT NULL DEFAULT 0;
",
    // Issue 32: signup counts (`state/signups.rs`): per counter (`<scope>:<sha256>`), a ring of
    // 12 five-minute buckets (slots 0..11) and 24 one-hour buckets (12..35); `expires`: when the
    // bucket has left its window, for the bounded clean-up on each count.
    "
    CREATE TABLE signup_buckets (
        counter  TEXT NOT NULL,
        slot     INTEGER NOT NULL,
        bucket   INTEGER NOT NULL,
        count    INTEGER NOT NULL,
        expires  INTEGER NOT NULL,
        PRIMARY KEY (counter, slot)
    );
    CREATE INDEX signup_buckets_by_expiry ON signup_buckets (expires);
",
    // Issue 32, item 4: waves and the busiest (`state/signups.rs`). `signup_new_domains`: per
    // server (`new:<sha256>`), the hashes of the never-seen domains signed up on it and when
    // last; `signup_board`: per board, at most `BOARD_KEPT` values with their count and when.
    "
    CREATE TABLE signup_new_domains (
        server  TEXT NOT NULL,
        domain  TEXT NOT NULL,
        seen    INTEGER NOT NULL,
        PRIMARY KEY (server, domain)
    );
    CREATE INDEX signup_new_domains_by_server ON signup_new_domains (server, seen);
    CREATE INDEX signup_new_domains_by_age ON signup_new_domains (seen);
    CREATE TABLE signup_board (
        board  TEXT NOT NULL,
        value  TEXT NOT NULL,
        count  INTEGER NOT NULL,
        at     INTEGER NOT NULL,
        PRIMARY KEY (board, value)
    );
    CREATE INDEX signup_board_by_count ON signup_board (board, count);
",
    // Issue 46: a burst row is a block of places leased together (`KeyStore::lease`); `at_ms`
    // is its end. A row from before is one place.
    "
    ALTER TABLE burst ADD COLUMN places INTEGER NOT NULL DEFAULT 1;
",
    // Issue 46: a counter every change of a key moves, whoever makes it (the triggers), which
    // the key cache (`versioned_cache.rs`) tags what it read with.
    "
    CREATE TABLE key_changes (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        version  INTEGER NOT NULL
    );
    INSERT INTO key_changes VALUES (1, 0);
    CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys
        BEGIN UPDATE key_changes SET version = version + 1; END;
    CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys
        BEGIN UPDATE key_changes SET version = version + 1; END;
    CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys
        BEGIN UPDATE key_changes SET version = version + 1; END;
",
];
