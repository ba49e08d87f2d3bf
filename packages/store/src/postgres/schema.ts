/**
 * PostgreSQL schema of the shadow store, as an ordered list of migrations. Every table lives in
 * the store's own schema (`?schema=` of the connection string, default `dsh_shadow`); pg_trgm's
 * operator class is named with the schema the extension lives in (`{trgm}`), wherever that is.
 */

/** The text indexes' pending-list bound, kB (schema v3; PostgreSQL's default is 4096). */
const GIN_PENDING_KB = 128
/** ANALYZE's statistics target of the words column (schema v4; PostgreSQL's default is 100). */
const WORDS_STATISTICS = 1000

export interface PgMigration {
  readonly version: number
  /** Statements run in one transaction; `{trgm}` is replaced by pg_trgm's schema. */
  readonly sql: string
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE sessions (
        session_id        text PRIMARY KEY,
        tag               text NOT NULL UNIQUE,
        parent_session_id text,
        fork_seq          bigint,
        workspace         text,
        created_at        bigint,
        message_count     bigint NOT NULL DEFAULT 0,
        last_seq          bigint NOT NULL DEFAULT -1,
        first_time        bigint,
        last_time         bigint
      );
      CREATE INDEX sessions_workspace ON sessions(workspace);
      CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

      -- One row per model-visible message, keyed by (session, dsh log seq). The id orders rows by
      -- arrival ("newest first" lists). Text and event JSON are bytea: lossless, NUL included
      -- (PostgreSQL text cannot hold NUL); TOAST compresses the long ones.
      CREATE TABLE messages (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id  text NOT NULL,
        seq         bigint NOT NULL,
        shadow_id   text NOT NULL,
        event_type  text NOT NULL,
        role        text NOT NULL,
        source_kind text NOT NULL,
        turn        bigint,
        step        bigint,
        tool_name   text,
        call_id     text,
        time        bigint NOT NULL,
        tokens      bigint NOT NULL,
        hash        text NOT NULL,
        event_json  bytea NOT NULL,
        text        bytea NOT NULL,
        elided_by   text,
        expired_at  bigint,
        -- the analyzer's word lexemes plus the session's scope lexeme (see tokens.ts)
        words       tsvector NOT NULL,
        -- the analyzer's literal anchors, lowercased, for substring search
        grams       text NOT NULL,
        UNIQUE (session_id, seq)
      );
      CREATE INDEX messages_time ON messages(session_id, time);
      CREATE INDEX messages_words ON messages USING gin (words);
      CREATE INDEX messages_grams ON messages USING gin (grams {trgm}.gin_trgm_ops);
      CREATE INDEX messages_elided ON messages(elided_by) WHERE elided_by IS NOT NULL AND expired_at IS NULL;
      CREATE INDEX messages_call ON messages(session_id, call_id) WHERE call_id IS NOT NULL AND role = 'tool';

      -- An assistant message may carry several call ids: one row per id.
      CREATE TABLE message_calls (
        session_id text NOT NULL,
        call_id    text NOT NULL,
        seq        bigint NOT NULL,
        PRIMARY KEY (session_id, call_id, seq)
      );

      CREATE TABLE checkpoints (
        id              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        checkpoint_id   text PRIMARY KEY,
        session_id      text NOT NULL,
        engine          text NOT NULL,
        status          text NOT NULL,
        "trigger"       text,
        start_seq       bigint,
        summary_seq     bigint,
        replace_seq     bigint,
        shadowed_seqs   text NOT NULL,
        first_seq       bigint,
        last_seq        bigint,
        first_shadow_id text,
        last_shadow_id  text,
        time_from       bigint,
        time_to         bigint,
        message_count   bigint NOT NULL,
        shadowed_tokens bigint,
        summary_tokens  bigint,
        footer          text,
        error           text,
        created_at      bigint NOT NULL,
        expired_at      bigint,
        expired_rows    bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at);

