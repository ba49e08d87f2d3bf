/** SQLite schema of the shadow store, as an ordered list of migrations. */

export interface Migration {
  readonly version: number
  readonly sql: string
}

/**
 * The two full-text indexes (v4), by table name: the live ones and the ones a reindex builds
 * beside them. Contentless (the text lives once, in messages.text) and `detail=none`: they hold
 * rowids only, no positions, a quarter of the v3 size. Phrases are not supported on such tables:
 * `terms.ts` turns every query term into an AND of single tokens (trigrams for `grams`), and
 * substring candidates are checked against the text. Each entry carries its session's scope
 * token (`index-rows.ts`), so a session-scoped query is one index lookup rather than a join.
 */
export function indexTablesSql(words: string, grams: string): string {
  return `
  CREATE VIRTUAL TABLE ${words} USING fts5(
    body, content='', contentless_delete=1, detail=none, tokenize='porter unicode61 remove_diacritics 2'
  );
  CREATE VIRTUAL TABLE ${grams} USING fts5(
    body, content='', contentless_delete=1, detail=none, tokenize='trigram'
  );
`
}

export const INDEX_TABLES_SQL = indexTablesSql('messages_words', 'messages_grams')

/**
 * v5: the days a message's time words refer to, other than its own (days.ts, sqlite/days.ts): rows
 * only for messages that have such words. Keyed by day for the search, by id for deletes.
 */