      CREATE TABLE recalls (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id     text NOT NULL,
        seq            bigint,
        time           bigint NOT NULL,
        kind           text NOT NULL,
        query          text,
        shadow_ids     text NOT NULL,
        checkpoint_ids text NOT NULL
      );
      CREATE INDEX recalls_session ON recalls(session_id, time);
    `,
  },
  {
    // Bounded newest-first lists (search.ts): each row carries its id bucket, and both text
    // indexes hold it as a second key (btree_gin), so "the newest matches" is answered bucket by
    // bucket from the index instead of by walking the id index or sorting every match; the grams
    // index also holds the session, so a session's substring match is one GIN scan. The words
    // lexemes are now stemmed by the store's own Porter module: reindexed on open.
    version: 2,
    sql: `
      ALTER TABLE messages ADD COLUMN bucket bigint GENERATED ALWAYS AS (id >> 16) STORED;
      -- event JSON is stored without its copy of the text (rows.ts); retention counts the JSON as given
      ALTER TABLE messages ADD COLUMN event_bytes bigint;
      DROP INDEX IF EXISTS messages_words;
      DROP INDEX IF EXISTS messages_grams;
      {text_indexes}
      DELETE FROM meta WHERE key = 'analyzer_version';
    `,
  },
  {
    // Every GIN scan reads the index's whole pending list (rows inserted since its last merge):
    // at the default 4 MB, under steady writes, that is hundreds of pages per scan — ten times a
    // rare term's own cost. A short list keeps each search's scans small; writers merge it more
    // often, in smaller steps.
    version: 3,
    sql: `
      ALTER INDEX IF EXISTS messages_words SET (gin_pending_list_limit = ${GIN_PENDING_KB});
      ALTER INDEX IF EXISTS messages_grams SET (gin_pending_list_limit = ${GIN_PENDING_KB});
    `,
  },
  {
    // A search counts each query word's rows up to 2,000 (visiting up to 2,000 heap rows, ~20 ms
    // at 10M) unless ANALYZE lists the word as common past that (search.ts countTerms). At the
    // default statistics target the list holds 1,000 lexemes, down to ~1% of rows: a word in 0.4%
    // of 10M rows was counted on every search. Ten times the target lists ~6,000, down to ~0.2%
    // (ANALYZE of 10M rows: 15 s instead of ~2). Takes effect at the next ANALYZE (VACUUM, autovacuum).
    version: 4,
    sql: `
      ALTER TABLE messages ALTER COLUMN words SET STATISTICS ${WORDS_STATISTICS};
    `,
  },
  {
    // A workspace is a directory of up to 4,096 characters; a btree key holds ~2.7 kB, so a long
    // non-ASCII path could not be registered (an untyped failure a capture retried forever). Its
    // lookups are equality only (listSessions): a hash index holds any length.
    version: 5,
    sql: `
      DROP INDEX IF EXISTS sessions_workspace;
      CREATE INDEX sessions_workspace ON sessions USING hash (workspace);
    `,
  },
  {
    // Per-session revisions (backend.ts SessionChanges): every write transaction that changes a
    // session's rows adds 1 to its revision (its row lock orders them in commit order) and stamps
    // those rows with it, so a resident index reads what changed since the revision it holds as
    // one index range. Rows stored before carry 0. Columns with a constant default rewrite nothing.
    version: 6,
    sql: `
      ALTER TABLE sessions ADD COLUMN revision bigint NOT NULL DEFAULT 0, ADD COLUMN removed_rev bigint NOT NULL DEFAULT 0;
      ALTER TABLE messages ADD COLUMN rev bigint NOT NULL DEFAULT 0;
      CREATE INDEX messages_rev ON messages(session_id, rev);
    `,
  },
]

/** Rows per id bucket (a power of two: the bucket is id >> BUCKET_BITS). */
export const BUCKET_BITS = 16

/**
 * The two text indexes as the current schema has them: what a bulk load drops and rebuilds
 * (`IF NOT EXISTS`: an open after a killed bulk load restores them).
 */
export const TEXT_INDEXES_SQL = `
  CREATE INDEX IF NOT EXISTS messages_words ON messages USING gin (words, bucket) WITH (gin_pending_list_limit = ${GIN_PENDING_KB});
  CREATE INDEX IF NOT EXISTS messages_grams ON messages USING gin (grams {trgm}.gin_trgm_ops, bucket, session_id) WITH (gin_pending_list_limit = ${GIN_PENDING_KB});`
export const TEXT_INDEX_NAMES = ['messages_words', 'messages_grams'] as const

/** A migration's statements with the extension schemas and shared DDL filled in. */
export function migrationSql(sql: string, trgm: string): string {
  return sql.replaceAll('{text_indexes}', TEXT_INDEXES_SQL).replaceAll('{trgm}', trgm)
}

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.at(-1)!.version

/** The tables of one store (what its size counts). */
export const PG_TABLES = ['meta', 'sessions', 'messages', 'message_calls', 'checkpoints', 'recalls'] as const