export const DAYS_TABLE_SQL = `
  CREATE TABLE message_days (
    day INTEGER NOT NULL,
    id  INTEGER NOT NULL,
    PRIMARY KEY (day, id)
  ) WITHOUT ROWID;
  CREATE INDEX message_days_id ON message_days(id);
`

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      CREATE TABLE sessions (
        session_id        TEXT PRIMARY KEY,
        tag               TEXT NOT NULL UNIQUE,
        parent_session_id TEXT,
        fork_seq          INTEGER,
        workspace         TEXT,
        created_at        INTEGER,
        message_count     INTEGER NOT NULL DEFAULT 0,
        last_seq          INTEGER NOT NULL DEFAULT -1,
        first_time        INTEGER,
        last_time         INTEGER
      );
      CREATE INDEX sessions_workspace ON sessions(workspace);

      -- One row per model-visible message of a session, keyed by the dsh log seq.
      CREATE TABLE messages (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL,
        seq         INTEGER NOT NULL,
        shadow_id   TEXT NOT NULL,
        event_type  TEXT NOT NULL,
        role        TEXT NOT NULL,
        source_kind TEXT NOT NULL,
        turn        INTEGER,
        step        INTEGER,
        tool_name   TEXT,
        call_id     TEXT,
        time        INTEGER NOT NULL,
        tokens      INTEGER NOT NULL,
        hash        TEXT NOT NULL,
        event_json  TEXT NOT NULL,
        text        BLOB NOT NULL, -- UTF-8; a BLOB keeps NUL bytes
        elided_by   TEXT,
        UNIQUE (session_id, seq)
      );
      CREATE INDEX messages_time ON messages(session_id, time);

      CREATE TABLE checkpoints (
        checkpoint_id   TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL,
        engine          TEXT NOT NULL,
        status          TEXT NOT NULL,
        trigger         TEXT,
        start_seq       INTEGER,
        summary_seq     INTEGER,
        replace_seq     INTEGER,
        shadowed_seqs   TEXT NOT NULL,
        first_seq       INTEGER,
        last_seq        INTEGER,
        first_shadow_id TEXT,
        last_shadow_id  TEXT,
        time_from       INTEGER,
        time_to         INTEGER,
        message_count   INTEGER NOT NULL,
        shadowed_tokens INTEGER,
        summary_tokens  INTEGER,
        footer          TEXT,
        error           TEXT,
        created_at      INTEGER NOT NULL
      );
      CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at);

      CREATE TABLE recalls (
        id             INTEGER PRIMARY KEY,
        session_id     TEXT NOT NULL,
        seq            INTEGER,
        time           INTEGER NOT NULL,
        kind           TEXT NOT NULL,
        query          TEXT,
        shadow_ids     TEXT NOT NULL,
        checkpoint_ids TEXT NOT NULL
      );
      CREATE INDEX recalls_session ON recalls(session_id, time);

      -- Contentless indexes: the text lives once, in messages.text. v3 layout ("scope" holds the
      -- session tag as a token), replaced by v4; frozen here so old migrations stay what they were.
      CREATE VIRTUAL TABLE messages_words USING fts5(
        body, scope, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2'
      );
      CREATE VIRTUAL TABLE messages_grams USING fts5(
        body, scope, content='', contentless_delete=1, tokenize='trigram'
      );
    `,
  },
  {
    // Retention: a row whose original was dropped keeps its identity and hash (so the log still
    // verifies and reconciliation does not bring it back) but loses its content and index entries.
    version: 2,
    sql: `
      ALTER TABLE messages ADD COLUMN expired_at INTEGER;
      ALTER TABLE checkpoints ADD COLUMN expired_at INTEGER;
      ALTER TABLE checkpoints ADD COLUMN expired_rows INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX messages_elided ON messages(elided_by) WHERE elided_by IS NOT NULL AND expired_at IS NULL;
    `,
  },
  {
    // Search folds a tool call into its result: find one from the other by call id in one lookup.
    // A result carries one call id (indexed on messages); an assistant message may carry several,
    // so each of its ids gets a row in message_calls.
    version: 3,
    sql: `
      CREATE INDEX messages_call ON messages(session_id, call_id) WHERE call_id IS NOT NULL AND role = 'tool';
      CREATE TABLE message_calls (
        session_id TEXT NOT NULL,
        call_id    TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        PRIMARY KEY (session_id, call_id, seq)
      ) WITHOUT ROWID;
      WITH RECURSIVE split(session_id, seq, id, rest) AS (
        SELECT session_id, seq, '', call_id || ' ' FROM messages WHERE role = 'assistant' AND call_id IS NOT NULL
        UNION ALL
        SELECT session_id, seq, substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1) FROM split WHERE rest <> ''
      )
      INSERT OR IGNORE INTO message_calls(session_id, call_id, seq) SELECT session_id, id, seq FROM split WHERE id <> '';
    `,
  },
  {
    // Fast path and size (issue 14). The indexes lose positions and the scope column (the scope
    // token joins the body, index-rows.ts): rebuilt by the store, analyzer_version is reset. The
    // event JSON stops repeating the text (event-json.ts; compact_event is registered by the
    // migration); event_bytes keeps its size as given, which retention budgets count. The rows
    // shrink in place: `vacuum` gives the pages back (and, on a file made before v4, moves it to 16 KB pages).
    version: 4,
    sql: `
      ALTER TABLE messages ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;
      -- a time filter is always applied within sessions: the (session, seq) index bounds it
      DROP INDEX messages_time;
      UPDATE messages SET event_bytes = length(CAST(event_json AS BLOB)), event_json = compact_event(event_json, text) WHERE expired_at IS NULL;
      DROP TABLE messages_words;
      DROP TABLE messages_grams;
      ${INDEX_TABLES_SQL}
      UPDATE meta SET value = '0' WHERE key = 'analyzer_version';
    `,
  },
  {
    // Each message's referred days (issue 11): derived from the stored text and time by
    // referred_days (registered by the migration, days.ts); the FTS tables are untouched.
    version: 5,
    sql: `
      ${DAYS_TABLE_SQL}
      INSERT OR IGNORE INTO message_days(day, id)
        SELECT j.value, m.id FROM messages m, json_each(referred_days(m.text, m.time)) j WHERE m.expired_at IS NULL;
    `,
  },
  {
    // Event JSON format 3 (event-json.ts): new rows store dsh's fixed JSON pieces and the row's
    // own time as single bytes. Rows already stored keep their format (each row says which);
    // the version only keeps older code, which cannot read format 3, from opening the file.
    version: 6,
    sql: `SELECT 1;`,
  },
  {
    // Per-session revisions (backend.ts SessionChanges): every write transaction that changes a
    // session's rows adds 1 to its revision and stamps those rows with it, so a resident index
    // reads what changed since the revision it holds as one index range. Rows stored before
    // carry 0 (a first load reads them all). Added columns with a constant default rewrite nothing.
    version: 7,
    sql: `
      ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN removed_rev INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE messages ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX messages_rev ON messages(session_id, rev);
    `,
  },
]

/**
 * Indexes that change no stored format (code without them reads and writes the file as before):
 * built at a writable open when missing, with no schema version, so older code still opens the
 * file and a read-only open of one without them works (slower where they help).
 */
export const ADDED_INDEXES: ReadonlyArray<{ readonly name: string; readonly sql: string }> = [
  // Retention never drops rows a fork still sees: it asks, per elided row, for the sessions forked
  // from the row's session. Without this index each question scanned every session (20k sessions
  // of one checkpoint each: 18-34 s to list the candidates). Forks are few: partial, like PostgreSQL's.
  { name: 'sessions_parent', sql: 'CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL' },
  // A workspace scope of many sessions counts its messages by their sessions' counters (search's
  // scope size, every wide search): read from this index alone, not a table row per session (8 ms
  // against 19 at 200k sessions of one workspace).
  { name: 'sessions_workspace_count', sql: 'CREATE INDEX IF NOT EXISTS sessions_workspace_count ON sessions(workspace, message_count)' },
]

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version
